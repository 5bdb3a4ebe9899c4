import type { JsonObject, JsonValue, Message, MessageRole, Resource, Thread } from '@engram/core/adapter';
import { threadValues } from '@engram/core/adapter';

/** A `threads` row as `pg` returns it (jsonb parsed, timestamptz as `Date`). */
export interface ThreadRow {
  id: string;
  resource_id: string;
  title: string;
  metadata: JsonObject;
  created_at: Date;
  updated_at: Date;
}

/** A `messages` row as `pg` returns it. */
export interface MessageRow {
  id: string;
  thread_id: string;
  resource_id: string;
  role: string;
  content: JsonValue;
  type: string;
  created_at: Date;
}

/** A `resources` row as `pg` returns it. */
export interface ResourceRow {
  id: string;
  working_memory: string | null;
  metadata: JsonObject;
  created_at: Date;
  updated_at: Date;
}

export function toThread(row: ThreadRow): Thread {
  return {
    id: row.id,
    resourceId: row.resource_id,
    title: row.title,
    metadata: row.metadata,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    threadId: row.thread_id,
    resourceId: row.resource_id,
    role: row.role as MessageRole,
    content: row.content,
    type: row.type,
    createdAt: row.created_at,
  };
}

export function toResource(row: ResourceRow): Resource {
  return {
    id: row.id,
    workingMemory: row.working_memory,
    metadata: row.metadata,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * A `Date` as a `timestamptz` literal in UTC (`2024-01-02T03:04:05.678Z`; outside years 1 to
 * 9999 `+12345-01-02T03:04:05.678+00:00`, with ` BC` for years before 1). Independent of the process time zone, whose historical offsets with seconds
 * (local mean time before 1900) the driver's own formatting would truncate.
 */
export function timestamp(date: Date): string {
  const year = date.getUTCFullYear();
  // Years 1 to 9999: the ISO form, in UTC (`Z`), is the same instant, and cheaper to build.
  if (year >= 1 && year <= 9999) return date.toISOString();
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const era = year < 1 ? ' BC' : '';
  return `${pad(year < 1 ? 1 - year : year, 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(
    date.getUTCHours(),
  )}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)}+00:00${era}`;
}

/** The earliest instant a PostgreSQL `timestamptz` holds: 4714-11-24 00:00 UTC BC. */
const PG_MIN_TIMESTAMP_MS = Date.UTC(-4713, 10, 24);

/**
 * A `dateRange` bound as a `timestamptz` parameter. Every valid `Date` is a valid bound: one
 * earlier than PostgreSQL can store becomes `-infinity`, which compares below every stored value
 * exactly as the date itself would (the latest JS date, in 275760, is within PostgreSQL's range).
 */
export function boundTimestamp(date: Date): string {
  return date.getTime() < PG_MIN_TIMESTAMP_MS ? '-infinity' : timestamp(date);
}

/** Like `timestamp`, passing `null` and `undefined` through as SQL NULL. */
export function optionalTimestamp(date: Date | undefined | null): string | null {
  return date ? timestamp(date) : null;
}

/** The parameters of `sql.upsertThread`. */
export function threadParams(thread: Thread): unknown[] {
  return threadValues(thread, timestamp);
}

/** The parallel arrays of `sql.upsertMessages`. */
export function messageArrays(messages: readonly Message[]): unknown[] {
  return [
    messages.map((m) => m.id),
    messages.map((m) => m.threadId),
    messages.map((m) => m.resourceId),
    messages.map((m) => m.role),
    messages.map((m) => JSON.stringify(m.content)),
    messages.map((m) => m.type),
    messages.map((m) => timestamp(m.createdAt)),
  ];
}

/** A copy of a record as returned to callers, so later changes to the input never leak in. */
export function copy<T>(value: T): T {
  return structuredClone(value);
}
