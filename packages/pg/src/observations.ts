import type * as core from '@engram/core/driver';
import type { Connection } from './connection.ts';
import type { PostgresTx } from './driver.ts';
import { errorCode } from './errors.ts';
import { timestamp } from './mapping.ts';
import type { Names } from './sql.ts';

/** A row as selected: `bigint` columns arrive as text, the body as the JSON string literal stored. */
interface Row {
  key: string;
  resourceId: string;
  threadId: string | null;
  generation: string;
  version: string;
  body: string;
  updatedAt: Date;
}

/**
 * Observation logs in `<prefix>observations`, one row per `(key, generation)`. The body is stored
 * as a JSON string literal in a `text` column: PostgreSQL text holds no NUL character, and the
 * literal reads back as exactly the string written, whatever it holds. Each swap is one statement,
 * atomic by itself (no transaction, no session state: safe behind PgBouncer in transaction mode):
 * an `UPDATE` of the expected row at the expected version, which a concurrent swap of the same
 * row waits for and then finds changed, and for a new generation the `INSERT` of the next row.
 */
export class PostgresObservationDriver implements core.ObservationDriver<PostgresTx> {
  private readonly sql: ReturnType<typeof statements>;

  constructor(
    private readonly db: Connection,
    n: Names,
  ) {
    this.sql = statements(n);
  }

  async head(key: string): Promise<core.ObservationRow | null> {
    const [row] = await this.db.query<Row>(this.sql.head, [key], true);
    return row ? toRow(row) : null;
  }

  async generations(key: string): Promise<core.ObservationRow[]> {
    return (await this.db.query<Row>(this.sql.generations, [key], true)).map(toRow);
  }

  async swap(expected: core.ObservationVersion | null, next: core.ObservationRow): Promise<boolean> {
    const body = JSON.stringify(next.body);
    const at = timestamp(next.updatedAt);
    if (expected === null) {
      const values = [next.key, next.resourceId, next.threadId, body, at];
      return (await this.db.query(this.sql.first, values, true)).length === 1;
    }
    const compared = [next.key, expected.generation, expected.version, next.version];
    if (next.generation === expected.generation) {
      return (
        (await this.db.query(this.sql.replace, [...compared, body, at, next.resourceId], true)).length === 1
      );
    }
    const values = [...compared, next.generation, next.resourceId, next.threadId, body, at];
    try {
      return (await this.db.query(this.sql.seal, values, true)).length === 1;
    } catch (error) {
      // The next generation exists: another swap won (the whole statement wrote nothing).
      if (errorCode(error) === '23505') return false;
      throw error;
    }
  }

  async deleteByThread(tx: PostgresTx, threadId: string): Promise<void> {
    await tx.client.query(this.sql.deleteByThread, [threadId]);
  }

  /**
   * The resource-scope log (thread-scope logs go with their threads). A swap in flight that starts
   * a generation holds the newest row and inserts the next: the `DELETE` waits for the row, then
   * does not see the insert (its snapshot is older). Deleting again until nothing is found removes
   * it; a later swap finds its row deleted and writes nothing.
   */
  async deleteByResource(tx: PostgresTx, resourceId: string): Promise<void> {
    let deleted: number | null;
    do {
      deleted = (await tx.client.query(this.sql.deleteByKey, [`resource:${resourceId}`])).rowCount;
    } while (deleted);
  }

  /** A log summarises messages; it is not rewritten when one is deleted. */
  async deleteByMessages(): Promise<void> {}
}

const COLUMNS = `key, resource_id AS "resourceId", thread_id AS "threadId", generation, version, body, updated_at AS "updatedAt"`;

/** The statement texts, fixed per store (prepared when the connection allows it). */
function statements(n: Names) {
  const t = n.observations;
  return {
    head: `SELECT ${COLUMNS} FROM ${t} WHERE key = $1 ORDER BY generation DESC LIMIT 1`,
    generations: `SELECT ${COLUMNS} FROM ${t} WHERE key = $1 ORDER BY generation`,
    /** Generation 1, version 1, unless the log has a row: a row when written. */
    first: `INSERT INTO ${t} (key, generation, resource_id, thread_id, version, body, updated_at)
      VALUES ($1, 1, $2, $3, 1, $4, $5) ON CONFLICT (key, generation) DO NOTHING RETURNING 1`,
    /**
     * Replaces generation `$2` (every field of it, the owner too: a thread may have moved) if it
     * is still at version `$3`: a row when written.
     */
    replace: `UPDATE ${t} SET version = $4, body = $5, updated_at = $6, resource_id = $7
      WHERE key = $1 AND generation = $2 AND version = $3 RETURNING 1`,
    /**
     * Raises generation `$2` to version `$4` if it is still at version `$3`, and adds generation
     * `$5`: a row when written; a unique violation (nothing written) when `$5` exists.
     */
    seal: `WITH sealed AS (
        UPDATE ${t} SET version = $4 WHERE key = $1 AND generation = $2 AND version = $3 RETURNING key
      )
      INSERT INTO ${t} (key, generation, resource_id, thread_id, version, body, updated_at)
        SELECT key, $5::bigint, $6::text, $7::text, $4::bigint, $8::text, $9::timestamptz FROM sealed RETURNING 1`,
    deleteByThread: `DELETE FROM ${t} WHERE thread_id = $1`,
    deleteByKey: `DELETE FROM ${t} WHERE key = $1`,
  };
}

function toRow(row: Row): core.ObservationRow {
  return {
    key: row.key,
    resourceId: row.resourceId,
    threadId: row.threadId,
    generation: Number(row.generation),
    version: Number(row.version),
    body: JSON.parse(row.body) as string,
    updatedAt: row.updatedAt,
  };
}
