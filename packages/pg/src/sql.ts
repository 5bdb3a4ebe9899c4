import type {
  DateRange,
  Direction,
  NormalizedListMessages,
  NormalizedListThreads,
} from '@engram/core/adapter';
import { MESSAGE_COLUMNS, RESOURCE_COLUMNS, THREAD_COLUMNS } from '@engram/core/adapter';
import { boundTimestamp } from './mapping.ts';

/** Quotes an SQL identifier (`my"name` → `"my""name"`). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Schema-qualified, quoted names of everything the store creates. */
export interface Names {
  /** The schema name, unquoted. */
  schemaName: string;
  /** The table prefix, unquoted. */
  prefix: string;
  schema: string;
  threads: string;
  messages: string;
  resources: string;
  /** Messages per (thread, resource), kept by every message write. */
  counts: string;
  version: string;
  /** One vector per (message, embedding space). */
  vectors: string;
  /** The one embedding space of this schema's vectors (a single row). */
  vectorSpace: string;
}

/** Builds the qualified names for a schema and table prefix. */
export function names(schemaName: string, prefix: string): Names {
  const schema = quoteIdent(schemaName);
  const table = (name: string) => `${schema}.${quoteIdent(prefix + name)}`;
  return {
    schemaName,
    prefix,
    schema,
    threads: table('threads'),
    messages: table('messages'),
    resources: table('resources'),
    counts: table('message_counts'),
    version: table('schema_version'),
    vectors: table('message_vectors'),
    vectorSpace: table('vector_space'),
  };
}

/** Collects positional parameters while a statement is built. */
export class Params {
  readonly values: unknown[] = [];

