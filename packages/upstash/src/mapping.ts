import * as core from '@engram/core/driver';
import { META } from './layout.ts';

/** A script's reply after `unframe`: strings, nil and nested lists. */
export type Frame = string | null | Frame[];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Reads back what a script's `frame` wrote (lengths in UTF-8 bytes), with web APIs only (edge runtimes). */
export function unframe(reply: unknown): Frame {
  if (typeof reply !== 'string')
    throw new TypeError(`expected a framed string from the script, got ${typeof reply}`);
  const bytes = encoder.encode(reply);
  let at = 0;
  const read = (): Frame => {
    const tag = bytes[at];
    if (tag === 0x5f) {
      at += 1;
      return null;
    }
    const colon = bytes.indexOf(0x3a, at);
    if (colon < 0 || (tag !== 0x24 && tag !== 0x2a)) throw new TypeError('malformed script reply');
    const n = Number(decoder.decode(bytes.subarray(at + 1, colon)));
    at = colon + 1;
    if (tag === 0x24) {
      at += n;
      return decoder.decode(bytes.subarray(at - n, at));
    }
    return Array.from({ length: n }, read);
  };
  const frame = read();
  if (at !== bytes.length) throw new TypeError('malformed script reply: trailing bytes');
  return frame;
}

/** The list inside a frame (throws on anything else). */
export function list(frame: Frame | undefined): Frame[] {
  if (!Array.isArray(frame)) throw new TypeError('expected a list in the script reply');
  return frame;
}

/** The string inside a frame (throws on anything else). */
export function text(frame: Frame | undefined): string {
  if (typeof frame !== 'string') throw new TypeError('expected a string in the script reply');
  return frame;
}

/** The records of a list of hashes, read by `read` (empty hashes left out). */
export function records<T>(frame: Frame | undefined, read: (hash: Frame) => T | null): T[] {
  return list(frame).flatMap((hash) => read(hash) ?? []);
}

/** A flat HGETALL reply as a map of field → value. */
export function fields(frame: Frame): Map<string, string> {
  const flat = list(frame);
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(text(flat[i]), text(flat[i + 1]));
  return map;
}

/** The named fields of a stored hash, each required; `null` for an empty hash. */
function pick<K extends string>(map: Map<string, string>, names: readonly K[]): Record<K, string> | null {
  if (map.size === 0) return null;
  const picked = {} as Record<K, string>;
  for (const name of names) {
    const value = map.get(name);
    if (value === undefined) throw new TypeError(`stored record has no ${name} field`);
    picked[name] = value;
  }
  return picked;
}

/** The metadata of a stored hash, from its `.<key>` fields. */
function metadataOf(map: Map<string, string>): core.JsonObject {
  const metadata: core.JsonObject = {};
  for (const [field, value] of map) {
    if (field.startsWith(META))
      core.defineKey(metadata, field.slice(META.length), JSON.parse(value) as core.JsonValue);
  }
  return metadata;
}

const date = (ms: string) => new Date(Number(ms));

/** A thread hash → `Thread`, or `null` for an empty hash. */
export function toThread(frame: Frame): core.Thread | null {
  const map = fields(frame);
  const h = pick(map, ['id', 'resourceId', 'title', 'createdAt', 'updatedAt']);
  return h && { ...h, metadata: metadataOf(map), createdAt: date(h.createdAt), updatedAt: date(h.updatedAt) };
}

/** A message hash → `Message`, or `null` for an empty hash. */
export function toMessage(frame: Frame): core.Message | null {
  const h = pick(fields(frame), ['id', 'threadId', 'resourceId', 'role', 'type', 'content', 'createdAt']);
  const content = h && (JSON.parse(h.content) as core.JsonValue);
  return h && { ...h, role: h.role as core.MessageRole, content, createdAt: date(h.createdAt) };
}

/** A resource hash → `Resource`, or `null` for an empty hash. */
export function toResource(frame: Frame): core.Resource | null {
  const map = fields(frame);
  const h = pick(map, ['id', 'createdAt', 'updatedAt']);
  const rest = { workingMemory: map.get('workingMemory') ?? null, metadata: metadataOf(map) };
  return h && { ...h, ...rest, createdAt: date(h.createdAt), updatedAt: date(h.updatedAt) };
}

/** Metadata as hash fields: `.key` → the JSON text of the value. */
export function metadataFields(meta: core.JsonObject | undefined): Record<string, string> {
  if (!meta) return {};
  return Object.fromEntries(Object.entries(meta).map(([key, value]) => [META + key, JSON.stringify(value)]));
}

/** A thread as the `createThread` and `saveThread` scripts take it, with its working-memory version. */
export function threadRecord(thread: core.Thread, version: string) {
  const { id, resourceId, title, createdAt, updatedAt } = thread;
  const metadata = metadataFields(thread.metadata);
  return { id, resourceId, title, createdAt: ms(createdAt), updatedAt: ms(updatedAt), version, metadata };
}

/** A message as the scripts write it (content as JSON text). */
export function messageRecord(m: core.Message) {
  const { id, threadId, resourceId, role, type } = m;
  const content = JSON.stringify(m.content);
  return { id, threadId, resourceId, role, type, content, createdAt: ms(m.createdAt) };
}

/** Epoch milliseconds as a script argument. */
export function ms(value: Date): string {
  return String(value.getTime());
}

/** A date range as the `min`/`max` of a `ZRANGE … BYSCORE` over epoch milliseconds (`(` exclusive). */
export function scoreRange(range: core.DateRange | undefined): { min: string; max: string } {
  return {
    min: range?.start ? `${range.startExclusive ? '(' : ''}${ms(range.start)}` : '-inf',
    max: range?.end ? `${range.endExclusive ? '(' : ''}${ms(range.end)}` : '+inf',
  };
}
