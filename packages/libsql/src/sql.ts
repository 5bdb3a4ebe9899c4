import {
  type DateRange,
  type JsonObject,
  type JsonValue,
  MESSAGE_COLUMNS,
  type MessageCountChange,
  type MessageQuery,
  prefixedTables,
  RESOURCE_COLUMNS,
  THREAD_COLUMNS,
  type ThreadQuery,
  type WorkingMemoryCell,
} from '@engram/core/driver';
import type { InValue } from '@libsql/client';

/** Table names, prefixed so engram can share a database with an application's own tables. */
export const TABLES = {
  ...prefixedTables('engram_'),
  /** Messages per `(thread_id, resource_id)`, kept by every write, so totals cost one row read. */
  messageCounts: 'engram_message_counts',
  /** One vector (`F32_BLOB`) per message and embedding space. */
  vectors: 'engram_message_vectors',
  /** Recent vector deletes (of messages or of a thread), for kept copies of the vectors (`vector-cache.ts`). */
  vectorRemovals: 'engram_vector_removals',
  /** One row: the `seq` of the newest vector write, which never goes back (`vector-cache.ts`). */
  vectorWrites: 'engram_vector_writes',
  /** A view never read: an insert saves a thread's new messages through its trigger. */
  messageBatches: 'engram_message_batches',
  /** Observation logs: one row per `(key, generation)`, the body a JSON string literal. */
  observations: 'engram_observations',
  /** Store-level settings: one JSON object per key (the recorded memory configuration). */
  settings: 'engram_settings',
  /** Turn records: one row per turn, the body a JSON string literal. */
  turns: 'engram_turns',
  /** Backfills a schema upgrade left to do, each with the last message id it has done. */
  backfills: 'engram_backfills',
};

const { threads, messages, resources, messageCounts } = TABLES;

/** One SQL statement with positional arguments. */
export interface Statement {
  sql: string;
  args: InValue[];
  /** At most one row: embedded, read on the calling thread, without a round trip to a worker thread. */
  one?: boolean;
}

/**
 * `IN` a list bound as one JSON array, however long (SQLite caps a statement's parameters); each
 * value is still looked up in the column's index. Lists of rows are bound as arrays of arrays.
 */
export const IN_LIST = 'IN (SELECT value FROM json_each(?))';

/** Element `n` of the row `value` of a `json_each` over a JSON array of arrays. */
const at = (n: number) => `json_extract(value, '$[${n}]')`;

/** `col = excluded.col` for each of `columns` but the first (the key): an upsert's update. */
const replaceAll = (columns: string) =>
  columns.replace(/^\w+, /, '').replace(/\w+/g, (column) => `${column} = excluded.${column}`);

/**
 * The database's clock in epoch ms, read once the statement has the write lock: the time of a
 * write that bumps `updated_at`. `julianday`: older SQLite lacks `unixepoch('subsec')`.
 */
