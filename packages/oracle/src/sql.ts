import * as core from '@engram/core/driver';
import {
  isStorableDate,
  MIN_TIMESTAMP,
  TIMESTAMP_FORMAT,
  textBind,
  toTimestampText,
  workingMemoryColumns,
} from './mapping.ts';
import type { OracleBinds, OracleDbType } from './oracledb.ts';

/**
 * A statement for `connection.execute(sql, binds)`, as the pure functions below build them:
 * identifiers come only from the validated table prefix; every value is a bind.
 */
export interface Statement {
  sql: string;
  binds: OracleBinds;
}

/** How metadata is stored: the `JSON` type (21c and later) or a `CLOB` checked `IS JSON`. */
export type JsonStorage = 'json' | 'clob';

/** The table names derived from a prefix (unquoted, so Oracle upper-cases them). */
export interface TableNames extends core.PrefixedTables {
  prefix: string;
  /** Message vectors for semantic recall (23ai), and the recorded embedding space (one row). */
  vectors: string;
  vectorSpace: string;
  /** Observation logs for observational memory, one row per (log_key, generation). */
  observations: string;
  /** Store-level settings, one row per key (the recorded memory configuration). */
  settings: string;
  /** Turn records, one row per turn. */
  turns: string;
  /** The keyword index: postings (message, term, count) and each message's term count. */
  keywords: string;
  keywordCounts: string;
  /** Backfills to run at the next open, one row each (the keyword index's, after `keywords: false`). */
  backfills: string;
}

/** What statement builders need to know about the database. */
export interface Dialect {
  names: TableNames;
  json: JsonStorage;
  /** `oracledb.DB_TYPE_CLOB` and `DB_TYPE_VECTOR`, for long text and `Float32Array` binds. */
  clobType: OracleDbType;
  vectorType: OracleDbType;
  /** True when the server has the `VECTOR` type (23ai and later) and the vector tables exist. */
  vectors: boolean;
}

/** Oracle allows at most 1,000 expressions in an `IN` list (ORA-01795); callers chunk to this. */
export const MAX_IN_LIST = 1000;

const TS = `'${TIMESTAMP_FORMAT}'`;

/** Table names for a prefix: a letter, then at most 29 letters, digits or `_` (unquoted identifiers). */
export function tableNames(prefix: string): TableNames {
  if (typeof prefix !== 'string' || !/^[A-Za-z][A-Za-z0-9_]{0,29}$/.test(prefix)) {
    throw new core.MemoryError(
      'INVALID_ARGUMENT',
      `oracle: tablePrefix must be a letter followed by letters, digits or _ (at most 30 characters), got ${JSON.stringify(prefix)}`,
      { adapter: 'oracle' },
    );
  }
  const p = prefix.toLowerCase();
  return {
    prefix: p,
    ...core.prefixedTables(p),
    vectors: `${p}message_vectors`,
    observations: `${p}observations`,
    settings: `${p}settings`,
    turns: `${p}turns`,
    keywords: `${p}message_terms`,
    keywordCounts: `${p}message_term_counts`,
    backfills: `${p}backfills`,
  };
}

/** Run on every new session of a pool the store creates: ids in binary order, as `compareIds`. */
export const SESSION_SETUP: Statement = {
  sql: 'ALTER SESSION SET NLS_SORT = BINARY NLS_COMP = BINARY',
  binds: {},
};

/** `TO_TIMESTAMP(:name, 'YYYY-MM-DD"T"HH24:MI:SS.FF3')`. */
export const timestampBind = (name: string) => `TO_TIMESTAMP(:${name}, ${TS})`;

/** `TO_CHAR(column, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') AS <alias>`: a date as UTC text. */
const timestampText = (column: string, alias: string) => `TO_CHAR(${column}, ${TS}) AS ${alias}`;

/** A JSON value as a text bind (see `textBind`). */
const jsonBind = (d: Dialect, value: core.JsonValue) => textBind(JSON.stringify(value), d.clobType);

