import type { DateRange, Page } from './contract.ts';
import type { Direction, JsonObject, JsonValue, Message } from './records.ts';
import { isPlainObject } from './validate.ts';

/**
 * Shared pieces for adapters, so each computes paging, ordering and merges the same way as the
 * reference store.
 */

/** The paging fields of a listing of `total` rows. */
export function pageInfo(total: number, page: number, perPage: number | false): Page {
  return { total, page, perPage, hasMore: perPage === false ? false : (page + 1) * perPage < total };
}

/** Row offset of a page, or 0 when every row is returned. */
export function pageOffset(page: number, perPage: number | false): number {
  return perPage === false ? 0 : page * perPage;
}

/**
 * Compares ids by their UTF-8 bytes: the order of SQLite's BINARY collation, PostgreSQL's
 * `COLLATE "C"`, MongoDB's default string order and Redis lexicographic ranges.
 */
export function compareIds(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Message order: `(createdAt, id)` ascending (of messages, or of anything with their place). */
export function compareMessages(
  a: Pick<Message, 'createdAt' | 'id'>,
  b: Pick<Message, 'createdAt' | 'id'>,
): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || compareIds(a.id, b.id);
}

/** Returns a new array of messages sorted by `(createdAt, id)` in `direction`. */
export function sortMessages(messages: readonly Message[], direction: Direction = 'ASC'): Message[] {
  const sorted = [...messages].sort(compareMessages);
  return direction === 'ASC' ? sorted : sorted.reverse();
}

/** Joins a page with include windows: de-duplicated by id and sorted in `direction`. */
export function mergeMessageLists(lists: readonly Message[][], direction: Direction): Message[] {
  const byId = new Map<string, Message>();
  for (const list of lists) for (const message of list) byId.set(message.id, message);
  return sortMessages([...byId.values()], direction);
}

/** True when `date` lies inside `range` (inclusive bounds unless marked exclusive). */
export function inDateRange(date: Date, range: DateRange | undefined): boolean {
  if (!range) return true;
  const t = date.getTime();
  if (range.start) {
    const s = range.start.getTime();
    if (range.startExclusive ? t <= s : t < s) return false;
  }
  if (range.end) {
    const e = range.end.getTime();
    if (range.endExclusive ? t >= e : t > e) return false;
  }
  return true;
}

/**
 * Shallow merge of metadata: keys of `patch` replace those of `stored`. Never mutates either
 * argument, and keys such as `__proto__` become own properties, never prototypes.
 */
export function shallowMerge(stored: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(stored)) defineKey(out, key, value);
  for (const [key, value] of Object.entries(patch)) defineKey(out, key, value);
  return out;
}

/**
 * Sets an own enumerable property, safe for `__proto__` (the one key whose assignment would
 * reach the prototype; every other key is assigned, which is much faster than defining it).
 */
export function defineKey(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

/** Deep equality of JSON values (object key order ignored). */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** True when every key of `filter` is present in `metadata` with a JSON-equal value. */
export function matchesMetadata(metadata: JsonObject, filter: JsonObject | undefined): boolean {
  if (!filter) return true;
  return Object.entries(filter).every(([k, v]) => Object.hasOwn(metadata, k) && jsonEqual(metadata[k], v));
}

/** One net change to a kept per-(thread, resource) message count. */
export interface MessageCountChange {
  threadId: string;
  resourceId: string;
  delta: number;
}

/**
 * Net changes to kept message counts made by one write, for adapters that keep a count per
 * (thread, resource) so `listMessages` never counts a whole thread: +1 for each message saved
 * into a (thread, resource), −1 for each one it replaces or deletes.
 */
export class MessageCountChanges {
  private readonly deltas = new Map<string, MessageCountChange>();

  /** Adds `delta` to the count of (`threadId`, `resourceId`). */
  add(threadId: string, resourceId: string, delta: number): void {
    const key = JSON.stringify([threadId, resourceId]);
    const entry = this.deltas.get(key) ?? { threadId, resourceId, delta: 0 };
    entry.delta += delta;
    this.deltas.set(key, entry);
  }

  /** The non-zero changes, in a fixed order (so concurrent writers lock count rows alike). */
  changes(): MessageCountChange[] {
    return [...this.deltas.entries()]
      .filter(([, entry]) => entry.delta !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, entry]) => ({ ...entry }));
  }
}

/** `values` in slices of at most `size` (at least 1), in order: one query's worth of ids each. */
export function chunks<T>(values: readonly T[], size: number): T[][] {
  const step = Math.max(1, Math.floor(size));
  const out: T[][] = [];
  for (let at = 0; at < values.length; at += step) out.push(values.slice(at, at + step));
  return out;
}
