import { createLexicalEmbedder, Memory, normalize } from '@engram/core';
import { DEFAULT_OVER_FETCH, LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterAll, describe, expect, it } from 'vitest';
import { searchStatement } from '../src/vectors.ts';
import { tempDir } from './helpers.ts';

const { dir, cleanup } = tempDir('engram-libsql-vectors-');
afterAll(cleanup);

/** Thread `t` of resource `r`, at the epoch. */
const threadT = {
  id: 't',
  resourceId: 'r',
  title: '',
  metadata: {},
  createdAt: new Date(0),
  updatedAt: new Date(0),
};

/** A user message of thread `t` (resource `r`) at `at` ms, its id as its text unless given. */
const messageOfT = (id: string, at: number, content: string = id) => ({
  id,
  threadId: 't',
  resourceId: 'r',
  role: 'user' as const,
  content,
  type: 'text',
  createdAt: new Date(at),
});

describe('libSQL vectors, read back through a separate client', () => {
  it('stores one F32 blob of dimensions × 4 bytes per message, and deleting the message drops it', async () => {
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
    await store.deleteMessages([saved[0]?.id as string]);
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
    // Every stored text has one indexed copy: the other resource's 13 (backfilled) and the 12
    // new vectors hold 10 texts (texts(0) and texts(1) share most of theirs).
    expect(await count('SELECT count(*) AS n FROM engram_message_vectors')).toBe(25);
    expect(await count('SELECT count(DISTINCT hash) AS n FROM engram_message_vectors')).toBe(10);
    expect(await count('SELECT count(*) AS n FROM engram_vector_ann')).toBe(10);
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
    // query's own text, in other resources) crowds out resource w's only message; the index
    // then has too few hits of the scope, and the exact scan answers.
    await memory.createThread({ resourceId: 'w', threadId: 'w1' });
    const [wOnly] = await memory.saveMessages({
      messages: [{ threadId: 'w1', resourceId: 'w', role: 'user', content: 'iris juniper cedar' }],
    });
    const narrow = new LibSQLStore({ url, vectors: { index: { overFetch: 1 } } });
    const exactAgain = new LibSQLStore({ url });
    const wHits = await exactAgain.vectors.searchVectors({ space, vector, topK: 1, resourceId: 'w' });
    expect(wHits.map((h) => h.messageId)).toEqual([wOnly?.id]);
    expect(await narrow.vectors.searchVectors({ space, vector, topK: 1, resourceId: 'w' })).toEqual(wHits);
    await narrow.close();
    await exactAgain.close();

    // Deleting a thread removes its vectors, and the indexed copies of texts no message has left.
    const distinctLeft = async () => count('SELECT count(DISTINCT hash) AS n FROM engram_message_vectors');
    await memory.deleteThread('t2');
    expect(await count('SELECT count(*) AS n FROM engram_vector_ann')).toBe(await distinctLeft());
    await memory.deleteThread('o');
    expect(await count('SELECT count(*) AS n FROM engram_message_vectors')).toBe(7);
    expect(await count('SELECT count(*) AS n FROM engram_vector_ann')).toBe(await distinctLeft());
    raw.close();
    await store.close();
  });

  it('repeated texts are indexed once: each of 40 messages is found first by its own text', async () => {
    // One user, 200 distinct messages, each followed by two short replies repeated 200 times.
    // Indexed per message, the 400 identical vectors broke the index's graph: vector_top_k
    // returned 28–40 of 40 candidates, differently from call to call, and a message's own text
    // ranked it first in 6–13 of 40 queries (the exact scan: 40).
    const url = `file:${dir}/repeats.db`;
    const store = new LibSQLStore({ url, vectors: { index: true } });
    const memory = new Memory({
      storage: store,
      embedder,
      options: { lastMessages: 0, semanticRecall: { topK: 4, messageRange: 0 } },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const pick = (i: number) => words[i % words.length];
    const distinct = Array.from(
      { length: 200 },
      (_, i) => `${pick(i)} ${pick(Math.floor(i / 10))} ${pick(i * 7 + 3)} note ${i}`,
    );
    await memory.saveMessages({
      messages: distinct.flatMap((text) =>
        [text, 'ok', 'thanks!'].map((content) => ({
          threadId: 't',
          resourceId: 'u',
          role: 'user' as const,
          content,
        })),
      ),
    });
    const exact = new LibSQLStore({ url });
    const raw = createClient({ url });
    const space = (await store.vectors.getSpace()) as { id: string; dimensions: number };
    // What the index is asked for: (topK + excluded) × the default overFetch.
    const wanted = 4 * DEFAULT_OVER_FETCH;
    let under = 0;
    let ownFirst = 0;
    let same = 0;
    for (let q = 0; q < 40; q++) {
      const text = distinct[q * 5] as string;
      // As recall embeds the query, so the index sees the same vector below.
      const vector = normalize((await embedder.doEmbed({ values: [text] })).embeddings[0] as number[]);
      if (!vector) throw new Error('no query vector');
      const search = { space, vector, topK: 4, resourceId: 'u' };
      const [got, want] = await Promise.all([
        store.vectors.searchVectors(search),
        exact.vectors.searchVectors(search),
      ]);
      const fetched = await raw.execute({
        sql: "SELECT count(*) AS n FROM vector_top_k('engram_vector_ann_idx', vector32(?), ?)",
        args: [new Uint8Array(vector.buffer), wanted],
      });
      const { hits } = await memory.recall({ threadId: 't', resourceId: 'u', query: text });
      if (hits[0]?.message.content === text) ownFirst++;
      if (got.map((h) => h.messageId).join() === want.map((h) => h.messageId).join()) same++;
      if (Number(fetched.rows[0]?.n) < wanted) under++;
    }
    console.log(
      `vector_top_k returned fewer than ${wanted} in ${under} of 40 queries; own text first in ${ownFirst} of 40, top 4 equal to the exact scan's in ${same}`,
    );
    // The exact scan ranks each message's own text first, always; so must the index.
    expect(ownFirst).toBe(40);
    expect(await raw.execute('SELECT count(*) AS n FROM engram_vector_ann')).toMatchObject({
      rows: [{ n: 202 }],
    });
    raw.close();
    await exact.close();
    await store.close();
  });

  it("an ANN search starts from the index's candidates and joins each by key, never scanning the space's vectors", async () => {
    const url = `file:${dir}/ann-plan.db`;
    const store = new LibSQLStore({ url, vectors: { index: true } });
    const space = { id: 'test:plan', dimensions: 4 };
    await store.vectors.claimSpace(space);
    const raw = createClient({ url });
    const search = { space, vector: Float32Array.of(1, 0, 0, 0), topK: 3, resourceId: 'u', threadId: 't' };
    const { sql, args } = searchStatement(search, 30);
    const plan = (await raw.execute({ sql: `EXPLAIN QUERY PLAN ${sql}`, args })).rows.map((r) =>
      String(r.detail),
    );
    const at = (pattern: RegExp) => plan.findIndex((line) => pattern.test(line));
    // Outermost the materialised candidates, then each candidate's row, vectors and message by key.
    expect(at(/^SCAN k$/)).toBeGreaterThanOrEqual(0);
    expect(at(/^SEARCH a USING INTEGER PRIMARY KEY/)).toBeGreaterThan(at(/^SCAN k$/));
    expect(at(/^SEARCH v USING .*\(space=\? AND hash=\?\)/)).toBeGreaterThan(at(/^SEARCH a /));
    expect(at(/^SEARCH m USING .*\(id=\?\)/)).toBeGreaterThan(at(/^SEARCH v /));
    expect(plan.filter((line) => /^SCAN (v|m|a)\b/.test(line))).toEqual([]);
    raw.close();
    await store.close();
  });

  it('writing a text already indexed again succeeds, also over the triggers an older version made', async () => {
    const url = `file:${dir}/ann-again.db`;
    const space = { id: 'test:again', dimensions: 2 };
    const vector = new Float32Array([1, 0]);
    // The older version's insert trigger, whose `INSERT OR IGNORE` the upsert overrode.
    const raw = createClient({ url });
    await raw.batch([
      `CREATE TABLE engram_vector_ann (id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, embedding F32_BLOB(2) NOT NULL)`,
    ]);
    const plain = new LibSQLStore({ url });
    await plain.init();
    await plain.close();
    await raw.execute(`CREATE TRIGGER engram_vector_ann_on_insert AFTER INSERT ON engram_message_vectors
      BEGIN INSERT OR IGNORE INTO engram_vector_ann (hash, embedding) VALUES (NEW.hash, NEW.embedding); END`);
    const store = new LibSQLStore({ url, vectors: { index: true } });
    const message = (id: string) => messageOfT(id, 0, 'same');
    try {
      await store.saveThread(threadT);
      await store.saveMessages([message('a'), message('b'), message('c')]);
      await store.vectors.claimSpace(space);
      await store.vectors.upsertVectors(space, [
        { messageId: 'a', hash: 'same', vector },
        { messageId: 'b', hash: 'same', vector },
      ]);
      await store.vectors.upsertVectors(space, [{ messageId: 'a', hash: 'same', vector }]);
      await store.vectors.upsertVectors(space, [{ messageId: 'c', hash: 'same', vector }]);
      const hits = await store.vectors.searchVectors({ space, vector, topK: 5, resourceId: 'r' });
      expect(hits.map((h) => h.messageId).sort()).toEqual(['a', 'b', 'c']);
      const triggers = await raw.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'engram_vector_ann%' ORDER BY name",
      );
      expect(triggers.rows.map((row) => row.name)).toEqual([
        'engram_vector_ann_delete_2',
        'engram_vector_ann_insert_2',
        'engram_vector_ann_update_2',
      ]);
      expect(Number((await raw.execute('SELECT count(*) AS n FROM engram_vector_ann')).rows[0]?.n)).toBe(1);
    } finally {
      raw.close();
      await store.close();
    }
  });

  it('refuses a bad overFetch with INVALID_ARGUMENT', () => {
    expect(() => new LibSQLStore({ url: ':memory:', vectors: { index: { overFetch: 0 } } })).toThrow(
      /vectors\.index\.overFetch must be an integer from 1 to 1000, got 0/,
    );
  });
});

describe('libSQL exact search over kept copies of the vectors', () => {
  const space = { id: 'test:random', dimensions: 16 };
  const unit = (i: number) =>
    normalize(Array.from({ length: 16 }, (_, j) => Math.sin(i * 31 + j * 7))) as Float32Array;

  it('deleting the newest vector does not hide the next write from a copy: a new vector, a moved message', async () => {
    const url = `file:${dir}/kept-newest.db`;
    const [searcher, writer] = [new LibSQLStore({ url }), new LibSQLStore({ url })];
    await writer.saveThread(threadT);
    await writer.vectors.claimSpace(space);
    await writer.saveMessages([messageOfT('a', 0), messageOfT('b', 1)]);
    await writer.vectors.upsertVectors(space, [
      { messageId: 'a', hash: 'a', vector: unit(1) },
      { messageId: 'b', hash: 'b', vector: unit(2) },
    ]);
    const search = () => searcher.vectors.searchVectors({ space, vector: unit(1), topK: 5, resourceId: 'r' });
    expect((await search()).map((h) => h.messageId).sort()).toEqual(['a', 'b']);
    // b's vector was the newest: the writes after its delete must still be newer than the copy.
    await writer.deleteMessages(['b']);
    await writer.saveMessages([messageOfT('a', 5_000)]);
    expect((await search()).map((h) => [h.messageId, h.createdAt.getTime()])).toEqual([['a', 5_000]]);
    await writer.deleteMessages(['a']);
    await writer.saveMessages([messageOfT('c', 7)]);
    await writer.vectors.upsertVectors(space, [{ messageId: 'c', hash: 'c', vector: unit(1) }]);
    expect((await search()).map((h) => h.messageId)).toEqual(['c']);
    await Promise.all([searcher.close(), writer.close()]);
  });

  it('deleteResource leaves no removal-log entry naming the resource, and kept copies of it and of others stay exact', async () => {
    const url = `file:${dir}/kept-erased.db`;
    const [searcher, writer] = [new LibSQLStore({ url }), new LibSQLStore({ url })];
    const threadU = { ...threadT, id: 'u', resourceId: 's' };
    const ofU = (id: string, at: number) => ({ ...messageOfT(id, at), threadId: 'u', resourceId: 's' });
    await writer.saveThread(threadT);
    await writer.saveThread(threadU);
    await writer.vectors.claimSpace(space);
    await writer.saveMessages([messageOfT('r1', 0), messageOfT('r2', 1), ofU('s1', 2), ofU('s2', 3)]);
    await writer.vectors.upsertVectors(
      space,
      ['r1', 'r2', 's1', 's2'].map((id, i) => ({ messageId: id, hash: id, vector: unit(i) })),
    );
    const search = async (resourceId: string) =>
      (await searcher.vectors.searchVectors({ space, vector: unit(0), topK: 5, resourceId }))
        .map((h) => h.messageId)
        .sort();
    expect([await search('r'), await search('s')]).toEqual([
      ['r1', 'r2'],
      ['s1', 's2'],
    ]);
    // s1's entry is older than the erasure's: the erasure drops it, so the copy of s reads s again.
    await writer.deleteMessages(['s1']);
    await new Memory({ storage: writer }).deleteResource({ resourceId: 'r' });
    const raw = createClient({ url });
    const log = await raw.execute('SELECT resource_id, message_id FROM engram_vector_removals');
    expect(log.rows.map((row) => [row.resource_id, row.message_id])).toEqual([['', '']]);
    raw.close();
    expect([await search('r'), await search('s')]).toEqual([[], ['s2']]);
    // The resource anew: its copy holds what is stored now, nothing erased.
    await writer.saveThread(threadT);
    await writer.saveMessages([messageOfT('r3', 9)]);
    await writer.vectors.upsertVectors(space, [{ messageId: 'r3', hash: 'r3', vector: unit(0) }]);
    expect(await search('r')).toEqual(['r3']);
    await Promise.all([searcher.close(), writer.close()]);
  });

  it('a copy older than the removal log reads its resource again: a message deleted before the log dropped its entry is never found', async () => {
    const url = `file:${dir}/kept.db`;
    const [searcher, writer, inSql] = [
      new LibSQLStore({ url }),
      new LibSQLStore({ url }),
      new LibSQLStore({ url, vectors: { cache: false } }),
    ];
    await writer.saveThread(threadT);
    await writer.vectors.claimSpace(space);
    const n = 10_050;
    const ids = Array.from({ length: n }, (_, i) => `m${i}`);
    for (let from = 0; from < n; from += 1_000) {
      const batch = ids.slice(from, from + 1_000);
      await writer.saveMessages(batch.map((id, k) => messageOfT(id, from + k)));
      await writer.vectors.upsertVectors(
        space,
        batch.map((id, k) => ({ messageId: id, hash: id, vector: unit(from + k) })),
      );
    }
    const search = (store: LibSQLStore) =>
      store.vectors.searchVectors({ space, vector: unit(0), topK: 3, resourceId: 'r' });
    expect((await search(searcher))[0]?.messageId).toBe('m0');
    // m0's log entry, then 10,000 more: the log keeps the newest 10,000, so m0's entry is gone.
    await writer.deleteMessages(['m0']);
    await writer.deleteMessages(ids.slice(1, 10_001));
    const after = await search(searcher);
    expect(after.map((h) => h.messageId)).not.toContain('m0');
    // SQL scores in single precision, the kept copy in double: the same hits, scores within 1e-6.
    const sql = await search(inSql);
    expect(after.map((h) => h.messageId)).toEqual(sql.map((h) => h.messageId));
    for (const [i, h] of after.entries()) expect(h.score).toBeCloseTo(sql[i]?.score ?? Number.NaN, 6);
    const raw = createClient({ url });
    const log = await raw.execute('SELECT count(*) AS n, min(seq) AS oldest FROM engram_vector_removals');
    expect(Number(log.rows[0]?.n)).toBe(10_000);
    expect(Number(log.rows[0]?.oldest)).toBe(2);
    raw.close();
    await Promise.all([searcher.close(), writer.close(), inSql.close()]);
  });
});