/** `:i0, :i1, …` plus the binds, for an `IN` list of at most 1,000 values. */
export function inList(prefix: string, values: readonly string[]): { sql: string; binds: OracleBinds } {
  if (values.length === 0 || values.length > MAX_IN_LIST) {
    throw new Error(`an IN list holds 1 to ${MAX_IN_LIST} values, got ${values.length}`);
  }
  const names = values.map((_, i) => `${prefix}${i}`);
  return {
    sql: `:${names.join(', :')}`,
    binds: Object.fromEntries(names.map((name, i) => [name, values[i]!])),
  };
}

/** Splits `values` into chunks that fit one `IN` list. */
export function chunks<T>(values: readonly T[], size = MAX_IN_LIST): T[][] {
  return core.chunks(values, size);
}

/** The select list of a row with `metadata` and both dates (see `ThreadRow`, `ResourceRow`). */
function recordColumns(d: Dialect, alias: 't' | 'r', columns: string): string {
  const metadata =
    d.json === 'json' ? `JSON_SERIALIZE(${alias}.metadata RETURNING CLOB)` : `${alias}.metadata`;
  return `${columns}, ${metadata} AS metadata, ${timestampText(`${alias}.created_at`, 'created_at_text')}, ${timestampText(`${alias}.updated_at`, 'updated_at_text')}`;
}

/** One thread by id; with `forUpdate`, row-locked until the transaction ends. */
export function selectThread(d: Dialect, threadId: string, forUpdate = false): Statement {
  const columns = recordColumns(d, 't', 't.id, t.resource_id, t.title');
  return {
    sql: `SELECT ${columns} FROM ${d.names.threads} t WHERE t.id = :thread_id${forUpdate ? ' FOR UPDATE' : ''}`,
    binds: { thread_id: threadId },
  };
}

function threadBinds(d: Dialect, thread: core.Thread): OracleBinds {
  return {
    thread_id: thread.id,
    resource_id: thread.resourceId,
    title: textBind(thread.title, d.clobType),
    metadata: jsonBind(d, thread.metadata),
    created_at: toTimestampText(thread.createdAt, 'thread.createdAt'),
    updated_at: toTimestampText(thread.updatedAt, 'thread.updatedAt'),
  };
}

/** Upsert of a whole thread by id (also how a thread read under its row lock is written back). */
export function upsertThread(d: Dialect, thread: core.Thread): Statement {
  return {
    sql: `MERGE INTO ${d.names.threads} t
USING (SELECT :thread_id AS id FROM dual) s
ON (t.id = s.id)
WHEN MATCHED THEN UPDATE SET t.resource_id = :resource_id, t.title = :title, t.metadata = :metadata,
  t.created_at = ${timestampBind('created_at')}, t.updated_at = ${timestampBind('updated_at')}
WHEN NOT MATCHED THEN INSERT (id, resource_id, title, metadata, created_at, updated_at)
  VALUES (s.id, :resource_id, :title, :metadata, ${timestampBind('created_at')}, ${timestampBind('updated_at')})`,
    binds: threadBinds(d, thread),
  };
}

/**
 * Inserts a new thread: insert-only, so a taken id fails with ORA-00001 (unique constraint)
 * and nothing changes, also when a concurrent session inserted it first.
 */
export function insertThread(d: Dialect, thread: core.Thread): Statement {
  return {
    sql: `INSERT INTO ${d.names.threads} (id, resource_id, title, metadata, created_at, updated_at)
VALUES (:thread_id, :resource_id, :title, :metadata, ${timestampBind('created_at')}, ${timestampBind('updated_at')})`,
    binds: threadBinds(d, thread),
  };
}

/** Deletes a thread; its messages (and their vectors) go with it: the foreign keys cascade. */
export function deleteThread(d: Dialect, threadId: string): Statement {
  return { sql: `DELETE FROM ${d.names.threads} WHERE id = :thread_id`, binds: { thread_id: threadId } };
}

export function deleteResource(d: Dialect, resourceId: string): Statement {
  return {
    sql: `DELETE FROM ${d.names.resources} WHERE id = :resource_id`,
    binds: { resource_id: resourceId },
  };
}

/** Paging of a listing (core's `pageLimit`): rows `[offset, offset + limit)`, or every row. */
export type Paging = { offset: number; limit: number } | undefined;

