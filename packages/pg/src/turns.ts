import type * as core from '@engram/core/driver';
import type { Connection } from './connection.ts';
import type { PostgresTx } from './driver.ts';
import type { Names } from './sql.ts';

/** A row as selected: `created_at` (bigint ms) arrives as text, the body as the JSON string literal stored. */
interface Row {
  id: string;
  threadId: string;
  resourceId: string;
  createdAt: string;
  body: string;
}

/**
 * Turn records in `<prefix>turns`, one row per turn, keyed by the id of the turn's first message.
 * The body is stored as a JSON string literal in a `text` column, as observation bodies are
 * (PostgreSQL text holds no NUL); `created_at` is epoch milliseconds (`bigint`), exact for every
 * `Date`. `list` reads the index `(thread_id, created_at, id)` backwards from the cursor. A row is
 * written in the transaction that locked its thread (`places`), as `deleteThread` locks it before
 * deleting the thread's rows; reads stand alone (safe behind PgBouncer in transaction mode).
 */
export class PostgresTurnDriver implements core.TurnDriver<PostgresTx> {
  private readonly sql: ReturnType<typeof statements>;

  constructor(
    private readonly db: Connection,
    n: Names,
  ) {
    this.sql = statements(n);
  }

  async put(tx: PostgresTx, row: core.TurnRow): Promise<void> {
    const values = [row.id, row.threadId, row.resourceId, row.createdAt.getTime(), JSON.stringify(row.body)];
    await tx.client.query(this.sql.put, values);
  }

  async get(id: string): Promise<core.TurnRow | null> {
    const [row] = await this.db.query<Row>(this.sql.get, [id], true);
    return row ? toRow(row) : null;
  }

  async list(threadId: string, limit: number, before: core.TurnCursor | null): Promise<core.TurnRow[]> {
    const rows = before
      ? await this.db.query<Row>(
          this.sql.before,
          [threadId, before.createdAt.getTime(), before.id, limit],
          true,
        )
      : await this.db.query<Row>(this.sql.newest, [threadId, limit], true);
    return rows.map(toRow);
  }

  async deleteByThread(tx: PostgresTx, threadId: string): Promise<void> {
    await tx.client.query(this.sql.deleteByThread, [threadId]);
  }

  async deleteByMessages(tx: PostgresTx, ids: string[]): Promise<void> {
    await tx.client.query(this.sql.deleteByIds, [ids]);
  }
}

const COLUMNS = `id, thread_id AS "threadId", resource_id AS "resourceId", created_at AS "createdAt", body`;

/** The statement texts, fixed per store (prepared when the connection allows it). */
function statements(n: Names) {
  const t = n.turns;
  const order = 'ORDER BY created_at DESC, id DESC';
  return {
    put: `INSERT INTO ${t} (id, thread_id, resource_id, created_at, body) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (id) DO UPDATE SET thread_id = EXCLUDED.thread_id, resource_id = EXCLUDED.resource_id,
        created_at = EXCLUDED.created_at, body = EXCLUDED.body`,
    get: `SELECT ${COLUMNS} FROM ${t} WHERE id = $1`,
    newest: `SELECT ${COLUMNS} FROM ${t} WHERE thread_id = $1 ${order} LIMIT $2`,
    before: `SELECT ${COLUMNS} FROM ${t} WHERE thread_id = $1 AND (created_at, id) < ($2::bigint, $3::text) ${order} LIMIT $4`,
    deleteByThread: `DELETE FROM ${t} WHERE thread_id = $1`,
    deleteByIds: `DELETE FROM ${t} WHERE id = ANY($1::text[])`,
  };
}

function toRow(row: Row): core.TurnRow {
  return {
    id: row.id,
    threadId: row.threadId,
    resourceId: row.resourceId,
    createdAt: new Date(Number(row.createdAt)),
    body: JSON.parse(row.body) as string,
  };
}
