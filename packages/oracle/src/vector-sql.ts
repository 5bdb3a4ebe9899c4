import { type EmbeddingSpace, MemoryError, type VectorSearch } from '@engram/core';
import type { OracleBinds, OracleDbType } from './driver.ts';
import { TIMESTAMP_FORMAT } from './mapping.ts';
import type { Statement, TableNames } from './sql.ts';

/**
 * The SQL of semantic recall on Oracle Database 23ai (`VECTOR` columns, `VECTOR_DISTANCE`), as
 * pure builders like `sql.ts`. Vectors sit in `<prefix>vectors`, one row per `(message, space)`,
 * with a foreign key `ON DELETE CASCADE` to the messages, so deleting a message or a thread
 * (whose messages cascade in turn) deletes its vectors in the same statement. Search selects
 * the scope's messages first and ranks them exactly (`ORDER BY … FETCH FIRST k ROWS ONLY`);
 * no vector index is created (`FETCH APPROX` would rank approximately).
 */

/** The vector tables of a prefix. */
export interface VectorTables {
  vectors: string;
  space: string;
}

export function vectorTables(n: TableNames): VectorTables {
  return { vectors: `${n.prefix}vectors`, space: `${n.prefix}vector_space` };
}

/** What the builders need: the table names and `oracledb.DB_TYPE_VECTOR`. */
export interface VectorDialect {
  names: TableNames;
  vectorType: OracleDbType;
}

const TS = `'${TIMESTAMP_FORMAT}'`;

function dimensions(space: EmbeddingSpace): number {
  // Oracle's VECTOR allows up to 65,535 dimensions; core allows at most 16,384.
  if (!Number.isInteger(space.dimensions) || space.dimensions < 1 || space.dimensions > 65_535) {
    throw new MemoryError('INVALID_ARGUMENT', `oracle: bad vector dimension ${space.dimensions}`, {
      adapter: 'oracle',
    });
  }
  return space.dimensions;
}

/**
 * DDL run when the first space is claimed (the dimension is known only then, and `VECTOR`
 * exists only on 23ai, so it is not part of the schema migrations): the space table and the
 * vectors table with a `VECTOR(n, FLOAT32)` column. ORA-00955 means a step is done already.
 */
export function createVectorTables(n: TableNames, space: EmbeddingSpace): string[] {
  const t = vectorTables(n);
  return [
    `CREATE TABLE ${t.space} (
  id NUMBER(1) NOT NULL,
  embedder VARCHAR2(512 CHAR) NOT NULL,
  dimensions NUMBER(6) NOT NULL,
  CONSTRAINT ${n.prefix}vector_space_pk PRIMARY KEY (id),
  CONSTRAINT ${n.prefix}vector_space_one CHECK (id = 1)
)`,
    `CREATE TABLE ${t.vectors} (
  message_id VARCHAR2(255 CHAR) NOT NULL,
  space VARCHAR2(512 CHAR) NOT NULL,
  hash VARCHAR2(64 CHAR) NOT NULL,
  embedding VECTOR(${dimensions(space)}, FLOAT32) NOT NULL,
  CONSTRAINT ${n.prefix}vectors_pk PRIMARY KEY (message_id, space),
  CONSTRAINT ${n.prefix}vectors_message_fk FOREIGN KEY (message_id) REFERENCES ${n.messages} (id) ON DELETE CASCADE
)`,
    `CREATE INDEX ${n.prefix}messages_resource_idx ON ${n.messages} (resource_id)`,
  ];
}

export function selectSpace(n: TableNames): Statement {
  return { sql: `SELECT embedder, dimensions FROM ${vectorTables(n).space} WHERE id = 1`, binds: {} };
}