/** The `OFFSET … FETCH NEXT` clause of `paging`, its binds added to `binds`. */
function rowLimit(paging: Paging, binds: OracleBinds): string {
  if (!paging) return '';
  Object.assign(binds, { row_offset: paging.offset, row_limit: paging.limit });
  return ' OFFSET :row_offset ROWS FETCH NEXT :row_limit ROWS ONLY';
}

/** Filters of a thread listing: optional resource, optional date range on `createdAt`. */
export type ThreadFilter = Pick<core.ThreadQuery, 'resourceId' | 'dateRange'>;

/** The `WHERE` clause of a thread listing (metadata is matched afterwards, by core). */
function threadWhere({ resourceId, dateRange }: ThreadFilter): Statement {
  const binds: OracleBinds = {};
  const conditions: string[] = [];
  if (resourceId !== undefined) {
    conditions.push('t.resource_id = :resource_id');
    binds.resource_id = resourceId;
  }
  conditions.push(...dateConditions('t', dateRange, binds));
  return { sql: conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '', binds };
}

export function countThreads(d: Dialect, filter: ThreadFilter): Statement {
  const where = threadWhere(filter);
  return { sql: `SELECT COUNT(*) AS total FROM ${d.names.threads} t${where.sql}`, binds: where.binds };
}

/** A page of threads ordered by `orderBy` then id, both in `direction`. */
export function listThreads(
  d: Dialect,
  query: ThreadFilter & { orderBy: 'createdAt' | 'updatedAt'; direction: core.Direction },
  paging: Paging,
): Statement {
  const where = threadWhere(query);
  const column = query.orderBy === 'createdAt' ? 't.created_at' : 't.updated_at';
  const dir = query.direction === 'ASC' ? 'ASC' : 'DESC';
  const limit = rowLimit(paging, where.binds);
  const columns = recordColumns(d, 't', 't.id, t.resource_id, t.title');
  return {
    sql: `SELECT ${columns} FROM ${d.names.threads} t${where.sql} ORDER BY ${column} ${dir}, t.id ${dir}${limit}`,
    binds: where.binds,
  };
}

/** Where the listed threads (id, resource) or messages (id, thread, resource) stand, row-locked. */
export function selectForUpdate(
  d: Dialect,
  table: 'threads' | 'messages',
  ids: readonly string[],
): Statement {
  const list = inList(table[0] as string, ids);
  const columns = table === 'threads' ? 'id, resource_id' : 'id, thread_id, resource_id';
  return {
    sql: `SELECT ${columns} FROM ${d.names[table]} WHERE id IN (${list.sql}) FOR UPDATE`,
    binds: list.binds,
  };
}

/** Raises `updated_at` of the listed threads to `now`, never lowers it (core's `bumpedUpdatedAt`). */
export function touchThreads(d: Dialect, threadIds: readonly string[], now: Date): Statement {
  const list = inList('t', threadIds);
  return {
    sql: `UPDATE ${d.names.threads} SET updated_at = GREATEST(updated_at, ${timestampBind('updated_at')}) WHERE id IN (${list.sql})`,
    binds: { ...list.binds, updated_at: toTimestampText(now, 'now') },
  };
}

/** The select list of a message row (see `MessageRow`). */
const MESSAGE_COLUMNS = `m.id, m.thread_id, m.resource_id, m.message_role, m.message_type, m.content, ${timestampText('m.created_at', 'created_at_text')}`;

/** Full rows of the listed messages (at most 1,000 ids), of `resourceId` when given. */
export function selectMessagesByIds(
  d: Pick<Dialect, 'names'>,
  ids: readonly string[],
  resourceId?: string,
): Statement {
  const { sql, binds } = inList('m', ids);
  const select = `SELECT ${MESSAGE_COLUMNS} FROM ${d.names.messages} m WHERE m.id IN (${sql})`;
  if (resourceId === undefined) return { sql: select, binds };
  return { sql: `${select} AND m.resource_id = :resource_id`, binds: { ...binds, resource_id: resourceId } };
}

/**
 * Upsert of one message by id; a message saved with another thread id of its resource moves
 * there. A stored message of another resource is left alone (the update's `WHERE`): the
 * statement then merges 0 rows, which the caller refuses as a taken id.
 */
