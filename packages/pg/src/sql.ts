import type { DateRange, Direction, MessageQuery, ThreadQuery } from '@engram/core/driver';
import { MESSAGE_COLUMNS, pageLimit, RESOURCE_COLUMNS, THREAD_COLUMNS } from '@engram/core/driver';
import { boundTimestamp } from './mapping.ts';

/** Quotes an SQL identifier (`my"name` → `"my""name"`). */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** `body` dollar-quoted with a tag it does not hold: a schema name in it may hold `$$`. */
export function dollarQuote(body: string): string {
  let tag = '$body$';
  for (let i = 0; body.includes(tag); i++) tag = `$body${i}$`;
  return `${tag}${body}${tag}`;
}

/** Schema-qualified, quoted names of everything the store creates, and the schema and prefix as given. */
export function names(schemaName: string, prefix: string) {
  const schema = quoteIdent(schemaName);
  const table = (name: string) => `${schema}.${quoteIdent(prefix + name)}`;
  return {
    schemaName,
    prefix,
    schema,
    threads: table('threads'),
    messages: table('messages'),
    resources: table('resources'),
    /** Messages per (thread, resource), kept by every message write. */
    counts: table('message_counts'),
    version: table('schema_version'),
    vectors: table('message_vectors'),
    /** The trigger function that moves a message's vectors with it (resource, thread, createdAt). */
    vectorsFollow: table('message_vectors_follow'),
    vectorSpace: table('vector_space'),
    /** Observation logs: one row per (key, generation). */
    observations: table('observations'),
    /** Store-level settings: one jsonb object per key. */
    settings: table('settings'),
    /** Turn records: one row per turn. */
    turns: table('turns'),
    /** The keyword index: analyzed terms of each message with text (see `keywords.ts`). */
    keywords: table('message_terms'),
    keywordsIndex: quoteIdent(`${prefix}message_terms_lexemes_idx`),
    /** The keyword index's document count and total length, in rows summed on read (see `keywords.ts`). */
    keywordStats: table('message_terms_stats'),
    /** The trigger function that keeps `keywordStats`. */
    keywordStatsKeep: table('message_terms_stats_keep'),
    /** Backfills a schema upgrade left to do, each with the last message id it has done. */
    backfills: table('backfills'),
  };
}

export type Names = ReturnType<typeof names>;

export type Statement = { text: string; values: unknown[] };

/** Collects positional parameters while a statement is built: `add` returns the placeholder. */
class Params {
  readonly values: unknown[] = [];
  add = (value: unknown) => `$${this.values.push(value)}`;
}

/** Columns under the fields' names: a row as `pg` parses it is a `Thread`, `Message` or `Resource`. */
const THREAD = `id, resource_id AS "resourceId", title, metadata, created_at AS "createdAt", updated_at AS "updatedAt"`;
const RESOURCE = `id, working_memory AS "workingMemory", metadata, created_at AS "createdAt", updated_at AS "updatedAt"`;
const message = (m = '') =>
  `${m}id, ${m}thread_id AS "threadId", ${m}resource_id AS "resourceId", ${m}role, ${m}content, ${m}type, ${m}created_at AS "createdAt"`;

/** `ORDER BY` for messages in `direction`, matching the `(thread_id, created_at, id)` index. */
const messageOrder = (direction: Direction, m = '') => `${m}created_at ${direction}, ${m}id ${direction}`;

/**
 * A thread's new `updatedAt` by core's rule: the latest of the stored one, the server's clock
 * once the row is locked (`clock_timestamp()`, not the transaction's start) and `newest`, the
 * newest `createdAt` written into the thread (NULL for none: `GREATEST` skips NULLs).
 */
const bumped = (column: string, newest?: string) =>
  `GREATEST(${column}, clock_timestamp()${newest ? `, ${newest}` : ''})`;

/** The rows of the parallel arrays `$1`–`$7` (see `messageArrays`), ready to insert. */
const ROWS = `SELECT id, thread_id, resource_id, role, content::jsonb, type, created_at
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
        AS m(id, thread_id, resource_id, role, content, type, created_at)`;

