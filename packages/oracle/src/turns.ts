import type * as core from '@engram/core/driver';
import type { OracleDriver } from './driver.ts';
import { textBind } from './mapping.ts';
import type { Session } from './session.ts';
import { chunks, type Dialect, inList, type Statement } from './sql.ts';

/**
 * Turn records in `<prefix>turns`, one row per turn keyed by the id of its first message. The
 * body is stored as a JSON string literal in a CLOB, as observation bodies are: never `''` (which
 * Oracle stores as NULL), read back exactly, NUL included. `created_at` is epoch milliseconds
 * (`NUMBER(16)`), exact for every `Date`. `list` reads the index `(thread_id, created_at, id)`.
 */
export function oracleTurns(driver: OracleDriver): core.TurnDriver<Session> {
  const read = async (statement: Statement) =>
    (await driver.read((s) => s.rows<TurnRowColumns>(statement))).map(rowToTurn);
  return {
    put: async (s, row) => {
      await s.upsert(mergeTurn(driver.dialect, row));
    },
    get: async (id) => (await read(selectTurn(driver.dialect, id)))[0] ?? null,
    list: (threadId, limit, before) => read(selectTurns(driver.dialect, threadId, limit, before)),
    deleteByThread: async (s, threadId) => {
      await s.run(deleteTurnsOfThread(driver.dialect, threadId));
    },
    deleteByMessages: async (s, ids) => {
      for (const chunk of chunks(ids)) await s.run(deleteTurnsByIds(driver.dialect, chunk));
    },
  };
}

/** A row as selected: upper-case keys, the CLOB fetched as a string. */
export type TurnRowColumns = Record<'ID' | 'THREAD_ID' | 'RESOURCE_ID' | 'BODY', string> & {
  CREATED_AT: number;
};

/** A turn row from its columns. */
export function rowToTurn(row: TurnRowColumns): core.TurnRow {
  return {
    id: row.ID,
    threadId: row.THREAD_ID,
    resourceId: row.RESOURCE_ID,
    createdAt: new Date(Number(row.CREATED_AT)),
    body: JSON.parse(row.BODY) as string,
  };
}

const COLUMNS = 'id, thread_id, resource_id, created_at, body';

/** Inserts the row, or replaces the one with its id. */
export function mergeTurn(d: Dialect, row: core.TurnRow): Statement {
  return {
    sql: `MERGE INTO ${d.names.turns} t
USING (SELECT :id AS id FROM dual) s
ON (t.id = s.id)
WHEN MATCHED THEN UPDATE SET t.thread_id = :thread_id, t.resource_id = :resource_id,
  t.created_at = :created_at, t.body = :body
WHEN NOT MATCHED THEN INSERT (${COLUMNS})
  VALUES (s.id, :thread_id, :resource_id, :created_at, :body)`,
    binds: {
      id: row.id,
      thread_id: row.threadId,
      resource_id: row.resourceId,
      created_at: row.createdAt.getTime(),
      body: textBind(JSON.stringify(row.body), d.clobType),
    },
  };
}

/** One row by id. */
export function selectTurn(d: Dialect, id: string): Statement {
  return { sql: `SELECT ${COLUMNS} FROM ${d.names.turns} WHERE id = :id`, binds: { id } };
}

/** Up to `limit` rows of a thread, newest first (`created_at`, then `id`, descending), after `before`. */
export function selectTurns(
  d: Dialect,
  threadId: string,
  limit: number,
  before: core.TurnCursor | null,
): Statement {
  const older = before
    ? '\n  AND (created_at < :before_at OR (created_at = :before_at AND id < :before_id))'
    : '';
  return {
    sql: `SELECT ${COLUMNS} FROM ${d.names.turns}
WHERE thread_id = :thread_id${older}
ORDER BY created_at DESC, id DESC
FETCH FIRST :limit ROWS ONLY`,
    binds: {
      thread_id: threadId,
      limit,
      ...(before ? { before_at: before.createdAt.getTime(), before_id: before.id } : {}),
    },
  };
}

/** Every row of a thread. */
export function deleteTurnsOfThread(d: Dialect, threadId: string): Statement {
  return { sql: `DELETE FROM ${d.names.turns} WHERE thread_id = :thread_id`, binds: { thread_id: threadId } };
}

/** The rows with these ids (at most 1,000). */
export function deleteTurnsByIds(d: Dialect, ids: readonly string[]): Statement {
  const list = inList('id', ids);
  return { sql: `DELETE FROM ${d.names.turns} WHERE id IN (${list.sql})`, binds: list.binds };
}
