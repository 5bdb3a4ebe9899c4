import { isMemoryError } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { OracleStore } from '../src/index.ts';
import { LATEST_VERSION, MIGRATIONS, migrate } from '../src/migrations.ts';
import type { Session } from '../src/session.ts';
import { tableNames } from '../src/sql.ts';
import * as vsql from '../src/vectors.ts';
import { bindsMatch, dialect, driverBinds, oracledb, parse } from './fixtures.ts';

const d = dialect('json');
const q = new Float32Array([0.5, -0.25, 1e-30, 3]);
const space = { id: 'sp', dimensions: 4 };

describe('vector DDL (migration 2, Oracle 23ai)', () => {
  const steps = MIGRATIONS[1]?.steps(tableNames('engram_'), 'json') ?? [];
  const ddl = steps.map((s) => s.sql).join('\n');

  it('is appended as version 2, for 23ai and later only', () => {
    expect(LATEST_VERSION).toBeGreaterThanOrEqual(2);
    expect(MIGRATIONS[0]?.minMajorVersion).toBeUndefined();
    expect(MIGRATIONS[1]?.minMajorVersion).toBe(23);
    for (const step of steps) expect(parse(step.sql)).toEqual({ binds: [], kind: 'ddl' });
  });

  it('stores FLOAT32 vectors keyed by (message_id, space), cascading from the messages', () => {
    expect(ddl).toContain('CREATE TABLE engram_message_vectors (');
    expect(ddl).toContain('embedding VECTOR(*, FLOAT32) NOT NULL');
    expect(ddl).toContain('CONSTRAINT engram_message_vectors_pk PRIMARY KEY (message_id, space)');
    expect(ddl).toContain('FOREIGN KEY (message_id) REFERENCES engram_messages (id) ON DELETE CASCADE');
    expect(ddl).toContain('CREATE TABLE engram_vector_space (');
    expect(ddl).toContain('CHECK (id = 1)');
    expect(ddl).toContain(
      'CREATE INDEX engram_messages_resource_idx ON engram_messages (resource_id, created_at, id)',
    );
  });
});

/** A session that records statements and answers `SELECT version` with `applied`. */
function recordingSession(serverVersion: number, applied: number[]): { session: Session; sent: string[] } {
  const sent: string[] = [];
  const session = {
    connection: { oracleServerVersion: serverVersion, commit: async () => {}, rollback: async () => {} },
    run: async (s: { sql: string }) => {
      sent.push(s.sql);
      return 0;
    },
    rows: async (s: { sql: string }) => {
      sent.push(s.sql);
      if (s.sql.startsWith('SELECT version')) return applied.map((v) => ({ VERSION: v }));
      if (s.sql.startsWith('SELECT name FROM engram_backfills')) return [];
      return [{ DATA_TYPE: 'JSON' }];
    },
  } as unknown as Session;
  return { session, sent };
}

describe('migrate gates the vector migration on the server version', () => {
  const n = tableNames('engram_');
  /** Every version recorded but the vector tables' (2). */
  const allBut2 = MIGRATIONS.map((_, i) => i + 1).filter((v) => v !== 2);

  it('runs and records version 2 on 23ai', async () => {
    const { session, sent } = recordingSession(2_304_000_000, allBut2);
    await migrate(session, n, 'json', oracledb.DB_TYPE_CLOB);
    expect(sent.some((s) => s.startsWith('CREATE TABLE engram_message_vectors'))).toBe(true);
    expect(sent.filter((s) => s.startsWith('INSERT INTO engram_migrations'))).toHaveLength(1);
  });

  it('skips it, unrecorded, on 19c and 21c (so it runs after an upgrade)', async () => {
    for (const version of [1_919_000_000, 2_103_000_000]) {
      const { session, sent } = recordingSession(version, allBut2);
      await migrate(session, n, 'clob', oracledb.DB_TYPE_CLOB);
      expect(sent.some((s) => s.includes('message_vectors') || s.includes('vector_space'))).toBe(false);
      expect(sent.some((s) => s.startsWith('INSERT INTO engram_migrations'))).toBe(false);
    }
  });
});

