import { createLexicalEmbedder, Memory } from '@engram/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore, type PostgresVectorOptions } from '../src/index.ts';
import { createDatabase, describePg, randomName, type TestDatabase } from './env.ts';

describePg('pg vectors, read back with plain SQL', (url) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createDatabase(url);
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function withStore(vectors: PostgresVectorOptions) {
    const schemaName = randomName('vec');
    const store = new PostgresStore({ connectionString: db.url, schemaName, vectors });
    await store.init();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder({ dimensions: 24 }),
      options: { semanticRecall: { mode: 'vector' } },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const saved = await memory.saveMessages({
      messages: [
        { threadId: 't', resourceId: 'u', role: 'user', content: 'the quick brown fox' },
        { threadId: 't', resourceId: 'u', role: 'assistant', content: 'jumps over the lazy dog' },
      ],
    });
    return { store, memory, saved, schemaName };
  }

  const columnType = async (schema: string) =>
    (
      await db.query<{ type: string }>(
        `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
          WHERE attrelid = $1::regclass AND attname = 'embedding'`,
        [`"${schema}".engram_message_vectors`],
      )
    )[0]?.type;

  it('by default stores vector(n) (pgvector) and ranks with <=>; a message delete cascades', async () => {
    const { store, saved, schemaName } = await withStore({});
    expect(await store.vectors.backend()).toBe('pgvector');
    expect(await columnType(schemaName)).toMatch(/^("?vec_[0-9a-f]+"?\.)?vector\(24\)$/);
    const rows = await db.query<{ message_id: string; space: string }>(
      `SELECT message_id, space FROM "${schemaName}".engram_message_vectors ORDER BY message_id`,
    );
    expect(rows.map((r) => r.message_id).sort()).toEqual(saved.map((m) => m.id).sort());
    expect(new Set(rows.map((r) => r.space))).toEqual(new Set(['engram:lexical-24']));
    await db.query(`DELETE FROM "${schemaName}".engram_messages WHERE id = $1`, [saved[0]?.id]);
    const left = await db.query<{ message_id: string }>(
      `SELECT message_id FROM "${schemaName}".engram_message_vectors`,
    );
    expect(left.map((r) => r.message_id)).toEqual([saved[1]?.id]);
    await store.close();
  });

  it("backend 'real[]' keeps exact real[] vectors and finds the same hit", async () => {
    const { store, memory, saved, schemaName } = await withStore({ backend: 'real[]' });
    expect(await store.vectors.backend()).toBe('real[]');
    expect(await columnType(schemaName)).toBe('real[]');
    await memory.createThread({ resourceId: 'u', threadId: 'now' });
    const { hits } = await memory.recall({ threadId: 'now', resourceId: 'u', query: 'a lazy dog' });
    expect(hits[0]?.message.id).toBe(saved[1]?.id);
    expect(hits[0]?.score).toBeGreaterThan(0.3);
    await store.close();
  });

  it('hnsw: true creates the HNSW index on the vector column', async () => {
    const { store, schemaName } = await withStore({ hnsw: { m: 8, efConstruction: 32, efSearch: 40 } });
    const indexes = await db.query<{ indexdef: string }>(
      'SELECT indexdef FROM pg_indexes WHERE schemaname = $1',
      [schemaName],
    );
    expect(indexes.map((i) => i.indexdef).join('\n')).toMatch(
      /USING hnsw \(embedding (\S+\.)?vector_cosine_ops\)/,
    );
    expect(store.vectors.search).toBe('index');
    await store.close();
  });

  it('hnsw: among equal scores the newest win, as in the exact scan (identical texts re-ranked exactly)', async () => {
    const schemaName = randomName('vec');
    const embedder = createLexicalEmbedder({ dimensions: 24 });
    const hnsw = new PostgresStore({ connectionString: db.url, schemaName, vectors: { hnsw: true } });
    const memory = new Memory({ storage: hnsw, embedder, options: { semanticRecall: { mode: 'vector' } } });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    // 150 "ok" fill the index's 100 candidates with one score; 40 "thanks!" fit in them.
    const texts = [
      ...Array.from({ length: 150 }, () => 'ok'),
      ...Array.from({ length: 40 }, () => 'thanks!'),
      ...Array.from({ length: 30 }, (_, i) => `note number ${i} about the trip`),
    ];
    const order = Array.from(texts.keys()).sort((a, b) => ((a * 7919) % 220) - ((b * 7919) % 220));
    await memory.saveMessages({
      messages: order.map((i) => ({
        threadId: 't',
        resourceId: 'u',
        role: 'user' as const,
        content: texts[i] as string,
        createdAt: new Date(Date.UTC(2024, 0, 1) + i * 1000),
      })),
    });
    const exact = new PostgresStore({ connectionString: db.url, schemaName });
    const space = (await hnsw.vectors.getSpace()) as { id: string; dimensions: number };
    let compared = 0;
    for (const query of ['ok', 'thanks!', 'note number 3 about the trip', 'the trip']) {
      const vector = new Float32Array(
        (await embedder.doEmbed({ values: [query] })).embeddings[0] as number[],
      );
      for (const topK of [1, 5, 20]) {
        const search = { space, vector, topK, resourceId: 'u' };
        const [got, want] = await Promise.all([
          hnsw.vectors.searchVectors(search),
          exact.vectors.searchVectors(search),
        ]);
        expect(want).toHaveLength(topK);
        expect(got, `${query} top ${topK}`).toEqual(want);
        compared++;
      }
    }
    expect(compared).toBe(12);
    await exact.close();
    await hnsw.close();
  });

  it('a zero vector stored before they were refused scores 0, never NaN', async () => {
    for (const backend of ['pgvector', 'real[]'] as const) {
      const { store, saved, schemaName } = await withStore({ backend });
      await db.query(
        // pgvector casts real[] to vector on assignment.
        `UPDATE "${schemaName}".engram_message_vectors SET embedding = array_fill(0::real, ARRAY[24]) WHERE message_id = $1`,
        [saved[0]?.id],
      );
      const space = (await store.vectors.getSpace()) as { id: string; dimensions: number };
      const vector = new Float32Array(24);
      vector[0] = -1;
      const hits = await store.vectors.searchVectors({ space, vector, topK: 2, resourceId: 'u' });
      const zero = hits.find((h) => h.messageId === saved[0]?.id);
      expect(zero?.score, backend).toBe(0);
      for (const h of hits) expect(Number.isFinite(h.score), backend).toBe(true);
      await store.close();
    }
  });

  it('bad vector options are INVALID_ARGUMENT at construction', () => {
    expect(
      () => new PostgresStore({ connectionString: db.url, vectors: { backend: 'faiss' as never } }),
    ).toThrow(/vectors.backend/);
    expect(() => new PostgresStore({ connectionString: db.url, vectors: { hnsw: { m: 1 } } })).toThrow(
      /hnsw.m/,
    );
  });
});
