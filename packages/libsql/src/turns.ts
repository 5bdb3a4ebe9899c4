import type { TurnCursor, TurnDriver, TurnRow } from '@engram/core/driver';
import type { Row } from '@libsql/client';
import type { Connection } from './connection.ts';
import { type Executor, exec } from './embedded.ts';
import { IN_LIST, type Statement, TABLES } from './sql.ts';

const { turns } = TABLES;

const COLUMNS = 'id, thread_id, resource_id, created_at, body';

/** Up to `limit` rows of the thread, newest first, strictly older than the cursor. */
const page = (threadId: string, limit: number, before: TurnCursor | null): Statement => {
  const older = before ? 'AND (created_at < ? OR (created_at = ? AND id < ?))' : '';
  const at = before?.createdAt.getTime();
  return {
    sql: `SELECT ${COLUMNS} FROM ${turns} WHERE thread_id = ? ${older} ORDER BY created_at DESC, id DESC LIMIT ?`,
    args: before ? [threadId, at as number, at as number, before.id, limit] : [threadId, limit],
  };
};

function toRow(row: Row): TurnRow {
  return {
    id: String(row.id),
    threadId: String(row.thread_id),
    resourceId: String(row.resource_id),
    createdAt: new Date(Number(row.created_at)),
    body: JSON.parse(String(row.body)) as string,
  };
}

/**
 * Turn records in `engram_turns`, one row per turn, keyed by the id of the turn's first message.
 * The body is stored as a JSON string literal, as observation logs store theirs (a TEXT read stops
 * at a NUL); `created_at` is epoch milliseconds. `(thread_id, created_at, id)` serves `list`. A row
 * is written in the write transaction that read its thread's owner.
 */
export class LibSQLTurns implements TurnDriver<Executor> {
  constructor(private readonly connection: Connection) {}

  put(tx: Executor, row: TurnRow): Promise<void> {
    return exec(tx, {
      sql: `INSERT OR REPLACE INTO ${turns} (${COLUMNS}) VALUES (?, ?, ?, ?, ?)`,
      args: [row.id, row.threadId, row.resourceId, row.createdAt.getTime(), JSON.stringify(row.body)],
    });
  }

  async get(id: string): Promise<TurnRow | null> {
    const statement: Statement = {
      sql: `SELECT ${COLUMNS} FROM ${turns} WHERE id = ?`,
      args: [id],
      one: true,
    };
    const { rows } = await this.connection.use((client) => client.execute(statement));
    return rows[0] ? toRow(rows[0]) : null;
  }

  async list(threadId: string, limit: number, before: TurnCursor | null): Promise<TurnRow[]> {
    return (await this.connection.use((client) => client.execute(page(threadId, limit, before)))).rows.map(
      toRow,
    );
  }

  deleteByThread(tx: Executor, threadId: string): Promise<void> {
    return exec(tx, { sql: `DELETE FROM ${turns} WHERE thread_id = ?`, args: [threadId] });
  }

  deleteByMessages(tx: Executor, ids: string[]): Promise<void> {
    return exec(tx, { sql: `DELETE FROM ${turns} WHERE id ${IN_LIST}`, args: [JSON.stringify(ids)] });
  }
}