describe('vector statements', () => {
  it('claims the space with an insert-only MERGE on the one-row table', () => {
    const s = vsql.claimVectorSpace(d, 'openai:text-embedding-3-small', 1536);
    expect(s.sql).toMatch(/^MERGE INTO engram_vector_space s/);
    expect(s.sql).toContain(
      'WHEN NOT MATCHED THEN INSERT (id, embedder, dimensions) VALUES (1, :embedder, :dimensions)',
    );
    expect(s.sql).not.toContain('WHEN MATCHED');
    expect(s.binds).toEqual({ embedder: 'openai:text-embedding-3-small', dimensions: 1536 });
    expect(parse(s.sql).kind).toBe('dml');
    expect(bindsMatch(s)).toBe(true);
    const read = vsql.selectVectorSpace(d);
    expect(read.sql).toBe('SELECT embedder, dimensions FROM engram_vector_space WHERE id = 1');
    expect(bindsMatch(read)).toBe(true);
  });

  it('upserts a vector only for an existing message, binding the Float32Array as DB_TYPE_VECTOR', async () => {
    const s = vsql.upsertVector(d, 'sp', { messageId: "m' OR '1'='1", hash: 'h', vector: q });
    expect(s.sql).toMatch(/^MERGE INTO engram_message_vectors v/);
    expect(s.sql).toContain(
      'USING (SELECT m.id AS message_id FROM engram_messages m WHERE m.id = :message_id) s',
    );
    expect(s.sql).toContain('ON (v.message_id = s.message_id AND v.space = :space)');
    expect(s.sql).toContain('WHEN MATCHED THEN UPDATE SET v.hash = :hash, v.embedding = :embedding');
    expect(s.sql).not.toContain("OR '1'='1");
    expect(parse(s.sql).kind).toBe('dml');
    expect(bindsMatch(s)).toBe(true);
    const binds = Object.fromEntries((await driverBinds(s.binds)).map((b) => [b.name, b]));
    expect(binds.embedding).toMatchObject({ type: 'DB_TYPE_VECTOR', in: true });
    expect(binds.message_id).toMatchObject({ type: 'DB_TYPE_VARCHAR' });
    expect(s.binds.embedding).toEqual({ val: q, type: d.vectorType });
  });

  it('reads and deletes vectors of one space by id lists', () => {
    const ids = ['a', 'b', 'c'];
    const read = vsql.selectVectors(d, 'sp', ids);
    expect(read.sql).toBe(
      'SELECT message_id, hash FROM engram_message_vectors WHERE space = :space AND message_id IN (:id0, :id1, :id2)',
    );
    expect(read.binds).toEqual({ space: 'sp', id0: 'a', id1: 'b', id2: 'c' });
    expect(bindsMatch(read)).toBe(true);
    const del = vsql.deleteVectors(d, 'sp', ids);
    expect(del.sql).toBe(
      'DELETE FROM engram_message_vectors WHERE space = :space AND message_id IN (:id0, :id1, :id2)',
    );
    expect(parse(del.sql).kind).toBe('dml');
    expect(bindsMatch(del)).toBe(true);
    expect(() => vsql.selectVectors(d, 'sp', Array.from({ length: 1001 }, String))).toThrow(/1 to 1000/);
  });

  it('reads vectors with their numbers for an export (readVectors)', () => {
    const read = vsql.readVectors(d, 'sp', ['a', 'b']);
    expect(read.sql).toBe(
      'SELECT message_id, hash, embedding FROM engram_message_vectors WHERE space = :space AND message_id IN (:id0, :id1)',
    );
    expect(read.binds).toEqual({ space: 'sp', id0: 'a', id1: 'b' });
    expect(parse(read.sql).kind).toBe('query');
    expect(bindsMatch(read)).toBe(true);
  });

  it('searches exactly: scope in WHERE, VECTOR_DISTANCE COSINE, tie order, FETCH FIRST :top_k', async () => {
    const s = vsql.searchVectors(d, { space, vector: q, topK: 5, resourceId: 'r1', excludeIds: [] });
    expect(vsql.searchVectors(d, { space, vector: q, topK: 5, resourceId: 'r1' })).toEqual(s);
    expect(s.sql).toContain('1 - VECTOR_DISTANCE(v.embedding, :query, COSINE) AS score');
    expect(s.sql).toContain('JOIN engram_message_vectors v ON v.message_id = m.id AND v.space = :space');
    expect(s.sql).toContain('WHERE m.resource_id = :resource_id\n');
    expect(s.sql).toContain('ORDER BY score DESC, m.created_at DESC, m.id ASC\nFETCH FIRST :top_k ROWS ONLY');
    expect(s.sql).not.toMatch(/APPROX|thread_id = |NOT IN/);
    expect(s.binds).toEqual({
      query: { val: q, type: d.vectorType },
      space: 'sp',
      resource_id: 'r1',
      top_k: 5,
    });
    expect(parse(s.sql).kind).toBe('query');
    expect(bindsMatch(s)).toBe(true);
    const binds = Object.fromEntries((await driverBinds(s.binds)).map((b) => [b.name, b]));
    expect(binds.query).toMatchObject({ type: 'DB_TYPE_VECTOR' });
    expect(binds.top_k).toMatchObject({ type: 'DB_TYPE_NUMBER' });
  });

  it('adds the thread and the exclusions to the WHERE clause, in IN lists of at most 1,000', () => {
    const excludeIds = Array.from({ length: 1500 }, (_, i) => `x${i}`);
    const s = vsql.searchVectors(d, {
      space,
      vector: q,
      topK: 3,
      resourceId: 'r1',
      threadId: 't1',
      excludeIds,
    });
    expect(s.sql).toContain(
      'm.resource_id = :resource_id\n  AND m.thread_id = :thread_id\n  AND m.id NOT IN (:x0_0, ',
    );
    expect(s.sql).toContain('AND m.id NOT IN (:x1_0, ');
    expect(s.sql).toContain(':x1_499)');
    expect(s.sql).not.toContain(':x1_500');
    expect(s.binds.thread_id).toBe('t1');
    expect(s.binds.x0_999).toBe('x999');
    expect(s.binds.x1_499).toBe('x1499');
    expect(bindsMatch(s)).toBe(true);
  });

  it('uses the table prefix everywhere', () => {
    const p = dialect('json', 'tenant7_');
    const all = [
      vsql.selectVectorSpace(p),
      vsql.claimVectorSpace(p, 'e', 3),
      vsql.upsertVector(p, 'e', { messageId: 'm', hash: 'h', vector: q }),
      vsql.selectVectors(p, 'e', ['m']),
      vsql.deleteVectors(p, 'e', ['m']),
      vsql.searchVectors(p, { space, vector: q, topK: 1, resourceId: 'r', excludeIds: [] }),
    ]
      .map((s) => s.sql)
      .join('\n');
    expect(all).not.toContain('engram_');
    expect(all).toContain('tenant7_message_vectors');
  });
});

