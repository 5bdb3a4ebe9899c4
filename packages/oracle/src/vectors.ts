import * as core from '@engram/core/driver';
import type { OracleDriver } from './driver.ts';
import { fromTimestampText, TIMESTAMP_FORMAT } from './mapping.ts';
import type { Session } from './session.ts';
import { chunks, type Dialect, inList, type Statement } from './sql.ts';

/**
 * Vectors in `<prefix>message_vectors` (`VECTOR(*, FLOAT32)`, one row per message and space,
 * bound as `Float32Array` with `DB_TYPE_VECTOR`), next to the messages. Search is exact (see
 * `searchVectors`). Needs Oracle 23ai; on an older server every primitive fails with
 * `UNSUPPORTED` (and the driver stops declaring the domain once open).
 */
export function oracleVectors(driver: OracleDriver): core.VectorDriver<Session> {
  const dialect = (): Dialect => {
    if (driver.dialect.vectors) return driver.dialect;
    const why = 'semantic recall needs Oracle Database 23ai or later (the VECTOR type); this server is older';
    throw new core.MemoryError('UNSUPPORTED', `oracle: ${why}`, { adapter: 'oracle' });
  };
  const getSpace = async (): Promise<core.EmbeddingSpace | null> => {
    const statement = selectVectorSpace(dialect());
    const [row] = await driver.read((s) => s.rows<{ EMBEDDER: string; DIMENSIONS: number }>(statement));
    return row ? { id: row.EMBEDDER, dimensions: Number(row.DIMENSIONS) } : null;
  };
  return {
    search: 'exact',
    getSpace,
    claimSpace: async (space) => {
      await driver.write((s) => s.upsert(claimVectorSpace(dialect(), space.id, space.dimensions)));
      return (await getSpace()) as core.EmbeddingSpace;
    },
    upsertVectors: (space, vectors) =>
      driver.write(async (s) => {
        for (const v of vectors) {
          // ORA-02291: the message was deleted by a session that committed after this MERGE read
          // it. Oracle rolls back just this statement; the vector is skipped like any absent one.
          await s.upsert(upsertVector(dialect(), space.id, v)).catch((error: unknown) => {
            if (core.driverCode(error) !== 'ORA-02291') throw error;
          });
        }
      }),
    getVectors: (space, ids) =>
      driver.read(async (s) => {
        const rows = await s.rowsByChunk<Record<'MESSAGE_ID' | 'HASH', string>>(ids, (chunk) =>
          selectVectors(dialect(), space.id, chunk),
        );
        return rows.map((row) => ({ messageId: row.MESSAGE_ID, hash: row.HASH }));
      }),
    readVectors: (space, ids) =>
      driver.read(async (s) => {
        const rows = await s.rowsByChunk<{ MESSAGE_ID: string; HASH: string; EMBEDDING: ArrayLike<number> }>(
          ids,
          (chunk) => readVectors(dialect(), space.id, chunk),
        );
        return rows.map((row) => ({
          messageId: row.MESSAGE_ID,
          hash: row.HASH,
          vector: Float32Array.from(row.EMBEDDING),
        }));
      }),
    deleteVectors: (space, ids) =>
      driver.write(async (s) => {
        for (const part of chunks(ids)) await s.run(deleteVectors(dialect(), space.id, part));
      }),
    searchVectors: async (args) => {
      const statement = searchVectors(dialect(), args);
      const rows = await driver.read((s) => s.rows<VectorHitRow>(statement));
      return rows.map((row) => ({
        messageId: row.ID,
        threadId: row.THREAD_ID,
        hash: row.HASH,
        score: Number(row.SCORE),
        createdAt: fromTimestampText(row.CREATED_AT_TEXT),
      }));
    },
    // The vectors' foreign key cascades from the messages (ON DELETE CASCADE): the statements
    // that delete messages delete their vectors, inside the same write.
    deleteByThread: async () => {},
    deleteByMessages: async () => {},
  };
}

export type VectorHitRow = Record<'ID' | 'THREAD_ID' | 'CREATED_AT_TEXT' | 'HASH', string> & {
  SCORE: number;
};