/** The store's fixed statement texts, built once per store. */
export function statements(n: Names) {
  const threadMemory = `SELECT metadata -> 'workingMemory' AS memory FROM ${n.threads} WHERE id = $1`;
  const resourceMemory = `SELECT working_memory AS memory FROM ${n.resources} WHERE id = $1`;
  const setThreadMemory = `UPDATE ${n.threads} SET metadata = metadata || jsonb_build_object('workingMemory', $2::text),
      updated_at = ${bumped('updated_at')} WHERE id = $1`;
  return {
    getThread: `SELECT ${THREAD} FROM ${n.threads} WHERE id = $1`,
    upsertThread: `INSERT INTO ${n.threads} (${THREAD_COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)
      ON CONFLICT (id) DO UPDATE SET resource_id = EXCLUDED.resource_id, title = EXCLUDED.title,
        metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`,
    /** Returns no row when the id was taken. */
    insertThread: `INSERT INTO ${n.threads} (${THREAD_COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)
      ON CONFLICT (id) DO NOTHING RETURNING id`,
    /** Title kept when `$2` is NULL; metadata merged with one `||`; `updatedAt` bumped. */
    updateThread: `UPDATE ${n.threads} SET title = COALESCE($2, title), metadata = metadata || $3::jsonb,
      updated_at = ${bumped('updated_at')} WHERE id = $1 RETURNING ${THREAD}`,
    /** Bumps `updatedAt` of the threads `$1`, each to at least its date in `$2` (NULL for none). */
    touchThreads: `UPDATE ${n.threads} t SET updated_at = ${bumped('t.updated_at', 'b.newest')}
      FROM unnest($1::text[], $2::timestamptz[]) AS b(id, newest) WHERE t.id = b.id`,
    /** Its messages, their counts and their vectors go with it (`ON DELETE CASCADE`). */
    deleteThread: `DELETE FROM ${n.threads} WHERE id = $1`,
    deleteResource: `DELETE FROM ${n.resources} WHERE id = $1`,
    messagesById: `SELECT ${message()} FROM ${n.messages} WHERE id = ANY($1::text[])`,
    /**
     * Locks, in id order, the threads `$1` and those the messages `$2` are in now; `existing` tells
     * whether any of the messages existed when the statement started.
     */
    lockThreads: `SELECT id, resource_id, EXISTS (SELECT 1 FROM ${n.messages} WHERE id = ANY($2::text[])) AS existing
      FROM ${n.threads}
      WHERE id = ANY($1::text[] || ARRAY(SELECT thread_id FROM ${n.messages} WHERE id = ANY($2::text[])))
      ORDER BY id FOR UPDATE`,
    /**
     * The thread and resource of the existing messages among `$1`, read (not locked) once their
     * threads are locked: no other writer moves or deletes a message without its thread's lock. The
     * message rows are locked by the write itself, in one pass in id order (`putMessages`,
     * `deleteMessages`): locking the existing ones first and inserting new ones after would be two
     * passes, and two saves could each wait for a row the other holds.
     */
    placeMessages: `SELECT id, thread_id, resource_id FROM ${n.messages} WHERE id = ANY($1::text[])`,
    /**
     * Inserts or replaces the messages `$1`–`$7`, in id order (the one ordered pass over the message
     * locks). An existing row is replaced only when among `$8`, the messages the write locked; one
     * another writer saved since is left out of `written`, and the write starts over.
     */
    putMessages: `WITH written AS (
        INSERT INTO ${n.messages} AS o (${MESSAGE_COLUMNS}) ${ROWS}
        ON CONFLICT (id) DO UPDATE SET thread_id = EXCLUDED.thread_id, resource_id = EXCLUDED.resource_id,
          role = EXCLUDED.role, content = EXCLUDED.content, type = EXCLUDED.type, created_at = EXCLUDED.created_at
        WHERE o.id = ANY($8::text[])
        RETURNING 1
      ) SELECT count(*)::int AS written FROM written`,
    /** Locks the rows in id order before deleting them (one ordered pass, as `putMessages`). */
    deleteMessages: `DELETE FROM ${n.messages} WHERE id IN (
        SELECT id FROM ${n.messages} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE)`,
    /** Adds the deltas `$3` to the kept counts of (thread `$1`, resource `$2`), threads the write locked. */
    addCounts: `INSERT INTO ${n.counts} AS c (thread_id, resource_id, n)
      SELECT * FROM unnest($1::text[], $2::text[], $3::int[])
      ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = c.n + EXCLUDED.n`,
    saveMessagesAtOnce: saveMessagesAtOnce(n),
    getResource: `SELECT ${RESOURCE} FROM ${n.resources} WHERE id = $1`,
    // COLLATE "C": UTF-8 byte order, as ids are ordered everywhere in engram.
    resourceIds: `SELECT id FROM ${n.resources} WHERE $1::text IS NULL OR id COLLATE "C" > $1
      ORDER BY id COLLATE "C" LIMIT $2`,
    /** `workingMemory` replaced only when `$5`, metadata merged with `||`, `updatedAt` set to `$4`. */
    upsertResource: `INSERT INTO ${n.resources} AS r (${RESOURCE_COLUMNS}) VALUES ($1, $2, $3::jsonb, $4, $4)
      ON CONFLICT (id) DO UPDATE SET
        working_memory = CASE WHEN $5::boolean THEN EXCLUDED.working_memory ELSE r.working_memory END,
        metadata = r.metadata || EXCLUDED.metadata, updated_at = EXCLUDED.updated_at
      RETURNING ${RESOURCE}`,
    /** Makes sure a resource row exists so it can be locked. */
    ensureResource: `INSERT INTO ${n.resources} (${RESOURCE_COLUMNS}) VALUES ($1, NULL, '{}'::jsonb, $2, $2)
      ON CONFLICT (id) DO NOTHING`,
    resourceMemory,
    lockResourceMemory: `${resourceMemory} FOR UPDATE`,
    writeResourceMemory: `UPDATE ${n.resources} SET working_memory = $2, updated_at = $3 WHERE id = $1`,
    /** Writes `$2` if the memory is still `$4` (JSON) or, unless `$5`, the row is new; a row if written. */
    compareAndSetResourceMemory: `INSERT INTO ${n.resources} AS r (${RESOURCE_COLUMNS}) VALUES ($1, $2, '{}'::jsonb, $3, $3)
      ON CONFLICT (id) DO UPDATE SET working_memory = EXCLUDED.working_memory, updated_at = EXCLUDED.updated_at
        WHERE $5::boolean AND to_jsonb(r.working_memory) IS NOT DISTINCT FROM $4::jsonb
      RETURNING 1`,
    /** A thread's working memory: a JSON value in its metadata. */
    threadMemory,
    lockThreadMemory: `${threadMemory} FOR UPDATE`,
    writeThreadMemory: setThreadMemory,
    /** Writes a thread's working memory only if it is still `$3` (JSON; NULL for none). */
    compareAndSetThreadMemory: `${setThreadMemory} AND (metadata -> 'workingMemory') IS NOT DISTINCT FROM $3::jsonb
      RETURNING 1`,
  };
}

