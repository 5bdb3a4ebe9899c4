import { TIMESTAMP_FORMAT } from './mapping.ts';
import type { Dialect, Statement } from './sql.ts';
import { chunks, inList, MAX_IN_LIST } from './sql.ts';

/**
 * The statements of semantic recall (23ai): pure builders like `sql.ts`. Vectors are bound as
 * `Float32Array` with `DB_TYPE_VECTOR`; every value is a bind.
 */

/** A row of `searchVectors`. */
export interface VectorHitRow {
  ID: string;
  THREAD_ID: string;
  CREATED_AT_TEXT: string;
  HASH: string;
  SCORE: number;
}

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
export function upsertVector(
  d: Dialect,
  space: string,
  messageId: string,
  hash: string,
  vector: Float32Array,
): Statement {
  return {
    sql: `MERGE INTO ${d.names.vectors} v
USING (SELECT m.id AS message_id FROM ${d.names.messages} m WHERE m.id = :message_id) s
ON (v.message_id = s.message_id AND v.space = :space)
WHEN MATCHED THEN UPDATE SET v.hash = :hash, v.embedding = :embedding
WHEN NOT MATCHED THEN INSERT (message_id, space, hash, embedding) VALUES (s.message_id, :space, :hash, :embedding)`,
    binds: {
      message_id: messageId,
      space,
      hash,
      embedding: { val: vector, type: d.vectorType },
    },
  };
}

/** The stored `(message_id, hash)` among at most 1,000 ids. */
export function selectVectors(d: Dialect, space: string, ids: readonly string[]): Statement {
  const list = inList('id', ids);
  return {
    sql: `SELECT message_id, hash FROM ${d.names.vectors} WHERE space = :space AND message_id IN (${list.sql})`,
    binds: { space, ...list.binds },
  };
}

/** Deletes the vectors of at most 1,000 messages (the messages stay). */
export function deleteVectors(d: Dialect, space: string, ids: readonly string[]): Statement {
  const list = inList('id', ids);
  return {
    sql: `DELETE FROM ${d.names.vectors} WHERE space = :space AND message_id IN (${list.sql})`,
    binds: { space, ...list.binds },
  };
}

/** Arguments of `searchVectors`, as core normalised them. */
export interface VectorQuery {
  space: string;
  vector: Float32Array;
  topK: number;
  resourceId: string;
  threadId?: string;
  excludeIds: readonly string[];
}

/**
 * Exact search: the scope (resource, thread, exclusions) is in the `WHERE` clause, so the rows
 * ranked are only the scope's; `1 - VECTOR_DISTANCE(…, COSINE)` is the cosine similarity; ties
 * order by `created_at` descending, then `id` in binary order (the sessions' `NLS_SORT`). No
 * `APPROX`: no vector index is consulted.
 */
export function searchVectors(d: Dialect, q: VectorQuery): Statement {
  const ts = `'${TIMESTAMP_FORMAT}'`;
  const where = ['m.resource_id = :resource_id'];
  const binds: Statement['binds'] = {
    query: { val: q.vector, type: d.vectorType },
    space: q.space,
    resource_id: q.resourceId,
    top_k: q.topK,
  };
  if (q.threadId !== undefined) {
    where.push('m.thread_id = :thread_id');
    binds.thread_id = q.threadId;
  }
  chunks(q.excludeIds, MAX_IN_LIST).forEach((part, i) => {
    const list = inList(`x${i}_`, part);
    where.push(`m.id NOT IN (${list.sql})`);
    Object.assign(binds, list.binds);
  });
  return {
    sql: `SELECT m.id, m.thread_id, TO_CHAR(m.created_at, ${ts}) AS created_at_text, v.hash,
  1 - VECTOR_DISTANCE(v.embedding, :query, COSINE) AS score
FROM ${d.names.messages} m
JOIN ${d.names.vectors} v ON v.message_id = m.id AND v.space = :space
WHERE ${where.join('\n  AND ')}
ORDER BY score DESC, m.created_at DESC, m.id ASC
FETCH FIRST :top_k ROWS ONLY`,
    binds,
  };
}
