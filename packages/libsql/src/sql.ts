import type {
  DateRange,
  Direction,
  JsonObject,
  JsonValue,
  NormalizedListThreads,
} from '@engram/core/adapter';
import { MESSAGE_COLUMNS, RESOURCE_COLUMNS, THREAD_COLUMNS } from '@engram/core/adapter';
import type { InValue } from '@libsql/client';

/** Table names. Prefixed so engram can share a database with an application's own tables. */
export const TABLES = {
  threads: 'engram_threads',
  messages: 'engram_messages',
  resources: 'engram_resources',
  /** Messages per `(thread_id, resource_id)`, kept by every write, so totals cost one row read. */
  messageCounts: 'engram_message_counts',
  migrations: 'engram_migrations',
  /** One vector (`F32_BLOB`) per message and embedding space. */
  vectors: 'engram_message_vectors',
  /** The one embedding space this database's vectors are in (a single row). */
  vectorSpace: 'engram_vector_space',
  /**
   * A view that is never read: inserting one row (a thread, its resource, a time and the
   * thread's messages as JSON) saves the batch in one statement, through its trigger.
   */
  messageBatches: 'engram_message_batches',
} as const;

const { threads, messages, resources, messageCounts } = TABLES;

/** One SQL statement with positional arguments. */
export interface Statement {
  sql: string;
  args: InValue[];
}

/** Most ids bound in one `IN (…)` list; longer lists are split. */
export const CHUNK = 500;

/** Splits `items` into lists of at most `CHUNK`. */
export function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** `?, ?, ?` for `n` values. */
export function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}

export const selectThread = (id: string): Statement => ({
  sql: `SELECT ${THREAD_COLUMNS} FROM ${threads} WHERE id = ?`,
  args: [id],
});

export const upsertThread = (row: InValue[]): Statement => ({
  sql: `INSERT INTO ${threads} (${THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id, title = excluded.title,
          metadata = excluded.metadata, created_at = excluded.created_at, updated_at = excluded.updated_at`,
  args: row,
});