describe('OracleStore vectors', () => {
  it('declares exact vectors, and validates before connecting', async () => {
    const store = new OracleStore({ user: 'u', password: 'p', connectString: '127.0.0.1:1/FREEPDB1' });
    expect(store.vectors?.search).toBe('exact');
    const vectors = store.vectors as NonNullable<typeof store.vectors>;
    const error = await vectors
      .searchVectors({ space: { id: 'e', dimensions: 3 }, vector: q, topK: 1, resourceId: 'r' })
      .catch((e: unknown) => e);
    expect(isMemoryError(error) && error.code).toBe('INVALID_ARGUMENT');
    await store.close();
  });

  /** A pool whose one connection reports `serverVersion` and answers the migration queries. */
  function poolOf(serverVersion: number) {
    const connection = {
      oracleServerVersion: serverVersion,
      execute: async (text: string) =>
        text.startsWith('SELECT version') || text.includes('NOT EXISTS')
          ? { rows: [] }
          : { rows: [{ DATA_TYPE: 'CLOB' }], rowsAffected: 0 },
      commit: async () => {},
      rollback: async () => {},
      close: async () => {},
    };
    return { getConnection: async () => connection, close: async () => {} };
  }

  it('stops declaring vectors once connected to a server older than 23ai, and keeps them on 23ai', async () => {
    const old = new OracleStore({ pool: poolOf(1_919_000_000) });
    const vectors = old.vectors as NonNullable<typeof old.vectors>;
    await old.init();
    expect(old.vectors).toBeUndefined();
    const error = await vectors.getSpace().catch((e: unknown) => e);
    expect(isMemoryError(error) && error.code).toBe('UNSUPPORTED');
    expect((error as Error).message).toMatch(/23ai/);
    const modern = new OracleStore({ pool: poolOf(2_304_000_000) });
    await modern.init();
    expect(modern.vectors?.search).toBe('exact');
  });
});