export function upsertMessage(d: Dialect, message: core.Message): Statement {
  return {
    sql: `MERGE INTO ${d.names.messages} m
USING (SELECT :message_id AS id FROM dual) s
ON (m.id = s.id)
WHEN MATCHED THEN UPDATE SET m.thread_id = :thread_id,
  m.message_role = :message_role, m.message_type = :message_type, m.content = :content,
  m.created_at = ${timestampBind('created_at')}
  WHERE m.resource_id = :resource_id
WHEN NOT MATCHED THEN INSERT (id, thread_id, resource_id, message_role, message_type, content, created_at)
  VALUES (s.id, :thread_id, :resource_id, :message_role, :message_type, :content, ${timestampBind('created_at')})`,
    binds: {
      message_id: message.id,
      thread_id: message.threadId,
      resource_id: message.resourceId,
      message_role: message.role,
      message_type: message.type === '' ? null : message.type,
      content: jsonBind(d, message.content),
      created_at: toTimestampText(message.createdAt, 'message.createdAt'),
    },
  };
}

export function deleteMessagesByIds(d: Dialect, ids: readonly string[]): Statement {
  const list = inList('m', ids);
  return { sql: `DELETE FROM ${d.names.messages} WHERE id IN (${list.sql})`, binds: list.binds };
}

/** Filters of a message page: thread, optional resource, optional date range. */
export type MessageFilter = Pick<core.MessageQuery, 'threadId' | 'resourceId' | 'dateRange'>;

/** The `WHERE` clause of a message page. */
function messageWhere({ threadId, resourceId, dateRange }: MessageFilter): Statement {
  const binds: OracleBinds = { thread_id: threadId };
  const conditions = ['m.thread_id = :thread_id'];
  if (resourceId !== undefined) {
    conditions.push('m.resource_id = :resource_id');
    binds.resource_id = resourceId;
  }
  conditions.push(...dateConditions('m', dateRange, binds));
  return { sql: ` WHERE ${conditions.join(' AND ')}`, binds };
}

/**
 * The conditions of a date range on `<alias>.created_at`, their binds added to `binds`. Bounds
 * outside the storable years 1–9999 are resolved here: a start before year 1 or an end after
 * 9999 filters nothing, the opposite excludes everything.
 */
function dateConditions(alias: string, range: core.DateRange | undefined, binds: OracleBinds): string[] {
  const conditions: string[] = [];
  const bounds = [
    [range?.start, range?.startExclusive ? '>' : '>=', 'range_start'],
    [range?.end, range?.endExclusive ? '<' : '<=', 'range_end'],
  ] as const;
  for (const [date, op, name] of bounds) {
    if (!date) continue;
    if (isStorableDate(date)) {
      binds[name] = toTimestampText(date);
      conditions.push(`${alias}.created_at ${op} ${timestampBind(name)}`);
    } else if (date.getTime() < MIN_TIMESTAMP !== op.startsWith('>')) {
      conditions.push('1 = 0');
    }
  }
  return conditions;
}

/** How many messages the page filter matches (the `total` of `listMessages`). */
export function countMessages(d: Dialect, filter: MessageFilter): Statement {
  const where = messageWhere(filter);
  return { sql: `SELECT COUNT(*) AS total FROM ${d.names.messages} m${where.sql}`, binds: where.binds };
}

/** A page of messages ordered by `(created_at, id)` in `direction`. */
export function listMessages(d: Dialect, filter: MessageFilter, direction: core.Direction, paging: Paging) {
  const where = messageWhere(filter);
  const dir = direction === 'ASC' ? 'ASC' : 'DESC';
  const limit = rowLimit(paging, where.binds);
  const sql = `SELECT ${MESSAGE_COLUMNS} FROM ${d.names.messages} m${where.sql} ORDER BY m.created_at ${dir}, m.id ${dir}`;
  return { sql: `${sql}${limit}`, binds: where.binds };
}

/** An include window around a message already read: its neighbours in its own thread. */
export interface WindowRequest {
  target: core.Message;
  before: number;
  after: number;
}

/**
 * The neighbours of every window target in one statement: up to `before` messages just before it
 * and `after` just after it in `(created_at, id)` order, in its own thread (and resource, when
 * given); each branch walks the `(thread_id, created_at, id)` index and stops after its row
 * count. `null` when no window asks for neighbours.
 */
