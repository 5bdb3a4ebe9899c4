import type { ObservationDriver, ObservationRow, ObservationVersion } from '@engram/core/driver';
import type { Row } from '@libsql/client';
import type { Connection } from './connection.ts';
import { type Executor, exec } from './embedded.ts';
import { type Statement, TABLES } from './sql.ts';

const { observations } = TABLES;

const COLUMNS = 'key, resource_id, thread_id, generation, version, body, updated_at';

/** The rows of one log, newest first (`head`) or oldest first. */
const select = (key: string, newest: boolean): Statement => ({
  sql: `SELECT ${COLUMNS} FROM ${observations} WHERE key = ? ORDER BY generation ${newest ? 'DESC LIMIT 1' : ''}`,
  args: [key],
  one: newest,
});

/** Generation 1 at version 1, unless the log has a row: one row changed when written. */
const first = (row: ObservationRow, body: string): Statement => ({
  sql: `INSERT INTO ${observations} (key, generation, resource_id, thread_id, version, body, updated_at)
    VALUES (?, 1, ?, ?, 1, ?, ?) ON CONFLICT (key, generation) DO NOTHING`,
  args: [row.key, row.resourceId, row.threadId, body, row.updatedAt.getTime()],
});

/**
 * Replaces the expected generation (every field of it, the owner too: a thread may have moved) if
 * it is still at the expected version: one row changed when written.
 */
const replace = (expected: ObservationVersion, row: ObservationRow, body: string): Statement => ({
  sql: `UPDATE ${observations} SET version = ?, resource_id = ?, body = ?, updated_at = ?
    WHERE key = ? AND generation = ? AND version = ?`,
  args: [
    row.version,
    row.resourceId,
    body,
    row.updatedAt.getTime(),
    row.key,
    expected.generation,
    expected.version,
  ],
});

/**
 * Raises the expected generation to the next version if it is still at the expected version and
 * has no successor: one row changed when the next generation may be added.
 */
const seal = (expected: ObservationVersion, row: ObservationRow): Statement => ({
  sql: `UPDATE ${observations} SET version = ? WHERE key = ? AND generation = ? AND version = ?
    AND NOT EXISTS (SELECT 1 FROM ${observations} WHERE key = ? AND generation = ?)`,
  args: [row.version, row.key, expected.generation, expected.version, row.key, row.generation],
});

const insert = (row: ObservationRow, body: string): Statement => ({
  sql: `INSERT INTO ${observations} (key, generation, resource_id, thread_id, version, body, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`,
  args: [row.key, row.generation, row.resourceId, row.threadId, row.version, body, row.updatedAt.getTime()],
});

function toRow(row: Row): ObservationRow {
  return {
    key: String(row.key),
    resourceId: String(row.resource_id),
    threadId: row.thread_id === null ? null : String(row.thread_id),
    generation: Number(row.generation),
    version: Number(row.version),
    body: JSON.parse(String(row.body)) as string,
    updatedAt: new Date(Number(row.updated_at)),
  };
}

/**
 * Observation logs in `engram_observations`, one row per `(key, generation)`. The body is stored
 * as a JSON string literal: SQLite keeps a NUL inside TEXT, but the engine and `@libsql/client`
 * read such a value back cut at the NUL; the literal holds none and parses back to exactly the
 * string written. A swap within a generation, and the first swap of a log, is one statement; a
 * swap that starts a generation raises the old row's version and inserts the new row in one write
 * transaction (`BEGIN IMMEDIATE` on embedded databases: no other writer between the two).
 */
export class LibSQLObservations implements ObservationDriver<Executor> {
  constructor(private readonly connection: Connection) {}

  private async changed(statement: Statement): Promise<boolean> {
    return (await this.connection.use((client) => client.execute(statement))).rowsAffected === 1;
  }

  async head(key: string): Promise<ObservationRow | null> {
    const { rows } = await this.connection.use((client) => client.execute(select(key, true)));
    return rows[0] ? toRow(rows[0]) : null;
  }

  async generations(key: string): Promise<ObservationRow[]> {
    return (await this.connection.use((client) => client.execute(select(key, false)))).rows.map(toRow);
  }

  swap(expected: ObservationVersion | null, next: ObservationRow): Promise<boolean> {
    const body = JSON.stringify(next.body);
    if (expected === null) return this.changed(first(next, body));
    if (next.generation === expected.generation) return this.changed(replace(expected, next, body));
    return this.connection.write(async (tx) => {
      if ((await tx.execute(seal(expected, next))).rowsAffected !== 1) return false;
      await tx.execute(insert(next, body));
      return true;
    });
  }

  deleteByThread(tx: Executor, threadId: string): Promise<void> {
    return exec(tx, { sql: `DELETE FROM ${observations} WHERE thread_id = ?`, args: [threadId] });
  }

  /** The resource-scope log (thread-scope logs go with their threads). */
  deleteByResource(tx: Executor, resourceId: string): Promise<void> {
    return exec(tx, { sql: `DELETE FROM ${observations} WHERE key = ?`, args: [`resource:${resourceId}`] });
  }

  /** A log summarises messages; it is not rewritten when one is deleted. */
  async deleteByMessages(): Promise<void> {}
}
