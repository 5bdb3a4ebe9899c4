import {
  type DateRange,
  type Direction,
  MemoryError,
  type Message,
  prefixedTables,
  type Thread,
} from '@engram/core/adapter';
import type { OracleBinds, OracleDbType } from './driver.ts';
import {
  encodeJson,
  isStorableDate,
  MIN_TIMESTAMP,
  TIMESTAMP_FORMAT,
  textBind,
  toTimestampText,
  workingMemoryColumns,
} from './mapping.ts';

/**
 * Every statement the adapter sends, built by pure functions: SQL text plus named binds.
 * Identifiers come only from the validated table prefix; every value is a bind.
 */

/** A statement ready for `connection.execute(sql, binds)`. */
export interface Statement {
  sql: string;
  binds: OracleBinds;
}

/** How metadata is stored: the `JSON` type (21c and later) or a `CLOB` checked `IS JSON`. */
export type JsonStorage = 'json' | 'clob';

/** The table names derived from a prefix (unquoted, so Oracle upper-cases them). */
export interface TableNames {
  prefix: string;
  threads: string;
  messages: string;
  resources: string;
  migrations: string;
  /** Message vectors for semantic recall (23ai). */
  vectors: string;
  /** The recorded embedding space (one row). */
  vectorSpace: string;
}

/** What statement builders need to know about the database. */
export interface Dialect {
  names: TableNames;
  /** How the `metadata` columns are stored. */
  json: JsonStorage;
  /** `oracledb.DB_TYPE_CLOB`, for binding text longer than a VARCHAR2 bind. */
  clobType: OracleDbType;
  /** `oracledb.DB_TYPE_VECTOR`, for binding a `Float32Array`. */
  vectorType: OracleDbType;
  /** True when the server has the `VECTOR` type (23ai and later) and the vector tables exist. */
  vectors: boolean;
}

/** Oracle allows at most 1,000 expressions in an `IN` list (ORA-01795); callers chunk to this. */
export const MAX_IN_LIST = 1000;

const PREFIX_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,29}$/;
const TS = `'${TIMESTAMP_FORMAT}'`;

/**
 * Table names for a prefix. The prefix must be a plain identifier start (a letter, then letters,
 * digits or `_`, at most 30 characters) so every derived name is a valid unquoted identifier.
 */
export function tableNames(prefix: string): TableNames {
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `oracle: tablePrefix must be a letter followed by letters, digits or _ (at most 30 characters), got ${JSON.stringify(prefix)}`,
      { adapter: 'oracle' },
    );
  }
  const p = prefix.toLowerCase();
  return { prefix: p, ...prefixedTables(p), vectors: `${p}message_vectors` };
}

/**
 * Run once on every new session of a pool the store creates: binary (UTF-8 byte) order and
 * comparison for ids, the order `compareIds` defines, whatever the session's NLS language.
 */
export const SESSION_SETUP: Statement = {
  sql: 'ALTER SESSION SET NLS_SORT = BINARY NLS_COMP = BINARY',
  binds: {},
};

/** `TO_TIMESTAMP(:name, 'YYYY-MM-DD"T"HH24:MI:SS.FF3')`. */
export function timestampBind(name: string): string {
  return `TO_TIMESTAMP(:${name}, ${TS})`;
}

/** `TO_CHAR(column, 'YYYY-MM-DD"T"HH24:MI:SS.FF3')`. */
function timestampText(column: string): string {
  return `TO_CHAR(${column}, ${TS})`;
}

/** The metadata column as JSON text: serialised from the JSON type, or the CLOB as is. */
function metadataText(d: Dialect, column: string): string {
  return d.json === 'json' ? `JSON_SERIALIZE(${column} RETURNING CLOB)` : column;
}

/** `:i0, :i1, …` plus the binds, for an `IN` list of at most 1,000 values. */
export function inList(prefix: string, values: readonly string[]): { sql: string; binds: OracleBinds } {
  if (values.length === 0 || values.length > MAX_IN_LIST) {
    throw new Error(`an IN list holds 1 to ${MAX_IN_LIST} values, got ${values.length}`);
  }
  const binds: OracleBinds = {};
  const names = values.map((value, i) => {
    binds[`${prefix}${i}`] = value;
    return `:${prefix}${i}`;
  });
  return { sql: names.join(', '), binds };
}