export function selectWindows(d: Dialect, windows: readonly WindowRequest[], resourceId?: string) {
  const binds: OracleBinds = resourceId === undefined ? {} : { resource_id: resourceId };
  const resource = resourceId === undefined ? '' : ' AND m.resource_id = :resource_id';
  const branches: string[] = [];
  windows.forEach(({ target, before, after }, i) => {
    const w = `w${i}_`;
    for (const [side, count] of [['before', before] as const, ['after', after] as const]) {
      if (count <= 0) continue;
      const [lt, dir] = side === 'before' ? ['<', 'DESC'] : ['>', 'ASC'];
      Object.assign(binds, {
        [`${w}thread`]: target.threadId,
        [`${w}at`]: toTimestampText(target.createdAt),
        [`${w}id`]: target.id,
        [`${w}${side}`]: count,
      });
      branches.push(
        `SELECT * FROM (SELECT ${MESSAGE_COLUMNS} FROM ${d.names.messages} m WHERE m.thread_id = :${w}thread${resource}` +
          ` AND (m.created_at ${lt} ${timestampBind(`${w}at`)} OR (m.created_at = ${timestampBind(`${w}at`)} AND m.id ${lt} :${w}id))` +
          ` ORDER BY m.created_at ${dir}, m.id ${dir} FETCH FIRST :${w}${side} ROWS ONLY)`,
      );
    }
  });
  return branches.length === 0 ? null : { sql: branches.join('\nUNION ALL\n'), binds };
}

/**
 * Up to `limit` resource ids after `after` (all when `null`), ascending in binary order: the
 * sessions compare and sort with `NLS_COMP`/`NLS_SORT` `BINARY`, which on AL32UTF8 text is UTF-8
 * byte order.
 */
export function selectResourceIds(d: Dialect, after: string | null, limit: number): Statement {
  return {
    sql: `SELECT id FROM ${d.names.resources} WHERE :after_id IS NULL OR id > :after_id ORDER BY id FETCH FIRST :row_limit ROWS ONLY`,
    binds: { after_id: after, row_limit: limit },
  };
}

/** One resource by id; with `forUpdate`, row-locked until the transaction ends. */
export function selectResource(d: Dialect, resourceId: string, forUpdate = false): Statement {
  const columns = recordColumns(d, 'r', 'r.id, r.working_memory, r.working_memory_empty');
  return {
    sql: `SELECT ${columns} FROM ${d.names.resources} r WHERE r.id = :resource_id${forUpdate ? ' FOR UPDATE' : ''}`,
    binds: { resource_id: resourceId },
  };
}

/**
 * Creates an empty resource row when none exists (no working memory, `{}` metadata). Two
 * sessions racing here both miss the row; the second blocks on the primary key and then fails
 * with ORA-00001, which the caller treats as "the row exists now".
 */
export function insertMissingResource(d: Dialect, resourceId: string, now: Date): Statement {
  return {
    sql: `MERGE INTO ${d.names.resources} r
USING (SELECT :resource_id AS id FROM dual) s
ON (r.id = s.id)
WHEN NOT MATCHED THEN INSERT (id, working_memory, working_memory_empty, metadata, created_at, updated_at)
  VALUES (s.id, NULL, 0, '{}', ${timestampBind('created_at')}, ${timestampBind('created_at')})`,
    binds: { resource_id: resourceId, created_at: toTimestampText(now, 'now') },
  };
}

/** Writes a resource's working memory, metadata and `updatedAt` (after a locked read). */
export function updateResourceRow(d: Dialect, row: Omit<core.Resource, 'createdAt'>): Statement {
  const wm = workingMemoryColumns(row.workingMemory);
  return {
    sql: `UPDATE ${d.names.resources} SET working_memory = :working_memory, working_memory_empty = :working_memory_empty, metadata = :metadata, updated_at = ${timestampBind('updated_at')} WHERE id = :resource_id`,
    binds: {
      resource_id: row.id,
      working_memory: textBind(wm.text, d.clobType),
      working_memory_empty: wm.empty,
      metadata: jsonBind(d, row.metadata),
      updated_at: toTimestampText(row.updatedAt, 'updatedAt'),
    },
  };
}