export type Statements = ReturnType<typeof statements>;

/**
 * A page of `listThreads` and the count of all its threads: metadata keys compared as JSON values.
 * Each row of the page also carries the count (`PAGE_TOTAL`, a scalar subquery run once), so a
 * page and its total take one round trip; `count` is for an empty page.
 */
export function listThreads(n: Names, args: ThreadQuery): { page: Statement; count: Statement } {
  const p = new Params();
  const where = args.resourceId === undefined ? [] : [`resource_id = ${p.add(args.resourceId)}`];
  for (const [key, value] of Object.entries(args.metadata ?? {})) {
    where.push(`metadata -> ${p.add(key)} = ${p.add(JSON.stringify(value))}::jsonb`);
  }
  where.push(...dateConditions(args.dateRange, p));
  const from = `FROM ${n.threads}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
  const count = { text: `SELECT count(*)::int AS total ${from}`, values: [...p.values] };
  const column = args.orderBy === 'createdAt' ? 'created_at' : 'updated_at';
  let text = `SELECT ${THREAD}, (${count.text}) AS ${PAGE_TOTAL} ${from} ORDER BY ${column} ${args.direction}, id ${args.direction}`;
  if (args.perPage !== false)
    text += ` LIMIT ${p.add(args.perPage)} OFFSET ${p.add(args.page * args.perPage)}`;
  return { page: { text, values: p.values }, count };
}

/**
 * `column = value` as a condition no index serves. Beside a thread's equality it keeps the rows
 * read through the thread's index whatever the statistics say (in order, stopping at a limit, or
 * the thread's rows then sorted): on tables never analysed, a cached plan may otherwise read
 * every message of the resource through its index and sort them.
 */
export const filterOnly = (column: string, value: string) => `(${column} = ${value}) IS TRUE`;

/**
 * The message whose id is `id` (an expression of the row before), as a `FROM` item `t`: one
 * primary-key lookup per row (a lateral subquery the planner does not flatten, so a cached plan
 * never joins by reading a resource's messages instead).
 */
export const messageById = (n: Names, id: string) =>
  `CROSS JOIN LATERAL (SELECT id, thread_id, resource_id, created_at FROM ${n.messages} WHERE id = ${id} OFFSET 0) t`;

/** The rows `listMessages` pages over: one thread, optionally one resource and a date range. */
function messageFilter(n: Names, args: MessageQuery, p: Params): string {
  const where = [`thread_id = ${p.add(args.threadId)}`];
  if (args.resourceId !== undefined) where.push(filterOnly('resource_id', p.add(args.resourceId)));
  where.push(...dateConditions(args.dateRange, p));
  return `FROM ${n.messages} WHERE ${where.join(' AND ')}`;
}

/** The conditions of a date range on `created_at`. */
function dateConditions(range: DateRange | undefined, p: Params): string[] {
  const { start, end, startExclusive, endExclusive } = range ?? {};
  const where: string[] = [];
  if (start)
    where.push(`created_at >${startExclusive ? '' : '='} ${p.add(boundTimestamp(start))}::timestamptz`);
  if (end) where.push(`created_at <${endExclusive ? '' : '='} ${p.add(boundTimestamp(end))}::timestamptz`);
  return where;
}

/** The column of `pageMessages` rows that carries the total, when it does. */
export const PAGE_TOTAL = 'page_total';

/**
 * One page of a thread's messages, served by the `(thread_id, created_at, id)` index: the
 * newest N is an index scan backwards that stops after N rows. Without a date range each row
 * also carries the kept total (`PAGE_TOTAL`), so a page and its total take one round trip.
 */
export function pageMessages(n: Names, args: MessageQuery): Statement {
  const p = new Params();
  const paging = pageLimit(args.page, args.perPage);
  const total = args.dateRange === undefined ? `, (${keptCount(n, args, p)}) AS ${PAGE_TOTAL}` : '';
  let text = `SELECT ${message()}${total} ${messageFilter(n, args, p)} ORDER BY ${messageOrder(args.direction)}`;
  if (paging) text += ` LIMIT ${p.add(paging.limit)}`;
  if (paging?.offset) text += ` OFFSET ${p.add(paging.offset)}`;
  return { text, values: p.values };
}

/**
 * The number of rows `listMessages` pages over. Without a date range it is read from the kept
 * counts (one primary-key lookup, whatever the thread's length); with one, the rows are counted.
 */
export function countMessages(n: Names, args: MessageQuery): Statement {
  const p = new Params();
  if (args.dateRange === undefined) return { text: keptCount(n, args, p), values: p.values };
  return { text: `SELECT count(*)::int AS total ${messageFilter(n, args, p)}`, values: p.values };
}

/** The kept message count of the thread (and resource): one primary-key lookup. */
function keptCount(n: Names, args: MessageQuery, p: Params): string {
  let text = `SELECT COALESCE(sum(n), 0)::int AS total FROM ${n.counts} WHERE thread_id = ${p.add(args.threadId)}`;
  if (args.resourceId !== undefined) text += ` AND resource_id = ${p.add(args.resourceId)}`;
  return text;
}

/**
 * Every include window in one statement: for each target, its own thread's previous and next
 * messages (optionally restricted to one resource), each side an index range scan with a limit.
 * `withTotal` (no date range): each row also carries the kept count (`PAGE_TOTAL`), for a call
 * that reads windows only, so it takes one round trip.
 */
export function includeWindows(n: Names, query: MessageQuery, withTotal = false): Statement {
  const { include: windows, resourceId } = query;
  const p = new Params();
  const ids = p.add(windows.map((w) => w.id));
  const before = p.add(windows.map((w) => w.withPreviousMessages));
  const after = p.add(windows.map((w) => w.withNextMessages));
  const scope = resourceId === undefined ? '' : p.add(resourceId);
  const text = `WITH targets AS (
      SELECT t.thread_id, t.created_at, t.id, w.before, w.after
      FROM unnest(${ids}::text[], ${before}::int[], ${after}::int[]) AS w(id, before, after)
      ${messageById(n, 'w.id')}${scope ? ` WHERE t.resource_id = ${scope}` : ''}
    )
    SELECT x.*${withTotal ? `, (${keptCount(n, query, p)}) AS ${PAGE_TOTAL}` : ''} FROM ${windowsOf(n, scope)}`;
  return { text, values: p.values };
}

/**
 * The windows of the rows of a `targets` CTE (`thread_id`, `created_at`, `id`, `before`, `after`
 * of each target message), as `FROM` items: the target and its own thread's previous and next
 * messages (of the resource `scope`, a placeholder, when given), each side an index range scan
 * with a limit. `x` is the message.
 */
export function windowsOf(n: Names, scope: string): string {
  const inScope = scope ? ` AND m.resource_id = ${scope}` : '';
  return `targets, LATERAL (
      (SELECT ${message('m.')} FROM ${n.messages} m
        WHERE m.id = targets.id)
      UNION ALL
      (SELECT ${message('m.')} FROM ${n.messages} m
        WHERE m.thread_id = targets.thread_id${inScope}
          AND (m.created_at, m.id) < (targets.created_at, targets.id)
        ORDER BY ${messageOrder('DESC', 'm.')} LIMIT targets.before)
      UNION ALL
      (SELECT ${message('m.')} FROM ${n.messages} m
        WHERE m.thread_id = targets.thread_id${inScope}
          AND (m.created_at, m.id) > (targets.created_at, targets.id)
        ORDER BY ${messageOrder('ASC', 'm.')} LIMIT targets.after)
    ) AS x`;
}

/**
 * A whole save in one statement: the arrays `$1`–`$7`, the target threads `$8`, the keyword rows
 * `$9`/`$10` (ids with terms and their terms, see `keywords.indexTerms`). An InitPlan
 * (`gate`) first locks, in id order, the targets and the threads the messages are in, and nothing
 * is written (`ok` false: core runs the composed save) unless every target exists with its
 * messages' resource and no existing message is another resource's. The insert takes the message
 * locks in id order, then the counts move and the threads a message left or entered are bumped.
 * An existing row whose thread or resource changed since this statement's snapshot (moved while
 * this one waited for a lock), or whose thread is not locked, gets a NULL `thread_id` on purpose:
 * the statement fails on NOT NULL. A row deleted since the snapshot is inserted afresh (`xmax = 0`).
 * Every row is reached through a primary key one id at a time (a lateral subquery the planner does
 * not flatten; threads in the column's `COLLATE "C"` order), so a generic plan cached while the
 * tables were small never scans them once they have grown.
 */
function saveMessagesAtOnce(n: Names): string {
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
      INSERT INTO ${n.messages} AS o (${MESSAGE_COLUMNS}) ${ROWS}
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
    ), changes AS (
      SELECT thread_id, resource_id, sum(d)::int AS d FROM (
        SELECT thread_id, resource_id, 1 AS d FROM upserted
        UNION ALL SELECT thread_id, resource_id, -1 FROM replaced
      ) c GROUP BY thread_id, resource_id HAVING sum(d) <> 0
    ), counted AS (
      INSERT INTO ${n.counts} AS c (thread_id, resource_id, n)
      SELECT thread_id, resource_id, d FROM changes ORDER BY thread_id, resource_id
      ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = c.n + EXCLUDED.n
    ), unindexed AS (
      DELETE FROM ${n.keywords} WHERE (SELECT ok FROM gate)
        AND message_id = ANY($1::text[]) AND NOT (message_id = ANY($9::text[]))
    ), indexed AS (
      INSERT INTO ${n.keywords} (message_id, terms, length, lexemes)
      SELECT w.id, t.terms, cardinality(t.terms), array_to_tsvector(t.terms)
      FROM unnest($9::text[], $10::jsonb[]) AS w(id, json)
      CROSS JOIN LATERAL (SELECT ARRAY(SELECT jsonb_array_elements_text(w.json)) AS terms) t
      WHERE (SELECT ok FROM gate)
      ON CONFLICT (message_id) DO UPDATE
        SET terms = EXCLUDED.terms, length = EXCLUDED.length, lexemes = EXCLUDED.lexemes
    ), touched AS (
      UPDATE ${n.threads} t
      SET updated_at = ${bumped('t.updated_at', '(SELECT max(u.created_at) FROM upserted u WHERE u.thread_id = t.id)')}
      WHERE t.id = ANY(ARRAY(SELECT thread_id FROM upserted UNION SELECT thread_id FROM replaced))
    )
    SELECT (SELECT ok FROM gate) AS ok`;
}