/** Splits `values` into chunks that fit one `IN` list. */
export function chunks<T>(values: readonly T[], size = MAX_IN_LIST): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Threads

/** The select list of a thread row (see `ThreadRow`). */
export function threadColumns(d: Dialect, alias = 't'): string {
  return [
    `${alias}.id`,
    `${alias}.resource_id`,
    `${alias}.title`,
    `${metadataText(d, `${alias}.metadata`)} AS metadata`,
    `${timestampText(`${alias}.created_at`)} AS created_at_text`,
    `${timestampText(`${alias}.updated_at`)} AS updated_at_text`,
  ].join(', ');
}

/** One thread by id, optionally only when it belongs to `resourceId`. */
export function selectThread(d: Dialect, threadId: string, resourceId?: string): Statement {
  const binds: OracleBinds = { thread_id: threadId };
  let sql = `SELECT ${threadColumns(d)} FROM ${d.names.threads} t WHERE t.id = :thread_id`;
  if (resourceId !== undefined) {
    sql += ' AND t.resource_id = :resource_id';
    binds.resource_id = resourceId;
  }
  return { sql, binds };
}

/** One thread by id, row-locked until the transaction ends. */
export function selectThreadForUpdate(d: Dialect, threadId: string): Statement {
  return {
    sql: `SELECT ${threadColumns(d)} FROM ${d.names.threads} t WHERE t.id = :thread_id FOR UPDATE`,
    binds: { thread_id: threadId },
  };
}

/** Upsert of a whole thread by id. */
export function upsertThread(d: Dialect, thread: Thread): Statement {
  return {
    sql: `MERGE INTO ${d.names.threads} t
USING (SELECT :thread_id AS id FROM dual) s
ON (t.id = s.id)
WHEN MATCHED THEN UPDATE SET t.resource_id = :resource_id, t.title = :title, t.metadata = :metadata,
  t.created_at = ${timestampBind('created_at')}, t.updated_at = ${timestampBind('updated_at')}
WHEN NOT MATCHED THEN INSERT (id, resource_id, title, metadata, created_at, updated_at)
  VALUES (s.id, :resource_id, :title, :metadata, ${timestampBind('created_at')}, ${timestampBind('updated_at')})`,
    binds: {
      thread_id: thread.id,
      resource_id: thread.resourceId,
      title: textBind(thread.title, d.clobType),
      metadata: textBind(encodeJson(thread.metadata), d.clobType),
      created_at: toTimestampText(thread.createdAt, 'thread.createdAt'),
      updated_at: toTimestampText(thread.updatedAt, 'thread.updatedAt'),
    },
  };
}

/**
 * Inserts a new thread: insert-only, so a taken id fails with ORA-00001 (unique constraint)
 * and nothing changes, also when a concurrent session inserted it first.
 */
export function insertThread(d: Dialect, thread: Thread): Statement {
  return {
    sql: `INSERT INTO ${d.names.threads} (id, resource_id, title, metadata, created_at, updated_at)
VALUES (:thread_id, :resource_id, :title, :metadata, ${timestampBind('created_at')}, ${timestampBind('updated_at')})`,
    binds: {
      thread_id: thread.id,
      resource_id: thread.resourceId,
      title: textBind(thread.title, d.clobType),
      metadata: textBind(encodeJson(thread.metadata), d.clobType),
      created_at: toTimestampText(thread.createdAt, 'thread.createdAt'),
      updated_at: toTimestampText(thread.updatedAt, 'thread.updatedAt'),
    },
  };
}

/** Writes a thread's title, metadata and `updatedAt` (after a locked read). */
export function updateThreadRow(
  d: Dialect,
  row: { id: string; title: string; metadata: Thread['metadata']; updatedAt: Date },
): Statement {
  return {
    sql: `UPDATE ${d.names.threads} SET title = :title, metadata = :metadata, updated_at = ${timestampBind('updated_at')} WHERE id = :thread_id`,
    binds: {
      thread_id: row.id,
      title: textBind(row.title, d.clobType),
      metadata: textBind(encodeJson(row.metadata), d.clobType),
      updated_at: toTimestampText(row.updatedAt, 'updatedAt'),
    },
  };
}