/** Records the space unless one is recorded (a concurrent insert fails with ORA-00001: ignore). */
export function insertSpace(n: TableNames, space: EmbeddingSpace): Statement {
  return {
    sql: `MERGE INTO ${vectorTables(n).space} s USING (SELECT 1 AS id FROM dual) src ON (s.id = src.id)
WHEN NOT MATCHED THEN INSERT (id, embedder, dimensions) VALUES (1, :embedder, :dimensions)`,
    binds: { embedder: space.id, dimensions: dimensions(space) },
  };
}

/** Upserts one message's vector; a message that does not exist selects no row (no orphan). */
export function upsertVector(
  d: VectorDialect,
  space: EmbeddingSpace,
  v: { messageId: string; hash: string; vector: Float32Array },
): Statement {
  const t = vectorTables(d.names);
  return {
    sql: `MERGE INTO ${t.vectors} v
USING (SELECT m.id AS message_id FROM ${d.names.messages} m WHERE m.id = :message_id) src
ON (v.message_id = src.message_id AND v.space = :space)
WHEN MATCHED THEN UPDATE SET v.hash = :hash, v.embedding = :embedding
WHEN NOT MATCHED THEN INSERT (message_id, space, hash, embedding) VALUES (src.message_id, :space, :hash, :embedding)`,
    binds: {
      message_id: v.messageId,
      space: space.id,
      hash: v.hash,
      embedding: { val: v.vector, type: d.vectorType },
    },
  };
}

function idList(prefix: string, ids: readonly string[], binds: OracleBinds): string {
  return ids
    .map((id, i) => {
      binds[`${prefix}${i}`] = id;
      return `:${prefix}${i}`;
    })
    .join(', ');
}

/** The stored `(message_id, hash)` among `ids` (at most 1,000: callers chunk). */
export function selectVectors(n: TableNames, space: EmbeddingSpace, ids: readonly string[]): Statement {
  const binds: OracleBinds = { space: space.id };
  const list = idList('id', ids, binds);
  return {
    sql: `SELECT message_id, hash FROM ${vectorTables(n).vectors} WHERE space = :space AND message_id IN (${list})`,
    binds,
  };
}

export function deleteVectors(n: TableNames, space: EmbeddingSpace, ids: readonly string[]): Statement {
  const binds: OracleBinds = { space: space.id };
  const list = idList('id', ids, binds);
  return {
    sql: `DELETE FROM ${vectorTables(n).vectors} WHERE space = :space AND message_id IN (${list})`,
    binds,
  };
}

/**
 * The exact scoped search: the resource's (or thread's) messages joined to their vectors,
 * `1 - VECTOR_DISTANCE(…, COSINE)` as the score, ties by newest `created_at` then id, the
 * first `topK` rows. Excluded ids (at most 1,000) are left out before ranking.
 */
export function searchVectors(d: VectorDialect, args: VectorSearch): Statement {
  const t = vectorTables(d.names);
  const binds: OracleBinds = {
    query: { val: args.vector, type: d.vectorType },
    space: args.space.id,
    resource_id: args.resourceId,
    top_k: args.topK,
  };
  let where = 'm.resource_id = :resource_id';
  if (args.threadId !== undefined) {
    binds.thread_id = args.threadId;
    where += ' AND m.thread_id = :thread_id';
  }
  const exclude = args.excludeIds ?? [];
  if (exclude.length > 1000) {
    throw new MemoryError('INVALID_ARGUMENT', 'oracle: at most 1000 excluded ids per search', {
      adapter: 'oracle',
    });
  }
  if (exclude.length > 0) where += ` AND m.id NOT IN (${idList('x', exclude, binds)})`;
  return {
    sql: `SELECT m.id, m.thread_id, TO_CHAR(m.created_at, ${TS}) AS created_at, v.hash,
  1 - VECTOR_DISTANCE(v.embedding, :query, COSINE) AS score
FROM ${d.names.messages} m JOIN ${t.vectors} v ON v.message_id = m.id AND v.space = :space
WHERE ${where}
ORDER BY score DESC, m.created_at DESC, m.id
FETCH FIRST :top_k ROWS ONLY`,
    binds,
  };
}