/** Inserts a thread unless its id exists; `rowsAffected` 0 means the id was taken. */
export const insertThread = (row: InValue[]): Statement => ({
  sql: `INSERT INTO ${threads} (${THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  args: row,
});

/**
 * The database's clock in epoch milliseconds, read as the statement runs, after it has the
 * write lock: the time of a write that bumps a thread's `updated_at` (core's `bumpedUpdatedAt`).
 * `julianday` rather than `unixepoch('subsec')`, which older SQLite lacks.
 */
export const NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`;

/** Writes a thread's title and metadata and bumps `updated_at`; returns the stored `updated_at`. */
export const updateThreadRow = (id: string, title: string, metadata: string): Statement => ({
  sql: `UPDATE ${threads} SET title = ?, metadata = ?, updated_at = MAX(updated_at, ${NOW_MS}) WHERE id = ?
        RETURNING updated_at`,
  args: [title, metadata, id],
});

/**
 * Bumps `updated_at` of the threads `ids`, to at least the `createdAt` (epoch ms) of the
 * messages written into each (`newest`: thread id → ms; see core's `bumpedUpdatedAt`).
 */
export const touchThreads = (ids: string[], newest: Map<string, number>): Statement => ({
  sql: `UPDATE ${threads} SET updated_at = MAX(updated_at, ${NOW_MS}, COALESCE(
          (SELECT json_extract(value, '$[1]') FROM json_each(?) WHERE json_extract(value, '$[0]') = ${threads}.id),
          0))
        WHERE id IN (${placeholders(ids.length)})`,
  args: [JSON.stringify(ids.flatMap((id) => (newest.has(id) ? [[id, newest.get(id)]] : []))), ...ids],
});

/**
 * In one read: the threads among `threadIds` (`kind` 't': id, resource) and the messages among
 * `messageIds` that exist (`kind` 'm': id, resource, thread).
 */
export const selectOwnersAndMessages = (threadIds: string[], messageIds: string[]): Statement => ({
  sql: `SELECT 't' AS kind, id, resource_id, NULL AS thread_id FROM ${threads} WHERE id IN (${placeholders(threadIds.length)})
        UNION ALL
        SELECT 'm', id, resource_id, thread_id FROM ${messages} WHERE id IN (${placeholders(messageIds.length)})`,
  args: [...threadIds, ...messageIds],
});

export const selectThreadOwners = (ids: string[]): Statement => ({
  sql: `SELECT id, resource_id FROM ${threads} WHERE id IN (${placeholders(ids.length)})`,
  args: ids,
});

export const deleteThreadStatements = (id: string): Statement[] => [
  { sql: `DELETE FROM ${messages} WHERE thread_id = ?`, args: [id] },
  { sql: `DELETE FROM ${messageCounts} WHERE thread_id = ?`, args: [id] },
  { sql: `DELETE FROM ${threads} WHERE id = ?`, args: [id] },
];

/** Adds each `delta` to the message count of its `(thread, resource)` pair, in one statement. */
export const addToMessageCounts = (
  changes: { threadId: string; resourceId: string; delta: number }[],
): Statement => ({
  sql: `INSERT INTO ${messageCounts} (thread_id, resource_id, n) VALUES ${changes.map(() => '(?, ?, ?)').join(', ')}
        ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = n + excluded.n`,
  args: changes.flatMap(({ threadId, resourceId, delta }) => [threadId, resourceId, delta]),
});

/** Drops the count rows that reached zero for these threads. */
export const dropEmptyMessageCounts = (threadIds: string[]): Statement => ({
  sql: `DELETE FROM ${messageCounts} WHERE n = 0 AND thread_id IN (${placeholders(threadIds.length)})`,
  args: threadIds,
});

/**
 * Saves new messages of one thread and one resource in one statement (the trigger of
 * `engram_message_batches`, migrations 5 and 6): bumps the thread's `updated_at` (to the
 * database's clock, never backwards, at least the newest `createdAt`) if it exists and belongs
 * to the resource, inserts the messages and adds them to the kept count. A write statement takes
 * the write lock before it reads, so nothing can slip in between the check and the writes. When
 * the thread is missing or another resource's, or an id is stored already, the trigger raises
 * `BATCH_REFUSED` (migrations.ts) and the statement leaves nothing behind.
 */
export const saveMessageBatch = (
  threadId: string,
  resourceId: string,
  messages: [id: string, role: string, content: string, type: string, createdAt: number][],
): Statement => ({
  sql: `INSERT INTO ${TABLES.messageBatches} (thread_id, resource_id, saved_at, messages) VALUES (?, ?, NULL, ?)`,
  args: [threadId, resourceId, JSON.stringify(messages)],
});

export const selectMessagesByIds = (ids: string[]): Statement => ({
  sql: `SELECT ${MESSAGE_COLUMNS} FROM ${messages} WHERE id IN (${placeholders(ids.length)})
        ORDER BY created_at, id`,
  args: ids,
});

export const selectMessageThreads = (ids: string[]): Statement => ({
  sql: `SELECT id, thread_id, resource_id FROM ${messages} WHERE id IN (${placeholders(ids.length)})`,
  args: ids,
});

export const upsertMessage = (row: InValue[]): Statement => ({
  sql: `INSERT INTO ${messages} (${MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, resource_id = excluded.resource_id,
          role = excluded.role, content = excluded.content, type = excluded.type,
          created_at = excluded.created_at`,
  args: row,
});

/** Upserts several messages in one statement (rows in order, so a repeated id ends as its last row). */
export const upsertMessages = (rows: InValue[][]): Statement => ({
  sql: `INSERT INTO ${messages} (${MESSAGE_COLUMNS}) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}
        ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, resource_id = excluded.resource_id,
          role = excluded.role, content = excluded.content, type = excluded.type,
          created_at = excluded.created_at`,
  args: rows.flat(),
});

export const deleteMessagesByIds = (ids: string[]): Statement => ({
  sql: `DELETE FROM ${messages} WHERE id IN (${placeholders(ids.length)})`,
  args: ids,
});

export const selectResource = (id: string): Statement => ({
  sql: `SELECT ${RESOURCE_COLUMNS} FROM ${resources} WHERE id = ?`,
  args: [id],
});

export const upsertResource = (row: InValue[]): Statement => ({
  sql: `INSERT INTO ${resources} (${RESOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET working_memory = excluded.working_memory,
          metadata = excluded.metadata, updated_at = excluded.updated_at`,
  args: row,
});

/**
 * Creates or updates a resource in one statement without reading it first: `working_memory` is
 * replaced when `replace` is true (kept otherwise), metadata kept, `updated_at` set; returns the
 * row as stored when `returning`.
 */
export const writeResourceMemory = (
  id: string,
  workingMemory: string | null,
  replace: boolean,
  now: number,
  returning: boolean,
): Statement => ({
  sql: `INSERT INTO ${resources} (${RESOURCE_COLUMNS}) VALUES (?, ?, '{}', ?, ?)
        ON CONFLICT (id) DO UPDATE SET
          working_memory = CASE WHEN ? THEN excluded.working_memory ELSE working_memory END,
          updated_at = excluded.updated_at${returning ? `\n        RETURNING ${RESOURCE_COLUMNS}` : ''}`,
  args: [id, workingMemory, now, now, replace ? 1 : 0],
});

/**
 * Writes a resource's working memory only if it is still what was read: `expected` when the row
 * existed (`existed`; a plain `UPDATE`, the usual case), else no row at all (then it is created).
 * `rowsAffected` is 1 when written.
 */
export const compareAndSetResourceMemory = (
  id: string,
  existed: boolean,
  expected: string | null,
  workingMemory: string | null,
  now: number,
): Statement =>
  existed
    ? {
        sql: `UPDATE ${resources} SET working_memory = ?, updated_at = ? WHERE id = ? AND working_memory IS ?`,
        args: [workingMemory, now, id, expected],
      }
    : {
        sql: `INSERT INTO ${resources} (${RESOURCE_COLUMNS}) VALUES (?, ?, '{}', ?, ?) ON CONFLICT (id) DO NOTHING`,
        args: [id, workingMemory, now, now],
      };

/** One resource's working memory, nothing else. */
export const selectResourceMemory = (id: string): Statement => ({
  sql: `SELECT working_memory FROM ${resources} WHERE id = ?`,
  args: [id],
});

/** True for JSON values SQL can compare directly (everything but objects and arrays). */
export function isScalar(value: JsonValue): value is string | number | boolean | null {
  return value === null || typeof value !== 'object';
}

/**
 * One metadata filter key as SQL over `json_each(metadata)` (exact key match, so keys holding
 * `.`, `"` or `$` need no path quoting). Scalars are compared by JSON type and value; objects
 * and arrays are narrowed by type here and compared in JS by the caller.
 */
function metadataCondition(key: string, value: JsonValue): { sql: string; args: InValue[] } {
  const each = `SELECT 1 FROM json_each(${threads}.metadata) AS m WHERE m.key = ?`;
  if (value === null) return { sql: `EXISTS (${each} AND m.type = 'null')`, args: [key] };
  if (typeof value === 'boolean') {
    return { sql: `EXISTS (${each} AND m.type = '${value ? 'true' : 'false'}')`, args: [key] };
  }
  if (typeof value === 'number') {
    return { sql: `EXISTS (${each} AND m.type IN ('integer', 'real') AND m.atom = ?)`, args: [key, value] };
  }
  if (typeof value === 'string') {
    return { sql: `EXISTS (${each} AND m.type = 'text' AND m.atom = ?)`, args: [key, value] };
  }
  const type = Array.isArray(value) ? 'array' : 'object';
  return { sql: `EXISTS (${each} AND m.type = '${type}')`, args: [key] };
}

/** `WHERE` clause and arguments for `listThreads` filters. */
export function threadFilter(args: NormalizedListThreads): { where: string; args: InValue[] } {
  const clauses: string[] = [];
  const values: InValue[] = [];
  if (args.resourceId !== undefined) {
    clauses.push('resource_id = ?');
    values.push(args.resourceId);
  }
  for (const [key, value] of Object.entries(args.metadata ?? {})) {
    const condition = metadataCondition(key, value);
    clauses.push(condition.sql);
    values.push(...condition.args);
  }
  return { where: clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '', args: values };
}

/** True when the metadata filter holds objects or arrays, which are compared in JS. */
export function needsJsFilter(metadata: JsonObject | undefined): boolean {
  return Object.values(metadata ?? {}).some((value) => !isScalar(value));
}

/** Thread listing: one page (or every matching row when `limit` is undefined). */
export function listThreadsStatements(
  args: NormalizedListThreads,
  limit?: { limit: number; offset: number },
): { rows: Statement; count: Statement } {
  const filter = threadFilter(args);
  const column = args.orderBy === 'updatedAt' ? 'updated_at' : 'created_at';
  const order = `ORDER BY ${column} ${args.direction}, id ${args.direction}`;
  const paging = limit ? ' LIMIT ? OFFSET ?' : '';
  return {
    rows: {
      sql: `SELECT ${THREAD_COLUMNS} FROM ${threads} ${filter.where} ${order}${paging}`,
      args: limit ? [...filter.args, limit.limit, limit.offset] : filter.args,
    },
    count: { sql: `SELECT COUNT(*) AS total FROM ${threads} ${filter.where}`, args: filter.args },
  };
}

function dateConditions(range: DateRange | undefined, column: string): { sql: string[]; args: InValue[] } {
  const sql: string[] = [];
  const args: InValue[] = [];
  if (range?.start) {
    sql.push(`${column} ${range.startExclusive ? '>' : '>='} ?`);
    args.push(range.start.getTime());
  }
  if (range?.end) {
    sql.push(`${column} ${range.endExclusive ? '<' : '<='} ?`);
    args.push(range.end.getTime());
  }
  return { sql, args };
}

/**
 * The page of `listMessages`, over the `(thread_id, created_at, id)` index, and its total: from
 * the kept counts (one row read, whatever the thread's length) unless a date range filters it.
 */
export function messagePageStatements(args: {
  threadId: string;
  resourceId?: string;
  direction: Direction;
  dateRange?: DateRange;
  limit?: { limit: number; offset: number };
}): { rows: Statement; count: Statement } {
  const clauses = ['thread_id = ?'];
  const values: InValue[] = [args.threadId];
  if (args.resourceId !== undefined) {
    clauses.push('resource_id = ?');
    values.push(args.resourceId);
  }
  const scope = clauses.join(' AND ');
  const scopeArgs = [...values];
  const dates = dateConditions(args.dateRange, 'created_at');
  clauses.push(...dates.sql);
  values.push(...dates.args);
  const where = `WHERE ${clauses.join(' AND ')}`;
  const paging = args.limit ? ' LIMIT ? OFFSET ?' : '';
  const count: Statement =
    dates.sql.length > 0
      ? { sql: `SELECT COUNT(*) AS total FROM ${messages} ${where}`, args: values }
      : { sql: `SELECT COALESCE(SUM(n), 0) AS total FROM ${messageCounts} WHERE ${scope}`, args: scopeArgs };
  return {
    rows: {
      sql: `SELECT ${MESSAGE_COLUMNS} FROM ${messages} ${where}
            ORDER BY created_at ${args.direction}, id ${args.direction}${paging}`,
      args: args.limit ? [...values, args.limit.limit, args.limit.offset] : values,
    },
    count,
  };
}

/**
 * An include window: the target message, up to `before` messages before it and `after` after it
 * in the target's own thread (all restricted to `resourceId` when given), in one statement.
 */
export function includeWindowStatement(window: {
  id: string;
  before: number;
  after: number;
  resourceId?: string;
}): Statement {
  const scoped = window.resourceId !== undefined;
  const scope = scoped ? ' AND m.resource_id = ?' : '';
  const scopeArgs: InValue[] = scoped ? [window.resourceId as string] : [];
  const cols = MESSAGE_COLUMNS.split(', ')
    .map((c) => `m.${c}`)
    .join(', ');
  const side = (cmp: '<' | '>', dir: Direction) =>
    `SELECT * FROM (SELECT ${cols} FROM ${messages} AS m, target AS t
       WHERE m.thread_id = t.thread_id${scope}
         AND (m.created_at ${cmp} t.created_at OR (m.created_at = t.created_at AND m.id ${cmp} t.id))
       ORDER BY m.created_at ${dir}, m.id ${dir} LIMIT ?)`;
  return {
    sql: `WITH target AS (SELECT thread_id, created_at, id FROM ${messages} AS m WHERE m.id = ?${scope})
          SELECT ${cols} FROM ${messages} AS m, target AS t WHERE m.id = t.id
          UNION ALL ${side('<', 'DESC')}
          UNION ALL ${side('>', 'ASC')}`,
    args: [window.id, ...scopeArgs, ...scopeArgs, window.before, ...scopeArgs, window.after],
  };
}