/** `SELECT` of the recorded space (at most one row). */
export function selectVectorSpace(d: Dialect): Statement {
  return { sql: `SELECT embedder, dimensions FROM ${d.names.vectorSpace} WHERE id = 1`, binds: {} };
}

/**
 * Records the space unless one is recorded: a `MERGE` that only inserts. Two sessions racing
 * both try the insert and one gets ORA-00001 on the primary key; repeated, it finds the row.
 */
export function claimVectorSpace(d: Dialect, embedder: string, dimensions: number): Statement {
  return {
    sql: `MERGE INTO ${d.names.vectorSpace} s
USING (SELECT 1 AS id FROM dual) x
ON (s.id = x.id)
WHEN NOT MATCHED THEN INSERT (id, embedder, dimensions) VALUES (1, :embedder, :dimensions)`,
    binds: { embedder, dimensions },
  };
}

/**
 * Stores or replaces one message's vector. The source row comes from the messages table, so a
 * vector of an absent message inserts nothing.
 */
export function upsertVector(d: Dialect, space: string, v: core.MessageVector): Statement {
  return {
    sql: `MERGE INTO ${d.names.vectors} v
USING (SELECT m.id AS message_id FROM ${d.names.messages} m WHERE m.id = :message_id) s
ON (v.message_id = s.message_id AND v.space = :space)
WHEN MATCHED THEN UPDATE SET v.hash = :hash, v.embedding = :embedding
WHEN NOT MATCHED THEN INSERT (message_id, space, hash, embedding) VALUES (s.message_id, :space, :hash, :embedding)`,
    binds: { message_id: v.messageId, space, hash: v.hash, embedding: { val: v.vector, type: d.vectorType } },
  };
}

/** `<verb> FROM` the vectors of at most 1,000 messages of `space`. */
const byMessageIds =
  (verb: string) =>
  (d: Dialect, space: string, ids: readonly string[]): Statement => {
    const list = inList('id', ids);
    const sql = `${verb} FROM ${d.names.vectors} WHERE space = :space AND message_id IN (${list.sql})`;
    return { sql, binds: { space, ...list.binds } };
  };

/** The stored `(message_id, hash)` among at most 1,000 ids. */
export const selectVectors = byMessageIds('SELECT message_id, hash');

/** The stored `(message_id, hash, embedding)` among at most 1,000 ids (`readVectors`, for exports). */
export const readVectors = byMessageIds('SELECT message_id, hash, embedding');

/** Deletes the vectors of at most 1,000 messages (the messages stay). */
export const deleteVectors = byMessageIds('DELETE');

/**
 * Exact search: the scope (resource, thread, exclusions) is in the `WHERE` clause, so the rows
 * ranked are only the scope's and `FETCH FIRST :top_k` returns `topK` hits whenever that many
 * exist; `1 - VECTOR_DISTANCE(…, COSINE)` is the cosine similarity; ties order by `created_at`
 * descending, then `id` in binary order (the sessions' `NLS_SORT`). No `APPROX`: no vector index.
 */
export function searchVectors(d: Dialect, q: core.VectorSearch): Statement {
  const where = ['m.resource_id = :resource_id'];
  const binds: Statement['binds'] = {
    query: { val: q.vector, type: d.vectorType },
    space: q.space.id,
    resource_id: q.resourceId,
    top_k: q.topK,
  };
  if (q.threadId !== undefined) {
    where.push('m.thread_id = :thread_id');
    binds.thread_id = q.threadId;
  }
  chunks(q.excludeIds ?? []).forEach((part, i) => {
    const list = inList(`x${i}_`, part);
    where.push(`m.id NOT IN (${list.sql})`);
    Object.assign(binds, list.binds);
  });
  return {
    sql: `SELECT m.id, m.thread_id, TO_CHAR(m.created_at, '${TIMESTAMP_FORMAT}') AS created_at_text, v.hash,
  1 - VECTOR_DISTANCE(v.embedding, :query, COSINE) AS score
FROM ${d.names.messages} m
JOIN ${d.names.vectors} v ON v.message_id = m.id AND v.space = :space
WHERE ${where.join('\n  AND ')}
ORDER BY score DESC, m.created_at DESC, m.id ASC
FETCH FIRST :top_k ROWS ONLY`,
    binds,
  };
}
