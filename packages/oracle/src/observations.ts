import * as core from '@engram/core/driver';
import type { OracleDriver } from './driver.ts';
import { fromTimestampText, TIMESTAMP_FORMAT, textBind, toTimestampText } from './mapping.ts';
import type { Session } from './session.ts';
import { type Dialect, type Statement, timestampBind } from './sql.ts';

/**
 * Observation logs in `<prefix>observations`, one row per `(log_key, generation)`. The body is
 * stored as a JSON string literal in a CLOB: never `''` (which Oracle stores as NULL), and read
 * back as exactly the string written, NUL characters and lone surrogates included. A swap is one
 * transaction: an `UPDATE` of the expected row at the expected version (a concurrent swap of the
 * same row waits for it, then finds the version changed and updates nothing), and for a new
 * generation the `INSERT` of the next row, where ORA-00001 means another swap won.
 */
export function oracleObservations(driver: OracleDriver): core.ObservationDriver<Session> {
  const read = async (statement: Statement) =>
    (await driver.read((s) => s.rows<ObservationRowColumns>(statement))).map(rowToObservation);
  return {
    head: async (key) => (await read(selectObservations(driver.dialect, key, true)))[0] ?? null,
    generations: (key) => read(selectObservations(driver.dialect, key)),
    swap: (expected, next) =>
      driver
        .write(async (s) => {
          if (expected && (await s.run(updateObservation(driver.dialect, expected, next))) === 0)
            return false;
          if (next.generation !== expected?.generation) await s.run(insertObservation(driver.dialect, next));
          return true;
        })
        .catch((error: unknown) => {
          if (core.driverCode(error) === 'ORA-00001') return false; // rolled back: the row exists
          throw error;
        }),
    deleteByThread: async (s, threadId) => {
      await s.run(deleteObservationsOfThread(driver.dialect, threadId));
    },
    // A log summarises messages; it is not rewritten when one is deleted.
    deleteByMessages: async () => {},
    // A swap in flight starting a generation locks the newest row and inserts the next: the
    // DELETE waits for the row but does not see the insert (its read is older). Deleting again
    // until nothing is found removes it; a later swap finds its row deleted and writes nothing.
    deleteByResource: async (s, resourceId) => {
      let deleted: number;
      do deleted = await s.run(deleteResourceObservations(driver.dialect, resourceId));
      while (deleted > 0);
    },
  };
}

/** A row as selected: upper-case keys, the CLOB fetched as a string, `updated_at` as UTC text. */
export type ObservationRowColumns = Record<'LOG_KEY' | 'RESOURCE_ID' | 'BODY' | 'UPDATED_AT_TEXT', string> & {
  THREAD_ID: string | null;
  GENERATION: number;
  VERSION: number;
};

/** An observation row from its columns. */
export function rowToObservation(row: ObservationRowColumns): core.ObservationRow {
  return {
    key: row.LOG_KEY,
    resourceId: row.RESOURCE_ID,
    threadId: row.THREAD_ID,
    generation: Number(row.GENERATION),
    version: Number(row.VERSION),
    body: JSON.parse(row.BODY) as string,
    updatedAt: fromTimestampText(row.UPDATED_AT_TEXT),
  };
}

/** Every generation of a log, oldest first; with `head`, only the newest. */
export function selectObservations(d: Dialect, key: string, head = false): Statement {
  return {
    sql: `SELECT log_key, resource_id, thread_id, generation, version, body,
  TO_CHAR(updated_at, '${TIMESTAMP_FORMAT}') AS updated_at_text
FROM ${d.names.observations}
WHERE log_key = :log_key
ORDER BY generation${head ? ' DESC\nFETCH FIRST 1 ROWS ONLY' : ''}`,
    binds: { log_key: key },
  };
}

/**
 * Raises the expected row to `next.version` if it is still at the expected version, and when
 * `next` replaces it (same generation) writes its body, owner and `updated_at` too (a thread may
 * have moved to another resource). One row, or none.
 */
export function updateObservation(
  d: Dialect,
  expected: core.ObservationVersion,
  next: core.ObservationRow,
): Statement {
  const replace = next.generation === expected.generation;
  return {
    sql: `UPDATE ${d.names.observations}
SET version = :next_version${replace ? `, resource_id = :resource_id, body = :body, updated_at = ${timestampBind('updated_at')}` : ''}
WHERE log_key = :log_key AND generation = :generation AND version = :version`,
    binds: {
      next_version: next.version,
      log_key: next.key,
      generation: expected.generation,
      version: expected.version,
      ...(replace ? { resource_id: next.resourceId, ...bodyBinds(d, next) } : {}),
    },
  };
}

/** Inserts a new generation (ORA-00001 when it exists). */
export function insertObservation(d: Dialect, row: core.ObservationRow): Statement {
  return {
    sql: `INSERT INTO ${d.names.observations} (log_key, generation, resource_id, thread_id, version, body, updated_at)
VALUES (:log_key, :generation, :resource_id, :thread_id, :version, :body, ${timestampBind('updated_at')})`,
    binds: {
      log_key: row.key,
      generation: row.generation,
      resource_id: row.resourceId,
      thread_id: row.threadId,
      version: row.version,
      ...bodyBinds(d, row),
    },
  };
}

/** Deletes every generation of the logs of a thread. */
export function deleteObservationsOfThread(d: Dialect, threadId: string): Statement {
  return {
    sql: `DELETE FROM ${d.names.observations} WHERE thread_id = :thread_id`,
    binds: { thread_id: threadId },
  };
}

/** The resource-scope log of a resource (thread-scope logs go with their threads). */
export function deleteResourceObservations(d: Dialect, resourceId: string): Statement {
  return {
    sql: `DELETE FROM ${d.names.observations} WHERE log_key = :log_key`,
    binds: { log_key: `resource:${resourceId}` },
  };
}

/** The body as a JSON string literal (a CLOB bind past 4,000 bytes) and `updated_at` as UTC text. */
function bodyBinds(d: Dialect, row: core.ObservationRow) {
  return {
    body: textBind(JSON.stringify(row.body), d.clobType),
    updated_at: toTimestampText(row.updatedAt, 'updatedAt'),
  };
}