export const NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`;

/** `columns` of the row of `table` with this `id`. */
const byId = (columns: string, table: string, id: string): Statement => ({
  sql: `SELECT ${columns} FROM ${table} WHERE id = ?`,
  args: [id],
  one: true,
});

export const selectThread = (id: string) => byId(THREAD_COLUMNS, threads, id);
export const selectResource = (id: string) => byId(RESOURCE_COLUMNS, resources, id);

/** Resource ids after `after` in id (UTF-8 byte) order, at most `limit`. */
export const resourceIds = (after: string | null, limit: number): Statement => ({
  sql: `SELECT id FROM ${resources} WHERE ?1 IS NULL OR id > ?1 ORDER BY id LIMIT ?2`,
  args: [after, limit],
});

/** Inserts a thread; `replace`: or replaces it, else `rowsAffected` 0 means the id was taken. */
export const insertThread = (row: InValue[], replace: boolean): Statement => ({
  sql: `INSERT INTO ${threads} (${THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO ${replace ? `UPDATE SET ${replaceAll(THREAD_COLUMNS)}` : 'NOTHING'}`,
  args: row,
});

/** Writes a thread's title and metadata and bumps `updated_at`; returns the stored `updated_at`. */
export const updateThreadRow = (id: string, title: string, metadata: string): Statement => ({
  sql: `UPDATE ${threads} SET title = ?, metadata = ?, updated_at = MAX(updated_at, ${NOW_MS}) WHERE id = ?
        RETURNING updated_at`,
  args: [title, metadata, id],
  one: true,
});

/** Bumps `updated_at` of these threads, each to at least the `createdAt` given with it. */
export const touchThreads = (bumps: ReadonlyMap<string, Date | undefined>): Statement => ({
  sql: `UPDATE ${threads} SET updated_at = MAX(updated_at, ${NOW_MS},
          COALESCE((SELECT ${at(1)} FROM json_each(?1) WHERE ${at(0)} = ${threads}.id), 0))
        WHERE id IN (SELECT ${at(0)} FROM json_each(?1))`,
  args: [JSON.stringify([...bumps].map(([id, newest]) => [id, newest?.getTime()]))],
});

/** Removes a thread, its messages and their counts (their vectors go first, by the vector hooks). */
export const deleteThreadStatements = (id: string): Statement[] => [
  { sql: `DELETE FROM ${messages} WHERE thread_id = ?`, args: [id] },
  { sql: `DELETE FROM ${messageCounts} WHERE thread_id = ?`, args: [id] },
  { sql: `DELETE FROM ${threads} WHERE id = ?`, args: [id] },
];

/** Removes a resource row (its working memory and metadata); its threads are deleted before. */
export const deleteResource = (id: string): Statement => ({
  sql: `DELETE FROM ${resources} WHERE id = ?`,
  args: [id],
});

/** In one read: the owners of these threads (`kind` 't') and the places of these messages ('m'). */
export const selectPlaces = (threadIds: string[], messageIds: string[]): Statement => ({
  sql: `SELECT 't' AS kind, id, resource_id, NULL AS thread_id FROM ${threads} WHERE id ${IN_LIST}
        UNION ALL SELECT 'm', id, resource_id, thread_id FROM ${messages} WHERE id ${IN_LIST}`,
  args: [JSON.stringify(threadIds), JSON.stringify(messageIds)],
});

/**
 * Adds each change to its `(thread, resource)` count, then drops the counts that reached zero:
 * only a negative change can bring one there, so without any the second statement is left out.
 */
export function countStatements(changes: readonly MessageCountChange[]): Statement[] {
  const lowered = changes.filter((c) => c.delta < 0).map((c) => c.threadId);
  const add: Statement = {
    sql: `INSERT INTO ${messageCounts} (thread_id, resource_id, n) SELECT ${at(0)}, ${at(1)}, ${at(2)}
          FROM json_each(?) WHERE true ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = n + excluded.n`,
    args: [JSON.stringify(changes.map((c) => [c.threadId, c.resourceId, c.delta]))],
  };
  if (lowered.length === 0) return [add];
  return [
    add,
    {
      sql: `DELETE FROM ${messageCounts} WHERE n = 0 AND thread_id ${IN_LIST}`,
      args: [JSON.stringify(lowered)],
    },
  ];
}

/**
 * Saves new messages of one thread in one statement, through the trigger of
 * `engram_message_batches` (see `saveTrigger`), which refuses the batch with `BATCH_REFUSED` and
 * writes nothing unless the thread is the resource's and every id is new. A write statement takes
 * the write lock before it reads. `rows`: each message's id, role, content, type, `createdAt`.
 */
export const saveMessageBatch = (threadId: string, resourceId: string, rows: InValue[][]): Statement => ({
  sql: `INSERT INTO ${TABLES.messageBatches} (thread_id, resource_id, saved_at, messages) VALUES (?, ?, NULL, ?)`,
  args: [threadId, resourceId, JSON.stringify(rows)],
});

/** The messages among `ids`, or (`remove`) their deletion. */
export const messagesByIds = (ids: string[], remove = false): Statement => ({
  sql: `${remove ? 'DELETE' : `SELECT ${MESSAGE_COLUMNS}`} FROM ${messages} WHERE id ${IN_LIST}`,
  args: [JSON.stringify(ids)],
});

/**
 * The `seq` of the first of the messages an `INSERT … SELECT … FROM json_each(…)` adds, the next
 * ones adding json_each's `key`: one above the highest stored (read once, through its index,
 * before the statement inserts). The keyword index's key (see `keywords.ts`); never updated. The
 * highest comes back after its message is deleted, whose index rows went in the same write.
 */
export const NEXT_SEQ = `(SELECT coalesce(max(seq), 0) + 1 FROM ${messages})`;

/**
 * Upserts messages in one statement, rows (values for `MESSAGE_COLUMNS`) as one JSON array; a
 * new message gets its `seq` (`NEXT_SEQ`), a stored one keeps it.
 */
export const upsertMessages = (rows: InValue[][]): Statement => ({
  sql: `INSERT INTO ${messages} (${MESSAGE_COLUMNS}, seq)
        SELECT ${MESSAGE_COLUMNS.split(', ').map((_, i) => at(i))}, ${NEXT_SEQ} + key
        FROM json_each(?) WHERE true ON CONFLICT (id) DO UPDATE SET ${replaceAll(MESSAGE_COLUMNS)}`,
  args: [JSON.stringify(rows)],
});

/**
 * Creates or updates a resource in one statement, without reading it: working memory and metadata
 * replaced when given, else kept; returns the row as written. With `expected`, a compare-and-set:
 * an existing resource is written only if its working memory is still `expected.value` (`null`:
 * none is).
 */
export const writeResource = (
  id: string,
  now: number,
  change: {
    workingMemory?: string | null;
    metadata?: JsonObject;
    expected?: { value: string | null } | null;
  },
): Statement => ({
  sql: `INSERT INTO ${resources} (${RESOURCE_COLUMNS}) VALUES (?1, ?2, COALESCE(?3, '{}'), ?4, ?4)
        ON CONFLICT (id) DO UPDATE SET working_memory = CASE WHEN ?5 THEN ?2 ELSE working_memory END,
          metadata = COALESCE(?3, metadata), updated_at = ?4
        WHERE ${change.expected === undefined ? 'true' : change.expected ? 'working_memory IS ?6' : 'false'}
        RETURNING ${RESOURCE_COLUMNS}`,
  args: [
    id,
    change.workingMemory ?? null,
    change.metadata ? JSON.stringify(change.metadata) : null,
    now,
    change.workingMemory !== undefined,
    ...(change.expected ? [change.expected.value] : []),
  ],
  one: true,
});

/** A thread's working memory as core reads it: `metadata.workingMemory` if a string, else `NULL`. */
const THREAD_MEMORY = `CASE json_type(metadata, '$.workingMemory') WHEN 'text' THEN json_extract(metadata, '$.workingMemory') END`;

/** The working memory of `cell` as `value`; no row when its thread or resource does not exist. */
export const selectMemory = (cell: WorkingMemoryCell): Statement =>
  cell.scope === 'thread'
    ? byId(`${THREAD_MEMORY} AS value`, threads, cell.threadId)
    : byId('working_memory AS value', resources, cell.resourceId);

/**
 * Writes the working memory of `cell` (a thread's bumps its `updated_at`); with `expected`, a
 * compare-and-set (see `writeResource`). Returns a row when written.
 */
export const writeMemory = (
  cell: WorkingMemoryCell,
  workingMemory: string | null,
  now: number,
  expected?: { value: string | null } | null,
): Statement =>
  cell.scope === 'resource'
    ? writeResource(cell.resourceId, now, { workingMemory, expected })
    : {
        sql: `UPDATE ${threads} SET metadata = json_set(metadata, '$.workingMemory', ?1),
                updated_at = MAX(updated_at, ${NOW_MS})
              WHERE id = ?2${expected ? ` AND ${THREAD_MEMORY} IS ?3` : ''} RETURNING id`,
        args: [workingMemory, cell.threadId, ...(expected ? [expected.value] : [])],
        one: true,
      };

/**
 * One metadata filter key as SQL over `json_each(metadata)` (exact key match, so keys holding
 * `.`, `"` or `$` need no path quoting). Scalars are compared by JSON type and value; objects
 * and arrays are narrowed by type here and compared in JS by core.
 */
function metadataCondition([key, value]: [string, JsonValue]): Statement {
  const atom = typeof value === 'number' || typeof value === 'string';
  const types =
    value === null || typeof value === 'boolean'
      ? `'${value}'`
      : typeof value === 'number'
        ? `'integer', 'real'`
        : `'${typeof value === 'string' ? 'text' : Array.isArray(value) ? 'array' : 'object'}'`;
  return {
    sql: `EXISTS (SELECT 1 FROM json_each(${threads}.metadata) AS m
            WHERE m.key = ? AND m.type IN (${types})${atom ? ' AND m.atom = ?' : ''})`,
    args: atom ? [key, value] : [key],
  };
}

/** True when the metadata filter holds objects or arrays, which are compared in JS. */
export function needsJsFilter(metadata: JsonObject | undefined): boolean {
  return Object.values(metadata ?? {}).some((value) => value !== null && typeof value === 'object');
}

/** `listThreads`: one page (or every matching row when `limit` is undefined), and the count. */
export function listThreadsStatements(
  query: ThreadQuery,
  limit?: { limit: number; offset: number },
): { rows: Statement; count: Statement } {
  const conditions = Object.entries(query.metadata ?? {}).map(metadataCondition);
  if (query.resourceId !== undefined)
    conditions.unshift({ sql: 'resource_id = ?', args: [query.resourceId] });
  conditions.push(...dateConditions(query.dateRange));
  const where = conditions.length > 0 ? `WHERE ${conditions.map((c) => c.sql).join(' AND ')}` : '';
  const args = conditions.flatMap((c) => c.args);
  const column = query.orderBy === 'updatedAt' ? 'updated_at' : 'created_at';
  const count = `SELECT COUNT(*) AS total FROM ${threads} ${where}`;
  return {
    rows: {
      sql: `SELECT ${THREAD_COLUMNS}${limit ? `, (${count}) AS ${PAGE_TOTAL}` : ''} FROM ${threads} ${where}
            ORDER BY ${column} ${query.direction}, id ${query.direction}${limit ? ' LIMIT ? OFFSET ?' : ''}`,
      args: limit ? [...args, ...args, limit.limit, limit.offset] : args,
    },
    count: { sql: count, args, one: true },
  };
}

/** The conditions of a date range on `created_at` (epoch milliseconds). */
function dateConditions(range: DateRange | undefined): { sql: string; args: number[] }[] {
  return (
    [
      [`created_at ${range?.startExclusive ? '>' : '>='} ?`, range?.start],
      [`created_at ${range?.endExclusive ? '<' : '<='} ?`, range?.end],
    ] as const
  ).flatMap(([sql, date]) => (date ? [{ sql, args: [date.getTime()] }] : []));
}

/**
 * The column of a page's rows that carries its total (a scalar subquery, run once), so a page and
 * its total are one statement; the `count` statement beside it is for an empty page.
 */
export const PAGE_TOTAL = 'page_total';

/**
 * The page of `listMessages`, over the `(thread_id, created_at, id)` index, and its total: from
 * the kept counts (one row read, whatever the thread's length) unless a date range filters it.
 */
export function messagePageStatements(
  query: Pick<MessageQuery, 'threadId' | 'resourceId' | 'direction' | 'dateRange'>,
  limit?: { limit: number; offset: number },
): { rows: Statement; count: Statement } {
  const { threadId, resourceId, direction, dateRange: range } = query;
  const scope = `thread_id = ?${resourceId === undefined ? '' : ' AND resource_id = ?'}`;
  const scopeArgs = resourceId === undefined ? [threadId] : [threadId, resourceId];
  const dates = dateConditions(range);
  const where = `WHERE ${[scope, ...dates.map((d) => d.sql)].join(' AND ')}`;
  const args = [...scopeArgs, ...dates.flatMap((d) => d.args)];
  const count =
    dates.length > 0
      ? `SELECT COUNT(*) AS total FROM ${messages} ${where}`
      : `SELECT COALESCE(SUM(n), 0) AS total FROM ${messageCounts} WHERE ${scope}`;
  const countArgs = dates.length > 0 ? args : scopeArgs;
  return {
    rows: {
      sql: `SELECT ${MESSAGE_COLUMNS}${limit ? `, (${count}) AS ${PAGE_TOTAL}` : ''} FROM ${messages} ${where}
            ORDER BY created_at ${direction}, id ${direction}${limit ? ' LIMIT ? OFFSET ?' : ''}`,
      args: limit ? [...countArgs, ...args, limit.limit, limit.offset] : args,
    },
    count: { sql: count, args: countArgs, one: true },
  };
}

/** An include window: the target and the messages around it in its thread (of `resourceId`). */
export function includeWindowStatement(
  window: MessageQuery['include'][number],
  resourceId?: string,
): Statement {
  const scope = resourceId === undefined ? '' : ' AND m.resource_id = ?2';
  const side = (cmp: '<' | '>', dir: MessageQuery['direction'], limit: string) =>
    `SELECT * FROM (SELECT m.* FROM ${messages} AS m, target AS t
       WHERE m.thread_id = t.thread_id${scope}
         AND (m.created_at ${cmp} t.created_at OR (m.created_at = t.created_at AND m.id ${cmp} t.id))
       ORDER BY m.created_at ${dir}, m.id ${dir} LIMIT ${limit})`;
  return {
    sql: `WITH target AS (SELECT thread_id, created_at, id FROM ${messages} AS m WHERE m.id = ?1${scope})
          SELECT m.* FROM ${messages} AS m, target AS t WHERE m.id = t.id
          UNION ALL ${side('<', 'DESC', '?3')}
          UNION ALL ${side('>', 'ASC', '?4')}`,
    args: [window.id, resourceId ?? null, window.withPreviousMessages, window.withNextMessages],
  };
}