  /** Adds a value and returns its placeholder (`$1`, `$2`, …). */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** A statement ready for `client.query(text, values)`. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** `ORDER BY` for messages in `direction`, matching the `(thread_id, created_at, id)` index. */
function messageOrder(direction: Direction, alias = ''): string {
  return `${alias}created_at ${direction}, ${alias}id ${direction}`;
}

export function getThread(n: Names, threadId: string, resourceId?: string): Statement {
  const p = new Params();
  let text = `SELECT ${THREAD_COLUMNS} FROM ${n.threads} WHERE id = ${p.add(threadId)}`;
  if (resourceId !== undefined) text += ` AND resource_id = ${p.add(resourceId)}`;
  return { text, values: p.values };
}

export function upsertThread(n: Names): string {
  return `INSERT INTO ${n.threads} (${THREAD_COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)
    ON CONFLICT (id) DO UPDATE SET resource_id = EXCLUDED.resource_id, title = EXCLUDED.title,
      metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`;
}

/** Inserts a thread unless its id exists; returns no row when the id was taken. */
export function insertThread(n: Names): string {
  return `INSERT INTO ${n.threads} (${THREAD_COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)
    ON CONFLICT (id) DO NOTHING RETURNING id`;
}

/**
 * A thread's new `updatedAt` (core's `bumpedUpdatedAt`): the stored one, the server's clock as
 * the row is written (after its lock is granted: `clock_timestamp()`, not the transaction's
 * start) and `newest`, an SQL expression for the newest `createdAt` written into the thread
 * (NULL when none; `GREATEST` skips NULLs), whichever is latest.
 */
function bumped(column: string, newest?: string): string {
  return `GREATEST(${column}, clock_timestamp()${newest ? `, ${newest}` : ''})`;
}

/** Title kept when `$2` is NULL; metadata merged with one `||`; `updatedAt` bumped. */
export function updateThread(n: Names): string {
  return `UPDATE ${n.threads} SET title = COALESCE($2, title), metadata = metadata || $3::jsonb,
      updated_at = ${bumped('updated_at')} WHERE id = $1 RETURNING ${THREAD_COLUMNS}`;
}

/** Locks the thread row, then its messages go with it through `ON DELETE CASCADE`. */
export function deleteThread(n: Names): string {
  return `DELETE FROM ${n.threads} WHERE id = $1`;
}

/** The filter part of `listThreads`: resource and metadata keys compared as JSON values. */
function threadFilter(n: Names, args: NormalizedListThreads, p: Params): string {
  const where: string[] = [];
  if (args.resourceId !== undefined) where.push(`resource_id = ${p.add(args.resourceId)}`);
  for (const [key, value] of Object.entries(args.metadata ?? {})) {
    where.push(`metadata -> ${p.add(key)} = ${p.add(JSON.stringify(value))}::jsonb`);
  }
  return `FROM ${n.threads}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
}

export function listThreads(n: Names, args: NormalizedListThreads): Statement {
  const p = new Params();
  const column = args.orderBy === 'createdAt' ? 'created_at' : 'updated_at';
  let text = `SELECT ${THREAD_COLUMNS} ${threadFilter(n, args, p)}
    ORDER BY ${column} ${args.direction}, id ${args.direction}`;
  if (args.perPage !== false) {
    text += ` LIMIT ${p.add(args.perPage)} OFFSET ${p.add(args.page * args.perPage)}`;
  }
  return { text, values: p.values };
}

export function countThreads(n: Names, args: NormalizedListThreads): Statement {
  const p = new Params();
  return { text: `SELECT count(*)::int AS total ${threadFilter(n, args, p)}`, values: p.values };
}

/** The rows `listMessages` pages over: one thread, optionally one resource and a date range. */
function messageFilter(n: Names, args: NormalizedListMessages, p: Params): string {
  const where = [`thread_id = ${p.add(args.threadId)}`];
  if (args.resourceId !== undefined) where.push(`resource_id = ${p.add(args.resourceId)}`);
  where.push(...dateBounds(args.dateRange, p));
  return `FROM ${n.messages} WHERE ${where.join(' AND ')}`;
}

function dateBounds(range: DateRange | undefined, p: Params): string[] {
  const out: string[] = [];
  if (range?.start) {
    out.push(
      `created_at ${range.startExclusive ? '>' : '>='} ${p.add(boundTimestamp(range.start))}::timestamptz`,
    );
  }
  if (range?.end) {
    out.push(
      `created_at ${range.endExclusive ? '<' : '<='} ${p.add(boundTimestamp(range.end))}::timestamptz`,
    );
  }
  return out;
}

/**
 * One page of a thread's messages, served by the `(thread_id, created_at, id)` index: the
 * newest N is an index scan backwards that stops after N rows.
 */
export function pageMessages(
  n: Names,
  args: NormalizedListMessages,
  limit: number | null,
  offset: number,
): Statement {
  const p = new Params();
  let text = `SELECT ${MESSAGE_COLUMNS} ${messageFilter(n, args, p)} ORDER BY ${messageOrder(args.direction)}`;
  if (limit !== null) text += ` LIMIT ${p.add(limit)}`;
  if (offset > 0) text += ` OFFSET ${p.add(offset)}`;
  return { text, values: p.values };
}

/**
 * The number of rows `listMessages` pages over. Without a date range it is read from the kept
 * counts (one primary-key lookup, whatever the thread's length); with one, the rows are counted.
 */
export function countMessages(n: Names, args: NormalizedListMessages): Statement {
  const p = new Params();
  if (args.dateRange === undefined) {
    let text = `SELECT COALESCE(sum(n), 0)::int AS total FROM ${n.counts} WHERE thread_id = ${p.add(args.threadId)}`;
    if (args.resourceId !== undefined) text += ` AND resource_id = ${p.add(args.resourceId)}`;
    return { text, values: p.values };
  }
  return { text: `SELECT count(*)::int AS total ${messageFilter(n, args, p)}`, values: p.values };
}

/**
 * Every include window in one statement: for each target, its own thread's previous and next
 * messages (optionally restricted to one resource), each side an index range scan with a limit.
 */
export function includeWindows(
  n: Names,
  windows: { id: string; withPreviousMessages: number; withNextMessages: number }[],
  resourceId: string | undefined,
): Statement {
  const p = new Params();
  const ids = p.add(windows.map((w) => w.id));
  const before = p.add(windows.map((w) => w.withPreviousMessages));
  const after = p.add(windows.map((w) => w.withNextMessages));
  const scope = resourceId === undefined ? '' : p.add(resourceId);
  const inScope = (alias: string) => (scope ? ` AND ${alias}.resource_id = ${scope}` : '');
  const cols = MESSAGE_COLUMNS.split(', ')
    .map((c) => `m.${c}`)
    .join(', ');
  const text = `WITH targets AS (
      SELECT t.thread_id, t.created_at, t.id, w.before, w.after
      FROM unnest(${ids}::text[], ${before}::int[], ${after}::int[]) AS w(id, before, after)
      JOIN ${n.messages} t ON t.id = w.id${inScope('t')}
    )
    SELECT x.* FROM targets, LATERAL (
      (SELECT ${cols} FROM ${n.messages} m
        WHERE m.id = targets.id)
      UNION ALL
      (SELECT ${cols} FROM ${n.messages} m
        WHERE m.thread_id = targets.thread_id${inScope('m')}
          AND (m.created_at, m.id) < (targets.created_at, targets.id)
        ORDER BY ${messageOrder('DESC', 'm.')} LIMIT targets.before)
      UNION ALL
      (SELECT ${cols} FROM ${n.messages} m
        WHERE m.thread_id = targets.thread_id${inScope('m')}
          AND (m.created_at, m.id) > (targets.created_at, targets.id)
        ORDER BY ${messageOrder('ASC', 'm.')} LIMIT targets.after)
    ) AS x`;
  return { text, values: p.values };
}

export function messagesById(n: Names): string {
  return `SELECT ${MESSAGE_COLUMNS} FROM ${n.messages} WHERE id = ANY($1::text[]) ORDER BY ${messageOrder('ASC')}`;
}

/**
 * Locks, in id order, the threads among `$1` and the ones the messages among `$2` are in now
 * (so concurrent writers cannot deadlock), and returns them; `existing` tells whether any of
 * the messages existed when the statement started.
 */
export function lockThreads(n: Names): string {
  return `SELECT id, resource_id, EXISTS (SELECT 1 FROM ${n.messages} WHERE id = ANY($2::text[])) AS existing
    FROM ${n.threads}
    WHERE id = ANY($1::text[] || ARRAY(SELECT thread_id FROM ${n.messages} WHERE id = ANY($2::text[])))
    ORDER BY id FOR UPDATE`;
}

/** Locks the existing messages among `$1` in id order and returns their thread and resource. */
export function lockMessages(n: Names): string {
  return `SELECT id, thread_id, resource_id FROM ${n.messages} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`;
}

/** The threads the messages among `$1` are in now (a plain read, no lock). */
export function threadsOfMessages(n: Names): string {
  return `SELECT DISTINCT thread_id FROM ${n.messages} WHERE id = ANY($1::text[])`;
}

/**
 * The tail of both message saves, after their `old` (rows as they were) and `upserted` (rows
 * written) and `replaced` (old places of the rows overwritten) CTEs: moves the kept counts by
 * the difference and bumps `updatedAt` of every thread a message left or entered (to at least
 * the newest `createdAt` written into it).
 */
function keepCountsAndTouch(n: Names): string {
  return `), changes AS (
      SELECT thread_id, resource_id, sum(d)::int AS d FROM (
        SELECT thread_id, resource_id, 1 AS d FROM upserted
        UNION ALL SELECT thread_id, resource_id, -1 FROM replaced
      ) c GROUP BY thread_id, resource_id HAVING sum(d) <> 0
    ), counted AS (
      INSERT INTO ${n.counts} AS c (thread_id, resource_id, n)
      SELECT thread_id, resource_id, d FROM changes ORDER BY thread_id, resource_id
      ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = c.n + EXCLUDED.n
    ), touched AS (
      UPDATE ${n.threads} t
      SET updated_at = ${bumped('t.updated_at', '(SELECT max(u.created_at) FROM upserted u WHERE u.thread_id = t.id)')}
      WHERE t.id = ANY(ARRAY(SELECT thread_id FROM upserted UNION SELECT thread_id FROM replaced))
    )`;
}

/** Ids among the batch (`$1`, resources `$3`) whose stored row (`old`) has another resource. */
const STOLEN = `(SELECT coalesce(json_agg(old.id ORDER BY old.id), '[]') FROM old
        JOIN unnest($1::text[], $3::text[]) AS f(id, resource_id) USING (id) WHERE old.resource_id <> f.resource_id)`;

/**
 * A whole save of messages in one statement, outside any transaction (a statement is atomic on
 * its own): the parallel arrays `$1`–`$7` in id order, the target threads `$8`. First (an InitPlan gating the insert) it locks, in id order, the target
 * threads and the threads the messages are in; unless every target exists and belongs to its
 * messages' resource, and no existing message belongs to another resource (`ok`), nothing is
 * written (the caller then runs the save as a transaction, which finds out which refusal applies). Then the
 * insert takes the message locks in id order, keeps the counts and bumps `updatedAt` as
 * `saveMessages` does. An existing row whose thread or resource is no longer what this
 * statement's snapshot showed (another writer changed it while this one waited for a thread
 * lock), or whose thread is not locked, makes the update write a NULL `thread_id`: the statement
 * fails on the NOT NULL constraint, writes nothing, and the caller saves again in a transaction.
 * A row the snapshot showed but another writer deleted since is inserted afresh (`xmax = 0`
 * tells an inserted row from an updated one), so it moves no count out of its old thread.
 *
 * The statement is shaped so that every row it reads is found through a primary key, whatever
 * the table statistics say: a plan cached while the tables were small or never analysed (a
 * prepared statement's generic plan) must not scan them once they have grown. The messages and
 * the threads are looked up one id at a time (a lateral subquery, which the planner does not
 * flatten), the threads in id order (`COLLATE "C"`, the order of the column), so the lateral
 * `FOR UPDATE` takes their locks in that order; the touched threads are matched by `= ANY` of
 * an array.
 */
export function saveMessagesAtOnce(n: Names): string {
  return `WITH old AS (
      SELECT o.id, o.thread_id, o.resource_id FROM unnest($1::text[]) AS i(id)
      CROSS JOIN LATERAL (SELECT id, thread_id, resource_id FROM ${n.messages} WHERE id = i.id OFFSET 0) o
    ), locked AS (
      SELECT t.id, t.resource_id FROM (
        SELECT DISTINCT id COLLATE "C" AS id FROM unnest($8::text[] || ARRAY(SELECT thread_id FROM old)) AS x(id)
        ORDER BY 1
      ) ids
      CROSS JOIN LATERAL (SELECT id, resource_id FROM ${n.threads} WHERE id = ids.id FOR UPDATE) t
    ), gate AS (
      -- count(*) reads every locked row, so all the thread locks are held before the insert.
      SELECT (SELECT count(*) FROM locked) > 0 AND NOT EXISTS (
        SELECT 1 FROM unnest($2::text[], $3::text[]) AS m(thread_id, resource_id)
        LEFT JOIN locked t ON t.id = m.thread_id
        WHERE t.id IS NULL OR t.resource_id <> m.resource_id
      ) AND NOT EXISTS (
        SELECT 1 FROM old JOIN unnest($1::text[], $3::text[]) AS f(id, resource_id) USING (id)
        WHERE old.resource_id <> f.resource_id
      ) AS ok
    ), upserted AS (
      INSERT INTO ${n.messages} AS o (${MESSAGE_COLUMNS})
      SELECT id, thread_id, resource_id, role, content::jsonb, type, created_at
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
        AS m(id, thread_id, resource_id, role, content, type, created_at)
      WHERE (SELECT ok FROM gate)
      ON CONFLICT (id) DO UPDATE SET
        thread_id = CASE WHEN o.thread_id IN (SELECT id FROM locked)
            AND (o.thread_id, o.resource_id) = (SELECT old.thread_id, old.resource_id FROM old WHERE old.id = o.id)
          THEN EXCLUDED.thread_id END,
        resource_id = EXCLUDED.resource_id, role = EXCLUDED.role, content = EXCLUDED.content,
        type = EXCLUDED.type, created_at = EXCLUDED.created_at
      RETURNING id, thread_id, resource_id, created_at, xmax = 0 AS inserted
    ), replaced AS (
      SELECT old.thread_id, old.resource_id FROM old JOIN upserted USING (id) WHERE NOT upserted.inserted
    ${keepCountsAndTouch(n)}
    SELECT (SELECT ok FROM gate) AS ok`;
}

/**
 * Writes a batch of messages (parallel arrays `$1`–`$7`, in id order), keeps the message counts
 * and bumps the touched threads' `updatedAt` in one statement. `$8` are the threads this
 * transaction locked. The insert is the one pass that takes the message locks, in id order, for
 * new and existing rows alike, so concurrent saves queue up instead of deadlocking. An existing
 * row is overwritten only when it is in a locked thread: its old thread and resource are then
 * the ones this statement's snapshot shows (no other writer can change them while the thread is
 * locked), and move the counts; `stolen` lists those stored for another resource than the one
 * saved now (the caller refuses the batch and rolls back). A row in another thread (moved or
 * inserted by another writer since the threads were locked) is left alone and missing from
 * `written`; the caller starts over.
 */
export function saveMessages(n: Names): string {
  return `WITH old AS (
      SELECT id, thread_id, resource_id FROM ${n.messages}
      WHERE id = ANY($1::text[]) AND thread_id = ANY($8::text[])
    ), upserted AS (
      INSERT INTO ${n.messages} AS o (${MESSAGE_COLUMNS})
      SELECT id, thread_id, resource_id, role, content::jsonb, type, created_at
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
        AS m(id, thread_id, resource_id, role, content, type, created_at)
      ON CONFLICT (id) DO UPDATE SET thread_id = EXCLUDED.thread_id, resource_id = EXCLUDED.resource_id,
        role = EXCLUDED.role, content = EXCLUDED.content, type = EXCLUDED.type, created_at = EXCLUDED.created_at
      WHERE o.thread_id = ANY($8::text[])
      RETURNING id, thread_id, resource_id, created_at
    ), replaced AS (
      SELECT old.thread_id, old.resource_id FROM old JOIN upserted USING (id)
    ${keepCountsAndTouch(n)}
    SELECT count(*)::int AS written,
      ${STOLEN} AS stolen
    FROM upserted`;
}

/**
 * Applies partial patches (parallel arrays; NULL keeps a field) and bumps the touched threads'
 * `updatedAt` in one statement; returns the updated messages. Only the messages among `$6` (the
 * ones this transaction locked) are written: one inserted by another writer since is left alone,
 * as if this update had run before it.
 */
export function updateMessages(n: Names): string {
  return `WITH patched AS (
      UPDATE ${n.messages} m SET role = COALESCE(p.role, m.role), content = COALESCE(p.content::jsonb, m.content),
        type = COALESCE(p.type, m.type), created_at = COALESCE(p.created_at, m.created_at)
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
        AS p(id, role, content, type, created_at)
      WHERE m.id = p.id AND m.id = ANY($6::text[])
      RETURNING ${MESSAGE_COLUMNS.split(', ')
        .map((c) => `m.${c}`)
        .join(', ')}
    ), touched AS (
      UPDATE ${n.threads} t
      SET updated_at = ${bumped('t.updated_at', '(SELECT max(p.created_at) FROM patched p WHERE p.thread_id = t.id)')}
      WHERE t.id IN (SELECT thread_id FROM patched)
    )
    SELECT ${MESSAGE_COLUMNS} FROM patched ORDER BY ${messageOrder('ASC')}`;
}

/**
 * Deletes the messages among `$1` (the ones this transaction locked), lowers the kept counts and
 * bumps their threads' `updatedAt` in one statement.
 */
export function deleteMessages(n: Names): string {
  return `WITH gone AS (
      DELETE FROM ${n.messages} WHERE id = ANY($1::text[]) RETURNING thread_id, resource_id
    ), counted AS (
      UPDATE ${n.counts} c SET n = c.n - g.k
      FROM (SELECT thread_id, resource_id, count(*)::int AS k FROM gone GROUP BY thread_id, resource_id) g
      WHERE c.thread_id = g.thread_id AND c.resource_id = g.resource_id
    )
    UPDATE ${n.threads} SET updated_at = ${bumped('updated_at')} WHERE id IN (SELECT thread_id FROM gone)`;
}

export function getResource(n: Names): string {
  return `SELECT ${RESOURCE_COLUMNS} FROM ${n.resources} WHERE id = $1`;
}

/**
 * Creates or updates a resource in one statement: `workingMemory` replaced only when `$5` is
 * true, metadata merged with `||`, `updatedAt` set to `$4`.
 */
export function upsertResource(n: Names): string {
  return `INSERT INTO ${n.resources} AS r (${RESOURCE_COLUMNS}) VALUES ($1, $2, $3::jsonb, $4, $4)
    ON CONFLICT (id) DO UPDATE SET
      working_memory = CASE WHEN $5::boolean THEN EXCLUDED.working_memory ELSE r.working_memory END,
      metadata = r.metadata || EXCLUDED.metadata, updated_at = EXCLUDED.updated_at
    RETURNING ${RESOURCE_COLUMNS}`;
}

/** Makes sure a resource row exists so it can be locked. */
export function ensureResource(n: Names): string {
  return `INSERT INTO ${n.resources} (${RESOURCE_COLUMNS}) VALUES ($1, NULL, '{}'::jsonb, $2, $2)
    ON CONFLICT (id) DO NOTHING`;
}

/** One resource's working memory; `FOR UPDATE` when `lock`. */
export function readResourceMemory(n: Names, lock: boolean): string {
  return `SELECT working_memory FROM ${n.resources} WHERE id = $1${lock ? ' FOR UPDATE' : ''}`;
}

export function writeResourceMemory(n: Names): string {
  return `UPDATE ${n.resources} SET working_memory = $2, updated_at = $3 WHERE id = $1`;
}

/**
 * Writes `$2` as a resource's working memory only if it is still what was read: `$4` when the
 * row existed (`$5`), else no row at all (then it is created). Returns a row when written.
 */
export function compareAndSetResourceMemory(n: Names): string {
  return `INSERT INTO ${n.resources} AS r (${RESOURCE_COLUMNS}) VALUES ($1, $2, '{}'::jsonb, $3, $3)
    ON CONFLICT (id) DO UPDATE SET working_memory = EXCLUDED.working_memory, updated_at = EXCLUDED.updated_at
      WHERE $5::boolean AND r.working_memory IS NOT DISTINCT FROM $4::text
    RETURNING 1`;
}

/** A thread's working memory (a JSON value in its metadata); `FOR UPDATE` when `lock`. */
export function readThreadMemory(n: Names, lock: boolean): string {
  return `SELECT metadata -> 'workingMemory' AS memory FROM ${n.threads} WHERE id = $1${lock ? ' FOR UPDATE' : ''}`;
}

export function writeThreadMemory(n: Names): string {
  return `UPDATE ${n.threads} SET metadata = metadata || jsonb_build_object('workingMemory', $2::text),
      updated_at = ${bumped('updated_at')} WHERE id = $1`;
}

/** Writes a thread's working memory only if it is still `$3` (JSON; NULL for none). */
export function compareAndSetThreadMemory(n: Names): string {
  return `UPDATE ${n.threads} SET metadata = metadata || jsonb_build_object('workingMemory', $2::text),
      updated_at = ${bumped('updated_at')} WHERE id = $1 AND (metadata -> 'workingMemory') IS NOT DISTINCT FROM $3::jsonb
    RETURNING 1`;
}
