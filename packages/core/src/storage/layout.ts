import type { Resource, Thread } from './records.ts';

/**
 * The storage layout the adapters share, described once: the names of the record tables (or
 * collections) before an adapter's prefix, and, for SQL adapters, the record columns and the
 * order of a record's values in them. Dates are given in the adapter's own representation.
 */

/** Base names of the tables every adapter keeps, before its prefix. */
export const RECORD_TABLES = {
  threads: 'threads',
  messages: 'messages',
  resources: 'resources',
  migrations: 'migrations',
  vectorSpace: 'vector_space',
} as const;

/** Table names with an adapter's prefix. */
export type PrefixedTables = { -readonly [K in keyof typeof RECORD_TABLES]: string };

/** `RECORD_TABLES` with `prefix` in front of every name. */
export function prefixedTables(prefix: string): PrefixedTables {
  const entries = Object.entries(RECORD_TABLES).map(([key, name]) => [key, `${prefix}${name}`]);
  return Object.fromEntries(entries) as PrefixedTables;
}

/** SQL columns of a thread row, in the order of `threadValues`. */
export const THREAD_COLUMNS = 'id, resource_id, title, metadata, created_at, updated_at';
/** SQL columns of a message row. */
export const MESSAGE_COLUMNS = 'id, thread_id, resource_id, role, content, type, created_at';
/** SQL columns of a resource row, in the order of `resourceValues`. */
export const RESOURCE_COLUMNS = 'id, working_memory, metadata, created_at, updated_at';

/** A thread's values for `THREAD_COLUMNS`; metadata as JSON text, dates through `date`. */
export function threadValues<D>(
  thread: Thread,
  date: (at: Date) => D,
): [string, string, string, string, D, D] {
  const { id, resourceId, title, metadata, createdAt, updatedAt } = thread;
  return [id, resourceId, title, JSON.stringify(metadata), date(createdAt), date(updatedAt)];
}

/** A resource's values for `RESOURCE_COLUMNS`; metadata as JSON text, dates through `date`. */
export function resourceValues<D>(
  resource: Resource,
  date: (at: Date) => D,
): [string, string | null, string, D, D] {
  const { id, workingMemory, metadata, createdAt, updatedAt } = resource;
  return [id, workingMemory, JSON.stringify(metadata), date(createdAt), date(updatedAt)];
}
