import { describe, expect, it } from 'vitest';
import { tableNames } from '../src/sql.ts';
import * as v from '../src/vector-sql.ts';
import { bindsMatch, oracledb, parse } from './fixtures.ts';

const names = tableNames('engram_');
const d: v.VectorDialect = { names, vectorType: oracledb.DB_TYPE_VECTOR };
const space = { id: 'openai:text-embedding-3-small', dimensions: 3 };
const vector = new Float32Array([0.6, 0.8, 0]);

describe('vector SQL (23ai)', () => {
  it('creates VECTOR(n, FLOAT32) with the space dimension and a cascading key to the messages', () => {
    const [spaceTable, vectors, index] = v.createVectorTables(names, { id: 'x', dimensions: 384 });
    expect(vectors).toContain('embedding VECTOR(384, FLOAT32) NOT NULL');
    expect(vectors).toMatch(/FOREIGN KEY \(message_id\) REFERENCES engram_messages \(id\) ON DELETE CASCADE/);
    expect(vectors).toContain('PRIMARY KEY (message_id, space)');
    expect(spaceTable).toContain('CHECK (id = 1)');
    expect(index).toBe('CREATE INDEX engram_messages_resource_idx ON engram_messages (resource_id)');
    for (const ddl of v.createVectorTables(names, space)) expect(parse(ddl).kind).toBe('ddl');
  });

  it('refuses a dimension Oracle cannot hold', () => {
    expect(() => v.createVectorTables(names, { id: 'x', dimensions: 70_000 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it('upserts with MERGE from the message row, binding the vector as DB_TYPE_VECTOR', () => {
    const s = v.upsertVector(d, space, { messageId: "m'1", hash: 'h', vector });
    expect(parse(s.sql).kind).toBe('dml');
    expect(bindsMatch(s)).toBe(true);
    expect(s.sql).toMatch(
      /USING \(SELECT m\.id AS message_id FROM engram_messages m WHERE m\.id = :message_id\) src/,
    );
    expect(s.binds.embedding).toEqual({ val: vector, type: oracledb.DB_TYPE_VECTOR });
    expect(s.binds.message_id).toBe("m'1");
  });

  it('records the space only when none is', () => {
    const s = v.insertSpace(names, space);
    expect(bindsMatch(s)).toBe(true);
    expect(s.sql).toContain('WHEN NOT MATCHED THEN INSERT');
    expect(s.sql).not.toContain('WHEN MATCHED THEN');
    expect(bindsMatch(v.selectSpace(names))).toBe(true);
  });

  it('searches the resource exactly with VECTOR_DISTANCE COSINE, scope first, then FETCH FIRST k', () => {
    const s = v.searchVectors(d, { space, vector, topK: 4, resourceId: 'r%_1' });
    expect(parse(s.sql).kind).toBe('query');
    expect(bindsMatch(s)).toBe(true);
    expect(s.sql).toContain('1 - VECTOR_DISTANCE(v.embedding, :query, COSINE) AS score');
    expect(s.sql).toMatch(
      /WHERE m\.resource_id = :resource_id\nORDER BY score DESC, m\.created_at DESC, m\.id\nFETCH FIRST :top_k ROWS ONLY/,
    );
    expect(s.sql).not.toMatch(/APPROX|LIKE/);
    expect(s.binds).toMatchObject({ resource_id: 'r%_1', top_k: 4, space: space.id });
  });

  it('adds the thread and the excluded ids as binds, never as text', () => {
    const s = v.searchVectors(d, {
      space,
      vector,
      topK: 2,
      resourceId: 'r',
      threadId: "t'); DROP TABLE x; --",
      excludeIds: ['a', "b'"],
    });
    expect(bindsMatch(s)).toBe(true);
    expect(s.sql).toContain('AND m.thread_id = :thread_id AND m.id NOT IN (:x0, :x1)');
    expect(s.sql).not.toContain('DROP');
    expect(s.binds).toMatchObject({ x0: 'a', x1: "b'" });
  });

  it('reads and deletes vectors of a space by id lists', () => {
    const read = v.selectVectors(names, space, ['a', 'b']);
    expect(bindsMatch(read)).toBe(true);
    expect(read.sql).toBe(
      'SELECT message_id, hash FROM engram_vectors WHERE space = :space AND message_id IN (:id0, :id1)',
    );
    const del = v.deleteVectors(names, space, ['a']);
    expect(parse(del.sql).kind).toBe('dml');
    expect(bindsMatch(del)).toBe(true);
  });
});
