import { createLexicalEmbedder, Memory } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const { dir, cleanup } = tempDir('engram-libsql-vectors-');
afterAll(cleanup);

describe('libSQL vectors, read back through a separate client', () => {
  it('stores one F32 blob of dimensions × 4 bytes per message, and the delete trigger drops it', async () => {
    const url = `file:${dir}/v.db`;
    const store = new LibSQLStore({ url });
    await store.init();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder({ dimensions: 48 }),
      options: { semanticRecall: true },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const saved = await memory.saveMessages({
      messages: [
        { threadId: 't', resourceId: 'u', role: 'user', content: 'the quick brown fox' },
        { threadId: 't', resourceId: 'u', role: 'assistant', content: 'jumps over the lazy dog' },
      ],
    });
    const raw = createClient({ url });
    const rows = await raw.execute(
      'SELECT message_id, space, length(embedding) AS n FROM engram_message_vectors',
    );
    expect(rows.rows.map((r) => [r.message_id, r.space, Number(r.n)])).toEqual(
      expect.arrayContaining(saved.map((m) => [m.id, 'engram:lexical-48', 48 * 4])),
    );
    const space = await raw.execute('SELECT embedder, dimensions FROM engram_vector_space');
    expect(space.rows.map((r) => [r.embedder, Number(r.dimensions)])).toEqual([['engram:lexical-48', 48]]);
    await raw.execute({ sql: 'DELETE FROM engram_messages WHERE id = ?', args: [saved[0]?.id as string] });
    const left = await raw.execute('SELECT message_id FROM engram_message_vectors');
    expect(left.rows.map((r) => r.message_id)).toEqual([saved[1]?.id]);
    raw.close();
    await store.close();
  });
});

describe('libSQL vectors with the ANN index opted in (vectors: { index: true })', () => {
  const embedder = createLexicalEmbedder({ dimensions: 64 });
  const words = ['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'garnet', 'harbor', 'iris', 'juniper'];
  /** Twelve distinct texts per resource, three words each. */
  const texts = (shift: number) =>
    Array.from({ length: 12 }, (_, i) =>
      [0, 3, 7].map((k) => words[(i + k + shift) % words.length]).join(' '),
    );

  it('copies vectors into the indexed table by trigger, searches through vector_top_k and returns only hits of the scope', async () => {
    const url = `file:${dir}/ann.db`;
    // Vectors written before the index exists are copied in when it is created.
    const exact = new LibSQLStore({ url });
    const before = new Memory({ storage: exact, embedder, options: { semanticRecall: true } });
    await before.createThread({ resourceId: 'other', threadId: 'o' });
    // The other resource holds the query's exact text: a search that ignored the scope would rank it first.
    await before.saveMessages({
      messages: ['amber delta harbor', ...texts(1)].map((content) => ({
        threadId: 'o',
        resourceId: 'other',
        role: 'user' as const,
        content,
      })),
    });
    await exact.close();

    const store = new LibSQLStore({ url, vectors: { index: true } });
    expect(store.vectors.search).toBe('index');
    const memory = new Memory({
      storage: store,
      embedder,
      options: { semanticRecall: { topK: 3, messageRange: 0, scope: 'resource' }, lastMessages: 1 },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't1' });
    await memory.createThread({ resourceId: 'u', threadId: 't2' });
    const saved = await memory.saveMessages({
      messages: texts(0).map((content, i) => ({
        threadId: i % 2 ? 't2' : 't1',
        resourceId: 'u',
        role: 'user' as const,
        content,
      })),
    });
    const raw = createClient({ url });
    const count = async (sql: string) => Number((await raw.execute(sql)).rows[0]?.n);
    // Every stored vector has its indexed copy: the 13 of the other resource (backfilled) and 12 new.
    expect(await count('SELECT count(*) AS n FROM engram_vector_ann')).toBe(25);
    expect(await count('SELECT count(*) AS n FROM engram_message_vectors')).toBe(25);
    expect(
      await count(
        "SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND name = 'engram_vector_ann_idx'",
      ),
    ).toBe(1);

    const vector = new Float32Array(
      (await embedder.doEmbed({ values: ['amber delta harbor'] })).embeddings[0] as number[],
    );
    const space = (await store.vectors.getSpace()) as { id: string; dimensions: number };
    const hits = await store.vectors.searchVectors({ space, vector, topK: 3, resourceId: 'u' });
    const ours = new Map(saved.map((m) => [m.id, m.content]));
    expect(hits.length).toBeGreaterThan(0);
    for (const hit of hits) expect(ours.has(hit.messageId)).toBe(true);
    // Approximate: the index may miss the exact best (it does at this size, now and then), but
    // what it returns is of the scope, ranked by the exact score.
    const scores = hits.map((h) => h.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const inThread = await store.vectors.searchVectors({
      space,
      vector,
      topK: 3,
      resourceId: 'u',
      threadId: 't2',
    });
    expect(inThread.length).toBeGreaterThan(0);
    for (const hit of inThread) expect(saved.find((m) => m.id === hit.messageId)?.threadId).toBe('t2');

    // Recall through the index: hits of resource u only.
    const recalled = await memory.recall({ threadId: 't1', resourceId: 'u', query: 'amber delta harbor' });
    expect(recalled.hits.length).toBeGreaterThan(0);
    for (const hit of recalled.hits) expect(ours.has(hit.message.id)).toBe(true);

    // Ranked before filtered: with one candidate per hit, the database's nearest vector (the
    // query's own text, in other resources) crowds out resource w's only message, which an
    // exact scan would return.
    await memory.createThread({ resourceId: 'w', threadId: 'w1' });
    await memory.saveMessages({
      messages: [{ threadId: 'w1', resourceId: 'w', role: 'user', content: 'iris juniper cedar' }],
    });
    const narrow = new LibSQLStore({ url, vectors: { index: { overFetch: 1 } } });
    expect(await narrow.vectors.searchVectors({ space, vector, topK: 1, resourceId: 'w' })).toEqual([]);
    const exactAgain = new LibSQLStore({ url });
    expect((await exactAgain.vectors.searchVectors({ space, vector, topK: 1, resourceId: 'w' })).length).toBe(
      1,
    );
    await narrow.close();
    await exactAgain.close();

    // Deleting a thread removes its vectors and their indexed copies.
    await memory.deleteThread('t2');
    expect(await count('SELECT count(*) AS n FROM engram_vector_ann')).toBe(20);
    raw.close();
    await store.close();
  });

  it('refuses a bad overFetch with INVALID_ARGUMENT', () => {
    expect(() => new LibSQLStore({ url: ':memory:', vectors: { index: { overFetch: 0 } } })).toThrow(
      /vectors\.index\.overFetch must be an integer from 1 to 1000, got 0/,
    );
  });
});
