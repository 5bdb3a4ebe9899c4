import type { Message, Thread } from '@engram/core/driver';
import { compareIds, threadValues } from '@engram/core/driver';

/**
 * A `Date` as a `timestamptz` literal in UTC (ISO for years 1 to 9999, else `+12345-01-02T…+00:00`,
 * ` BC` before year 1), whatever the process time zone, whose historical offsets with seconds
 * (local mean time before 1900) the driver's own formatting would truncate.
 */
export function timestamp(date: Date): string {
  const year = date.getUTCFullYear();
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
 * A `dateRange` bound as a `timestamptz`: one earlier than PostgreSQL can store is `-infinity`,
 * below every stored value as the date itself would be (the latest JS date fits PostgreSQL's range).
 */
export function boundTimestamp(date: Date): string {
  return date.getTime() < PG_MIN_TIMESTAMP_MS ? '-infinity' : timestamp(date);
}

/** The parameters of the thread inserts (`THREAD_COLUMNS`). */
export const threadParams = (thread: Thread) => threadValues(thread, timestamp);

/**
 * The parallel arrays (`$1`–`$7`) of the statements that write messages, in id order: the order
 * every writer takes message locks in, so concurrent writers queue up instead of deadlocking.
 */
export function messageArrays(messages: readonly Message[]): unknown[] {
  const sorted = [...messages].sort((a, b) => compareIds(a.id, b.id));
  return [
    sorted.map((m) => m.id),
    sorted.map((m) => m.threadId),
    sorted.map((m) => m.resourceId),
    sorted.map((m) => m.role),
    sorted.map((m) => JSON.stringify(m.content)),
    sorted.map((m) => m.type),
    sorted.map((m) => timestamp(m.createdAt)),
  ];
}