/** Deletes every message of a thread (first half of `deleteThread`). */
export function deleteThreadMessages(d: Dialect, threadId: string): Statement {
  return {
    sql: `DELETE FROM ${d.names.messages} WHERE thread_id = :thread_id`,
    binds: { thread_id: threadId },
  };
}

/** Deletes a thread row (second half of `deleteThread`). */
export function deleteThreadRow(d: Dialect, threadId: string): Statement {
  return { sql: `DELETE FROM ${d.names.threads} WHERE id = :thread_id`, binds: { thread_id: threadId } };
}

/** Filters of a thread listing that SQL applies (metadata is matched afterwards). */
export interface ThreadFilter {
  resourceId?: string;
}

function threadWhere(filter: ThreadFilter): { sql: string; binds: OracleBinds } {
  if (filter.resourceId === undefined) return { sql: '', binds: {} };
  return { sql: ' WHERE t.resource_id = :resource_id', binds: { resource_id: filter.resourceId } };
}

/** How many threads match. */
export function countThreads(d: Dialect, filter: ThreadFilter): Statement {
  const where = threadWhere(filter);
  return { sql: `SELECT COUNT(*) AS total FROM ${d.names.threads} t${where.sql}`, binds: where.binds };
}

/** Paging of a listing: rows `[offset, offset + limit)`, or every row when `limit` is undefined. */
export interface Paging {
  offset: number;
  limit?: number;
}

function rowLimit(paging: Paging, binds: OracleBinds): string {
  if (paging.limit === undefined) return '';
  binds.row_offset = paging.offset;
  binds.row_limit = paging.limit;
  return ' OFFSET :row_offset ROWS FETCH NEXT :row_limit ROWS ONLY';
}

/** A page of threads ordered by `orderBy` then id, both in `direction`. */
export function listThreads(
  d: Dialect,
  filter: ThreadFilter,
  order: { orderBy: 'createdAt' | 'updatedAt'; direction: Direction },
  paging: Paging,
): Statement {
  const where = threadWhere(filter);
  const column = order.orderBy === 'createdAt' ? 't.created_at' : 't.updated_at';
  const dir = order.direction === 'ASC' ? 'ASC' : 'DESC';
  const binds: OracleBinds = { ...where.binds };
  const limit = rowLimit(paging, binds);
  return {
    sql: `SELECT ${threadColumns(d)} FROM ${d.names.threads} t${where.sql} ORDER BY ${column} ${dir}, t.id ${dir}${limit}`,
    binds,
  };
}

/** Id and resource of the listed threads (the existence check of `saveMessages`). */
export function selectThreadOwners(d: Dialect, threadIds: readonly string[]): Statement {
  const list = inList('t', threadIds);
  return {
    sql: `SELECT id, resource_id FROM ${d.names.threads} WHERE id IN (${list.sql})`,
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

// ---------------------------------------------------------------------------------------------
// Messages

/** The select list of a message row (see `MessageRow`). */
export function messageColumns(alias = 'm'): string {
  return [
    `${alias}.id`,
    `${alias}.thread_id`,
    `${alias}.resource_id`,
    `${alias}.message_role`,
    `${alias}.message_type`,
    `${alias}.content`,
    `${timestampText(`${alias}.created_at`)} AS created_at_text`,
  ].join(', ');
}

/** Full rows of the listed messages (callers sort; at most 1,000 ids). */
export function selectMessagesByIds(d: Dialect, ids: readonly string[], resourceId?: string): Statement {
  const list = inList('m', ids);
  let sql = `SELECT ${messageColumns()} FROM ${d.names.messages} m WHERE m.id IN (${list.sql})`;
  const binds: OracleBinds = { ...list.binds };
  if (resourceId !== undefined) {
    sql += ' AND m.resource_id = :resource_id';
    binds.resource_id = resourceId;
  }
  return { sql, binds };
}

/** Id and thread of the listed messages, row-locked: which threads a write touches. */
export function selectMessageThreadsForUpdate(d: Dialect, ids: readonly string[]): Statement {
  const list = inList('m', ids);
  return {
    sql: `SELECT id, thread_id, resource_id FROM ${d.names.messages} WHERE id IN (${list.sql}) FOR UPDATE`,
    binds: list.binds,
  };
}

/**
 * Upsert of one message by id; a message saved with another thread id of its resource moves
 * there. A stored message of another resource is left alone (the update's `WHERE`): the
 * statement then merges 0 rows, which the caller refuses as a taken id.
 */
export function upsertMessage(d: Dialect, message: Message): Statement {
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
      content: textBind(encodeJson(message.content), d.clobType),
      created_at: toTimestampText(message.createdAt, 'message.createdAt'),
    },
  };
}

