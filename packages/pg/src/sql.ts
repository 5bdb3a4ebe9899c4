import type { DateRange, Direction, NormalizedListMessages, NormalizedListThreads } from '@engram/core';
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

export const THREAD_COLUMNS = 'id, resource_id, title, metadata, "createdAt", "updatedAt"';
export const MESSAGE_COLUMNS = 'id, thread_id, resource_id, role, content, type, "createdAt"';
export const RESOURCE_COLUMNS = 'id, "workingMemory", metadata, "createdAt", "updatedAt"';

/** `ORDER BY` for messages in `direction`, matching the `(thread_id, "createdAt", id)` index. */
function messageOrder(direction: Direction, alias = ''): string {
  return `${alias}"createdAt" ${direction}, ${alias}id ${direction}`;
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
      metadata = EXCLUDED.metadata, "createdAt" = EXCLUDED."createdAt", "updatedAt" = EXCLUDED."updatedAt"`;
}

/** Title kept when `$2` is NULL; metadata merged with one `||`; `$4` is the new `updatedAt`. */
export function updateThread(n: Names): string {
  return `UPDATE ${n.threads} SET title = COALESCE($2, title), metadata = metadata || $3::jsonb,
      "updatedAt" = $4 WHERE id = $1 RETURNING ${THREAD_COLUMNS}`;
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
  const column = args.orderBy === 'createdAt' ? '"createdAt"' : '"updatedAt"';
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
      `"createdAt" ${range.startExclusive ? '>' : '>='} ${p.add(boundTimestamp(range.start))}::timestamptz`,
    );
  }
  if (range?.end) {
    out.push(
      `"createdAt" ${range.endExclusive ? '<' : '<='} ${p.add(boundTimestamp(range.end))}::timestamptz`,
    );
  }
  return out;
}

/**
 * One page of a thread's messages, served by the `(thread_id, "createdAt", id)` index: the
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
      SELECT t.thread_id, t."createdAt", t.id, w.before, w.after
      FROM unnest(${ids}::text[], ${before}::int[], ${after}::int[]) AS w(id, before, after)
      JOIN ${n.messages} t ON t.id = w.id${inScope('t')}
    )
    SELECT x.* FROM targets, LATERAL (
      (SELECT ${cols} FROM ${n.messages} m
        WHERE m.id = targets.id)
      UNION ALL
      (SELECT ${cols} FROM ${n.messages} m
        WHERE m.thread_id = targets.thread_id${inScope('m')}
          AND (m."createdAt", m.id) < (targets."createdAt", targets.id)
        ORDER BY ${messageOrder('DESC', 'm.')} LIMIT targets.before)
      UNION ALL
      (SELECT ${cols} FROM ${n.messages} m
        WHERE m.thread_id = targets.thread_id${inScope('m')}
          AND (m."createdAt", m.id) > (targets."createdAt", targets.id)
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
 * Writes a batch of messages (parallel arrays `$1`–`$7`, in id order), the changes to the kept
 * counts (`$9`–`$11`) and the touched threads' `updatedAt` (`$12`, `$13`) in one statement. An
 * existing row is overwritten only when its id is among `$8` (the messages this transaction
 * locked); one inserted by another writer since is left alone and missing from `written`, and
 * the caller starts over.
 */
export function saveMessages(n: Names): string {
  return `WITH upserted AS (
      INSERT INTO ${n.messages} AS o (${MESSAGE_COLUMNS})
      SELECT id, thread_id, resource_id, role, content::jsonb, type, "createdAt"
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
        AS m(id, thread_id, resource_id, role, content, type, "createdAt")
      ON CONFLICT (id) DO UPDATE SET thread_id = EXCLUDED.thread_id, resource_id = EXCLUDED.resource_id,
        role = EXCLUDED.role, content = EXCLUDED.content, type = EXCLUDED.type, "createdAt" = EXCLUDED."createdAt"
      WHERE o.id = ANY($8::text[])
      RETURNING 1
    ), counted AS (
      INSERT INTO ${n.counts} AS c (thread_id, resource_id, n)
      SELECT * FROM unnest($9::text[], $10::text[], $11::int[])
      ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = c.n + EXCLUDED.n
    ), touched AS (
      UPDATE ${n.threads} SET "updatedAt" = $12 WHERE id = ANY($13::text[])
    )
    SELECT count(*)::int AS written FROM upserted`;
}

/**
 * Applies partial patches (parallel arrays; NULL keeps a field) and bumps the touched threads'
 * `updatedAt` in one statement; returns the updated messages. Only the messages among `$7` (the
 * ones this transaction locked) are written: one inserted by another writer since is left alone,
 * as if this update had run before it.
 */
export function updateMessages(n: Names): string {
  return `WITH patched AS (
      UPDATE ${n.messages} m SET role = COALESCE(p.role, m.role), content = COALESCE(p.content::jsonb, m.content),
        type = COALESCE(p.type, m.type), "createdAt" = COALESCE(p."createdAt", m."createdAt")
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
        AS p(id, role, content, type, "createdAt")
      WHERE m.id = p.id AND m.id = ANY($7::text[])
      RETURNING ${MESSAGE_COLUMNS.split(', ')
        .map((c) => `m.${c}`)
        .join(', ')}
    ), touched AS (
      UPDATE ${n.threads} SET "updatedAt" = $6 WHERE id IN (SELECT thread_id FROM patched)
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
    UPDATE ${n.threads} SET "updatedAt" = $2 WHERE id IN (SELECT thread_id FROM gone)`;
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
      "workingMemory" = CASE WHEN $5::boolean THEN EXCLUDED."workingMemory" ELSE r."workingMemory" END,
      metadata = r.metadata || EXCLUDED.metadata, "updatedAt" = EXCLUDED."updatedAt"
    RETURNING ${RESOURCE_COLUMNS}`;
}

/** Makes sure a resource row exists so it can be locked. */
export function ensureResource(n: Names): string {
  return `INSERT INTO ${n.resources} (${RESOURCE_COLUMNS}) VALUES ($1, NULL, '{}'::jsonb, $2, $2)
    ON CONFLICT (id) DO NOTHING`;
}

export function lockResourceMemory(n: Names): string {
  return `SELECT "workingMemory" FROM ${n.resources} WHERE id = $1 FOR UPDATE`;
}

export function writeResourceMemory(n: Names): string {
  return `UPDATE ${n.resources} SET "workingMemory" = $2, "updatedAt" = $3 WHERE id = $1`;
}

export function lockThreadMemory(n: Names): string {
  return `SELECT metadata -> 'workingMemory' AS memory FROM ${n.threads} WHERE id = $1 FOR UPDATE`;
}

export function writeThreadMemory(n: Names): string {
  return `UPDATE ${n.threads} SET metadata = metadata || jsonb_build_object('workingMemory', $2::text),
      "updatedAt" = $3 WHERE id = $1`;
}