/** The fields of a message patch that an `UPDATE` sets (undefined = keep). */
export interface MessageChanges {
  id: string;
  role?: string;
  type?: string;
  content?: Message['content'];
  createdAt?: Date;
}

/** Partial update of one message, or `null` when the patch changes nothing. */
export function updateMessageRow(d: Dialect, patch: MessageChanges): Statement | null {
  const sets: string[] = [];
  const binds: OracleBinds = { message_id: patch.id };
  if (patch.role !== undefined) {
    sets.push('message_role = :message_role');
    binds.message_role = patch.role;
  }
  if (patch.type !== undefined) {
    sets.push('message_type = :message_type');
    binds.message_type = patch.type === '' ? null : patch.type;
  }
  if (patch.content !== undefined) {
    sets.push('content = :content');
    binds.content = textBind(encodeJson(patch.content), d.clobType);
  }
  if (patch.createdAt !== undefined) {
    sets.push(`created_at = ${timestampBind('created_at')}`);
    binds.created_at = toTimestampText(patch.createdAt, 'createdAt');
  }
  if (sets.length === 0) return null;
  return { sql: `UPDATE ${d.names.messages} SET ${sets.join(', ')} WHERE id = :message_id`, binds };
}

/** Deletes the listed messages. */
export function deleteMessagesByIds(d: Dialect, ids: readonly string[]): Statement {
  const list = inList('m', ids);
  return { sql: `DELETE FROM ${d.names.messages} WHERE id IN (${list.sql})`, binds: list.binds };
}

/** Filters of a message page: thread, optional resource, optional date range. */
export interface MessageFilter {
  threadId: string;
  resourceId?: string;
  dateRange?: DateRange;
}

/**
 * One bound of a date range as SQL. Bounds outside the storable years 1–9999 are resolved here:
 * a start before year 1 or an end after 9999 filters nothing, the opposite excludes everything.
 */
function rangeBound(
  date: Date,
  op: '>=' | '>' | '<=' | '<',
  name: string,
  binds: OracleBinds,
): string | undefined {
  if (!isStorableDate(date)) {
    const below = date.getTime() < MIN_TIMESTAMP;
    const lower = op === '>=' || op === '>';
    return below === lower ? undefined : '1 = 0';
  }
  binds[name] = toTimestampText(date);
  return `m.created_at ${op} ${timestampBind(name)}`;
}

function messageWhere(filter: MessageFilter): { sql: string; binds: OracleBinds } {
  const binds: OracleBinds = { thread_id: filter.threadId };
  const conditions = ['m.thread_id = :thread_id'];
  if (filter.resourceId !== undefined) {
    conditions.push('m.resource_id = :resource_id');
    binds.resource_id = filter.resourceId;
  }
  const range = filter.dateRange;
  if (range?.start) {
    const c = rangeBound(range.start, range.startExclusive ? '>' : '>=', 'range_start', binds);
    if (c) conditions.push(c);
  }
  if (range?.end) {
    const c = rangeBound(range.end, range.endExclusive ? '<' : '<=', 'range_end', binds);
    if (c) conditions.push(c);
  }
  return { sql: ` WHERE ${conditions.join(' AND ')}`, binds };
}

/** How many messages the page filter matches (the `total` of `listMessages`). */
export function countMessages(d: Dialect, filter: MessageFilter): Statement {
  const where = messageWhere(filter);
  return { sql: `SELECT COUNT(*) AS total FROM ${d.names.messages} m${where.sql}`, binds: where.binds };
}

/** A page of messages ordered by `(created_at, id)` in `direction`. */
export function listMessages(
  d: Dialect,
  filter: MessageFilter,
  direction: Direction,
  paging: Paging,
): Statement {
  const where = messageWhere(filter);
  const dir = direction === 'ASC' ? 'ASC' : 'DESC';
  const binds: OracleBinds = { ...where.binds };
  const limit = rowLimit(paging, binds);
  return {
    sql: `SELECT ${messageColumns()} FROM ${d.names.messages} m${where.sql} ORDER BY m.created_at ${dir}, m.id ${dir}${limit}`,
    binds,
  };
}

/** An include window around a message already read: its neighbours in its own thread. */
export interface WindowRequest {
  target: Message;
  before: number;
  after: number;
}

/**
 * The neighbours of every window target in one statement: for each target, up to `before`
 * messages just before it and `after` just after it in `(created_at, id)` order, in the
 * target's own thread (and resource, when given). Each branch walks the
 * `(thread_id, created_at, id)` index and stops after its row count. `null` when no window
 * asks for neighbours.
 */
export function selectWindows(
  d: Dialect,
  windows: readonly WindowRequest[],
  resourceId?: string,
): Statement | null {
  const binds: OracleBinds = {};
  const branches: string[] = [];
  const resource = resourceId === undefined ? '' : ' AND m.resource_id = :resource_id';
  if (resourceId !== undefined) binds.resource_id = resourceId;
  windows.forEach((window, i) => {
    const w = `w${i}_`;
    const sides: Array<['before' | 'after', number]> = [
      ['before', window.before],
      ['after', window.after],
    ];
    for (const [side, count] of sides) {
      if (count <= 0) continue;
      const lt = side === 'before' ? '<' : '>';
      const dir = side === 'before' ? 'DESC' : 'ASC';
      const n = `${w}${side}`;
      binds[`${w}thread`] = window.target.threadId;
      binds[`${w}at`] = toTimestampText(window.target.createdAt);
      binds[`${w}id`] = window.target.id;
      binds[n] = count;
      branches.push(
        `SELECT * FROM (SELECT ${messageColumns()} FROM ${d.names.messages} m WHERE m.thread_id = :${w}thread${resource}` +
          ` AND (m.created_at ${lt} ${timestampBind(`${w}at`)} OR (m.created_at = ${timestampBind(`${w}at`)} AND m.id ${lt} :${w}id))` +
          ` ORDER BY m.created_at ${dir}, m.id ${dir} FETCH FIRST :${n} ROWS ONLY)`,
      );
    }
  });
  if (branches.length === 0) return null;
  return { sql: branches.join('\nUNION ALL\n'), binds };
}

// ---------------------------------------------------------------------------------------------
// Resources

/** The select list of a resource row (see `ResourceRow`). */
export function resourceColumns(d: Dialect, alias = 'r'): string {
  return [
    `${alias}.id`,
    `${alias}.working_memory`,
    `${alias}.working_memory_empty`,
    `${metadataText(d, `${alias}.metadata`)} AS metadata`,
    `${timestampText(`${alias}.created_at`)} AS created_at_text`,
    `${timestampText(`${alias}.updated_at`)} AS updated_at_text`,
  ].join(', ');
}

/** One resource by id. */
export function selectResource(d: Dialect, resourceId: string): Statement {
  return {
    sql: `SELECT ${resourceColumns(d)} FROM ${d.names.resources} r WHERE r.id = :resource_id`,
    binds: { resource_id: resourceId },
  };
}

/** One resource by id, row-locked until the transaction ends. */
export function selectResourceForUpdate(d: Dialect, resourceId: string): Statement {
  return {
    sql: `SELECT ${resourceColumns(d)} FROM ${d.names.resources} r WHERE r.id = :resource_id FOR UPDATE`,
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
export function updateResourceRow(
  d: Dialect,
  row: { id: string; workingMemory: string | null; metadata: Thread['metadata']; updatedAt: Date },
): Statement {
  const wm = workingMemoryColumns(row.workingMemory);
  return {
    sql: `UPDATE ${d.names.resources} SET working_memory = :working_memory, working_memory_empty = :working_memory_empty, metadata = :metadata, updated_at = ${timestampBind('updated_at')} WHERE id = :resource_id`,
    binds: {
      resource_id: row.id,
      working_memory: textBind(wm.text, d.clobType),
      working_memory_empty: wm.empty,
      metadata: textBind(encodeJson(row.metadata), d.clobType),
      updated_at: toTimestampText(row.updatedAt, 'updatedAt'),
    },
  };
}
