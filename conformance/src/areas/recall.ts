import { setTimeout as sleep } from 'node:timers/promises';
import {
  capabilitiesOf,
  InMemoryStore,
  Memory,
  type MemoryStorage,
  type Message,
  type VectorHit,
  type VectorStore,
  type WindowedSearch,
} from '@engram/core';
import { ConformanceError, expectEqual, expectRejects, expectTrue, idsOf } from '../assert.ts';
import { raceProcesses } from '../concurrency/harness.ts';
import { runRacer } from '../concurrency/tasks.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import { conformanceEmbedder, random, SPACE, unit } from '../vectors.ts';
import { HOSTILE_SUFFIXES } from './isolation.ts';

const check = defineArea('recall');

/** Rounds of `upsertVectors` racing `deleteThread`. */
const DELETE_RACE_ROUNDS = 20;

/** Scores of the store and of the exact double-precision oracle may differ by float32 rounding. */
const EPSILON = 1e-4;

function vectorsOf(store: MemoryStorage): VectorStore {
  if (!store.vectors) skipCheck(`${store.name} declares no vectors (no semantic recall)`);
  return store.vectors;
}

/** Name suffix of checks that apply only to stores declaring `vectors`. */
export const NEEDS_VECTORS = ' [needs vectors]';

/** Creates a thread with `n` messages (1 ms apart from `start`) and stores a vector for each. */
async function seed(
  store: MemoryStorage,
  threadId: string,
  resourceId: string,
  vectors: Float32Array[],
  start = 0,
): Promise<Message[]> {
  const t = thread(threadId, resourceId);
  await store.saveThread(t);
  const messages = vectors.map((_, i) => message(`${threadId}-m${i}`, t, at(start + i)));
  await store.saveMessages(messages);
  const space = await vectorsOf(store).claimSpace(SPACE);
  expectEqual(space, SPACE, 'claimSpace (the suite uses one space per database)');
  await vectorsOf(store).upsertVectors(
    SPACE,
    messages.map((m, i) => ({ messageId: m.id, hash: `h-${m.id}`, vector: vectors[i] as Float32Array })),
  );
  return messages;
}

/** Seeds the same data into the store under test and into the in-memory oracle. */
async function seedBoth(store: MemoryStorage, oracle: MemoryStorage, args: Parameters<typeof seed>) {
  const [, threadId, resourceId, vectors, start] = args;
  await seed(oracle, threadId, resourceId, vectors, start);
  return seed(store, threadId, resourceId, vectors, start);
}

/**
 * A windowed search with `history` (`historyInSearch`) returns what three reads return: the
 * history as `listMessages` lists the thread's newest `last` messages in the resource, the hits of
 * `searchVectors` with those left out too, and their windows as `listMessages` reads them.
 */
async function expectHistoryRead(
  store: MemoryStorage,
  args: WindowedSearch & { history: { threadId: string; last: number } },
  what: string,
): Promise<void> {
  const vectors = vectorsOf(store);
  const { history, before, after, ...search } = args;
  const got = await (vectors.searchWithWindows as NonNullable<VectorStore['searchWithWindows']>)(args);
  const listed =
    history.last === 0
      ? []
      : (
          await store.listMessages({
            threadId: history.threadId,
            resourceId: args.resourceId,
            perPage: history.last,
            direction: 'DESC',
          })
        ).messages.map((m) => m.id);
  expectEqual(got.history, listed, `${what}: history as listMessages lists it, newest first`);
  const hits = await vectors.searchVectors({
    ...search,
    excludeIds: [...(search.excludeIds ?? []), ...listed],
  });
  expectEqual(got.hits, hits, `${what}: hits as searchVectors returns them without the history`);
  const windows = await listedWindows(store, hits, { resourceId: args.resourceId, before, after });
  expectEqual(got.windows, windows, `${what}: windows as listMessages reads them`);
}

/** The windows of `hits` as `listMessages` reads them, in one call (none for no hits). */
async function listedWindows(
  store: MemoryStorage,
  hits: VectorHit[],
  { resourceId, before, after }: { resourceId: string; before: number; after: number },
): Promise<Message[]> {
  const first = hits[0];
  if (!first) return [];
  const include = hits.map((h) => ({
    id: h.messageId,
    withPreviousMessages: before,
    withNextMessages: after,
  }));
  return (await store.listMessages({ threadId: first.threadId, resourceId, perPage: 0, include })).messages;
}

function memoryOver(store: MemoryStorage, topK = 3, messageRange = 1): Memory {
  return new Memory({
    storage: store,
    embedder: conformanceEmbedder(),
    onEmbeddingError: (error) => {
      throw error;
    },
    options: { lastMessages: 0, semanticRecall: { mode: 'vector', topK, messageRange } },
  });
}

/**
 * `got` ranks as the exact `want`: the same number of hits, each scoring the same within
 * `EPSILON`, the same message unless its score ties a neighbour's, and the same thread.
 */
function expectRanking(got: VectorHit[], want: VectorHit[], what: string): void {
  expectEqual(got.length, want.length, `${what}: number of hits`);
  want.forEach((w, i) => {
    const g = got[i];
    if (!g || Math.abs(g.score - w.score) > EPSILON) {
      throw new ConformanceError(`${what}: hit ${i} scores ${g?.score}, exact ranking says ${w.score}`);
    }
    expectTrue(
      g.messageId === w.messageId ||
        Math.abs(w.score - (want[i + 1]?.score ?? w.score - 1)) < EPSILON ||
        Math.abs(w.score - (want[i - 1]?.score ?? w.score + 1)) < EPSILON,
      `${what}: hit ${i} is ${g.messageId}, exact ranking says ${w.messageId}`,
    );
    if (g.messageId === w.messageId) expectEqual(g.threadId, w.threadId, `${what}: hit ${i} threadId`);
  });
}

/** Semantic recall: exact ranking within a scope, windows, vectors kept in step with messages. */
export const recallChecks = [
  check(
    `top K equal an exact ranking of the same vectors (differential, in-memory oracle)${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const oracle = new InMemoryStore();
      const r = ctx.id('r');
      const next = random(42);
      await seedBoth(store, oracle, [store, `${r}-a`, r, Array.from({ length: 40 }, () => unit(next))]);
      await seedBoth(store, oracle, [store, `${r}-b`, r, Array.from({ length: 25 }, () => unit(next)), 100]);
      // ties: identical vectors order by createdAt DESC, then id
      const tie = unit(next);
      await seedBoth(store, oracle, [store, `${r}-c`, r, [tie, tie, tie], 500]);
      const queries = [...Array.from({ length: 8 }, () => unit(next)), tie];
      for (const [qi, vector] of queries.entries()) {
        for (const args of [
          { topK: 5, resourceId: r },
          { topK: 7, resourceId: r, threadId: `${r}-b` },
          { topK: 100, resourceId: r },
          { topK: 3, resourceId: r, excludeIds: [`${r}-c-m2`, `${r}-a-m0`] },
        ]) {
          const got = await vectors.searchVectors({ space: SPACE, vector, ...args });
          const want = await vectorsOf(oracle).searchVectors({ space: SPACE, vector, ...args });
          expectRanking(got, want, `query ${qi} ${JSON.stringify({ ...args, resourceId: 'r' })}`);
        }
        ctx.log(`query ${qi}: 4 searches equal the exact ranking`);
      }
      const tied = await vectors.searchVectors({
        space: SPACE,
        vector: tie,
        topK: 3,
        resourceId: r,
        threadId: `${r}-c`,
      });
      expectEqual(
        tied.map((h) => h.messageId),
        [`${r}-c-m2`, `${r}-c-m1`, `${r}-c-m0`],
        'equal scores: newest first',
      );
    },
  ),

  check(
    `searchWithWindows returns what searchVectors and the windows' listMessages return (optional fast path)${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const windowed = vectors.searchWithWindows;
      if (!windowed) {
        skipCheck(`${store.name} has no searchWithWindows (optional: core searches, then reads the windows)`);
      }
      const r = ctx.id('r');
      const next = random(77);
      const query = unit(next);
      await seed(
        store,
        `${r}-a`,
        r,
        Array.from({ length: 30 }, () => unit(next)),
      );
      await seed(
        store,
        `${r}-b`,
        r,
        Array.from({ length: 20 }, () => unit(next)),
        100,
      );
      await seed(store, `${r}-c`, r, [query, query, query], 500);
      // Closer vectors in another resource must neither be hits nor join a window: in a thread of
      // their own, and in one of ours moved there with messages between ours.
      const other = ctx.id('other');
      await seed(
        store,
        `${r}-x`,
        other,
        Array.from({ length: 5 }, () => query),
        501,
      );
      const moved = thread(`${r}-b`, other);
      await store.saveThread(moved);
      const late = [0, 1, 2].map((i) => message(`${r}-b-late${i}`, moved, at(102 + i * 5)));
      await store.saveMessages(late);
      await vectors.upsertVectors(
        SPACE,
        late.map((m) => ({ messageId: m.id, hash: `h-${m.id}`, vector: query })),
      );
      // One instant for a thread's messages: history and windows order them by id alone, in UTF-8
      // byte order ('C' < 'a' < 'b' < 'ä'), whatever order they were saved in.
      const tied = thread(`${r}-d`, r);
      await store.saveThread(tied);
      const instant = ['b', 'ä', 'C', 'a'].map((x) => message(`${r}-d-${x}`, tied, at(600)));
      await store.saveMessages(instant);
      await vectors.upsertVectors(
        SPACE,
        instant.map((m, i) => ({ messageId: m.id, hash: `h-${m.id}`, vector: i % 2 ? query : unit(next) })),
      );
      let compared = 0;
      for (const vector of [query, ...Array.from({ length: 4 }, () => unit(next))]) {
        for (const args of [
          { topK: 3, resourceId: r, before: 2, after: 2 },
          { topK: 8, resourceId: r, before: 0, after: 1 },
          { topK: 5, resourceId: r, threadId: `${r}-b`, before: 3, after: 0 },
          { topK: 60, resourceId: r, before: 1, after: 1 },
          { topK: 4, resourceId: r, before: 2, after: 2, excludeIds: [`${r}-c-m1`, `${r}-a-m3`] },
          { topK: 3, resourceId: ctx.id('nobody'), before: 2, after: 2 },
        ]) {
          const what = JSON.stringify({ ...args, resourceId: args.resourceId === r ? 'r' : 'another' });
          const got = await windowed({ space: SPACE, vector, ...args });
          const { before: _before, after: _after, ...search } = args;
          const hits = await vectors.searchVectors({ space: SPACE, vector, ...search });
          expectEqual(got.hits, hits, `${what}: hits as searchVectors returns them`);
          const listed = await listedWindows(store, hits, args);
          expectEqual(got.windows, listed, `${what}: windows as listMessages reads them`);
          compared++;
          if (vectors.historyInSearch) {
            for (const history of [
              { threadId: `${r}-a`, last: 4 },
              { threadId: `${r}-c`, last: 2 },
              { threadId: `${r}-b`, last: 0 },
              { threadId: moved.id, last: 3 },
              { threadId: tied.id, last: 2 },
            ]) {
              const seen = `${what} with history ${JSON.stringify(history)}`;
              await expectHistoryRead(store, { space: SPACE, vector, ...args, history }, seen);
              compared++;
            }
          }
        }
      }
      ctx.log(
        `${compared} windowed searches${vectors.historyInSearch ? ' (with and without the history)' : ''} equal searchVectors plus the listMessages of the windows${vectors.historyInSearch ? ' and the history' : ''}`,
      );
      if (!vectors.historyInSearch) {
        await expectRejects(
          () =>
            windowed({
              space: SPACE,
              vector: query,
              topK: 3,
              resourceId: r,
              before: 0,
              after: 0,
              history: { threadId: `${r}-a`, last: 2 },
            }),
          ['UNSUPPORTED'],
          'history where historyInSearch is false',
        );
      }
      await expectRejects(
        () => windowed({ space: SPACE, vector: query, topK: 3, resourceId: r, before: -1, after: 2 }),
        ['INVALID_ARGUMENT'],
        'before: -1',
      );
    },
  ),

  check(
    `resource scope never returns another resource's messages, hostile ids included${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const base = ctx.id('r');
      const same = unit(random(3));
      const resources = [`${base}1`, `${base}10`, ...HOSTILE_SUFFIXES.map((s) => `${base}${s}`)];
      for (const r of resources) await seed(store, `${r}-t`, r, [same, same]);
      const windowed = vectors.historyInSearch ? vectors.searchWithWindows : undefined;
      for (const [i, r] of resources.entries()) {
        const hits = await vectors.searchVectors({ space: SPACE, vector: same, topK: 50, resourceId: r });
        expectEqual(
          hits.map((h) => h.messageId).sort(),
          [`${r}-t-m0`, `${r}-t-m1`],
          `resource ${JSON.stringify(r)}`,
        );
        if (!windowed) continue;
        // The history read with the search: a look-alike resource's thread lists nothing.
        const search = { space: SPACE, vector: same, topK: 50, resourceId: r, before: 1, after: 1 };
        const neighbour = resources[(i + 1) % resources.length];
        const foreign = await windowed({ ...search, history: { threadId: `${neighbour}-t`, last: 5 } });
        expectEqual(
          foreign.history,
          [],
          `resource ${JSON.stringify(r)}, history of ${JSON.stringify(neighbour)}`,
        );
        expectEqual(foreign.hits, hits, `resource ${JSON.stringify(r)}, hits beside a foreign history`);
        const own = await windowed({ ...search, history: { threadId: `${r}-t`, last: 1 } });
        expectEqual(own.history, [`${r}-t-m1`], `resource ${JSON.stringify(r)}, its own history`);
        expectEqual(
          own.hits.map((h) => h.messageId),
          [`${r}-t-m0`],
          `resource ${JSON.stringify(r)}, hits without its history`,
        );
      }
      ctx.log(
        `${resources.length} resources, each saw exactly its own 2 messages${windowed ? ", and no look-alike resource's history" : ''}`,
      );
    },
  ),

  check(
    `scope is applied before ranking: K hits even when other scopes hold closer vectors${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const r = ctx.id('r');
      const crowd = ctx.id('crowd');
      const query = unit(random(11));
      const next = random(12);
      // 40 exact matches in another resource, and 3 poor ones in ours (one in a second thread).
      await seed(
        store,
        `${crowd}-t`,
        crowd,
        Array.from({ length: 40 }, () => query),
      );
      const ours = await seed(store, `${r}-a`, r, [unit(next), unit(next)]);
      const other = await seed(store, `${r}-b`, r, [unit(next)], 10);
      await seed(
        store,
        `${crowd}-t2`,
        crowd,
        Array.from({ length: 10 }, () => query),
        20,
      );
      const hits = await vectors.searchVectors({ space: SPACE, vector: query, topK: 3, resourceId: r });
      expectEqual(
        hits.map((h) => h.messageId).sort(),
        [...ours, ...other].map((m) => m.id).sort(),
        'topK 3 in a resource with 3 vectors, another resource holding 50 closer ones',
      );
      const inThread = await vectors.searchVectors({
        space: SPACE,
        vector: query,
        topK: 2,
        resourceId: r,
        threadId: `${r}-a`,
      });
      expectEqual(
        inThread.map((h) => h.messageId).sort(),
        ours.map((m) => m.id).sort(),
        'topK 2 in a thread with 2 vectors',
      );
    },
  ),

  check(
    `a thread moved to another resource: the messages that stay the old resource's are still found under it, the new ones under the new (in-memory oracle)${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const oracle = new InMemoryStore();
      const [r, other] = [ctx.id('r'), ctx.id('other')];
      const next = random(21);
      const kept = Array.from({ length: 4 }, () => unit(next));
      await seedBoth(store, oracle, [store, `${r}-a`, r, [unit(next), unit(next)]]);
      await seedBoth(store, oracle, [store, `${r}-b`, r, kept, 10]);
      const moved = thread(`${r}-b`, other);
      const late = [0, 1].map((i) => message(`${r}-b-late${i}`, moved, at(20 + i)));
      for (const s of [store, oracle]) {
        await s.saveThread(moved);
        await s.saveMessages(late);
        await vectorsOf(s).upsertVectors(
          SPACE,
          late.map((m, i) => ({ messageId: m.id, hash: `h-${m.id}`, vector: kept[i] as Float32Array })),
        );
      }
      let searched = 0;
      for (const vector of [...kept, unit(next)]) {
        for (const args of [
          { topK: 10, resourceId: r },
          { topK: 10, resourceId: other },
          { topK: 10, resourceId: r, threadId: `${r}-b` },
          { topK: 10, resourceId: other, threadId: `${r}-b` },
        ]) {
          const what = `${args.resourceId === r ? 'the old resource' : 'the new one'}${args.threadId ? ', thread scope' : ''}`;
          const got = await vectors.searchVectors({ space: SPACE, vector, ...args });
          const want = await vectorsOf(oracle).searchVectors({ space: SPACE, vector, ...args });
          expectRanking(got, want, what);
          searched++;
        }
      }
      ctx.log(`${searched} searches after the move equal the oracle (6 + 2 messages in one thread)`);
    },
  ),

  check(
    `thread scope never returns another thread's messages, hostile ids included${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const r = ctx.id('r');
      const same = unit(random(4));
      const threads = [`${r}-t1`, `${r}-t10`, ...HOSTILE_SUFFIXES.map((s) => `${r}-t${s}`)];
      for (const t of threads) await seed(store, t, r, [same]);
      for (const t of threads) {
        const hits = await vectors.searchVectors({
          space: SPACE,
          vector: same,
          topK: 50,
          resourceId: r,
          threadId: t,
        });
        expectEqual(
          hits.map((h) => h.messageId),
          [`${t}-m0`],
          `thread ${JSON.stringify(t)}`,
        );
      }
      const foreign = await vectors.searchVectors({
        space: SPACE,
        vector: same,
        topK: 50,
        resourceId: ctx.id('other'),
        threadId: threads[0],
      });
      expectEqual(foreign, [], "a thread searched under another resource's id");
    },
  ),

  check(
    `recall windows come from the hit's own thread, across the resource's threads${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      vectorsOf(store);
      const memory = memoryOver(store, 2, 1);
      const r = ctx.id('r');
      const [a, b] = [`${r}-a`, `${r}-b`];
      await memory.createThread({ resourceId: r, threadId: a });
      await memory.createThread({ resourceId: r, threadId: b });
      const say = (threadId: string, content: string, ms: number) => ({
        threadId,
        resourceId: r,
        role: 'user' as const,
        content,
        createdAt: at(ms),
      });
      // interleaved in time, so a window taken by time rather than by thread shows it
      await memory.saveMessages({
        messages: [
          say(a, 'a0', 0),
          say(b, 'b0', 1),
          say(a, 'v:5 target', 2),
          say(b, 'b1', 3),
          say(a, 'a2', 4),
        ],
      });
      const result = await memory.recall({ threadId: b, resourceId: r, query: 'v:5', topK: 1 });
      const hit = result.hits[0];
      expectEqual(hit?.message.content, 'v:5 target', 'the hit');
      expectEqual(hit?.threadId, a, "the hit's threadId");
      expectEqual(
        hit?.window.map((m) => m.content),
        ['a0', 'v:5 target', 'a2'],
        "the hit's window",
      );
      expectTrue((hit?.score ?? 0) > 1 - EPSILON, `an identical vector scores 1, got ${hit?.score}`);
    },
  ),

  check(
    `deleting a message or a thread deletes its vectors in the same write${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const r = ctx.id('r');
      const next = random(5);
      const a = await seed(store, `${r}-a`, r, [unit(next), unit(next), unit(next)]);
      const b = await seed(store, `${r}-b`, r, [unit(next), unit(next)]);
      const ids = [...a, ...b].map((m) => m.id);
      expectEqual((await vectors.getVectors(SPACE, ids)).length, 5, 'vectors stored');
      await store.deleteMessages([a[1]?.id as string]);
      await store.deleteThread({ threadId: `${r}-b` });
      const left = (await vectors.getVectors(SPACE, ids)).map((v) => v.messageId).sort();
      expectEqual(
        left,
        [a[0]?.id, a[2]?.id].sort(),
        'vectors left after deleting one message and one thread',
      );
      const hits = await vectors.searchVectors({ space: SPACE, vector: unit(next), topK: 10, resourceId: r });
      expectEqual(hits.map((h) => h.messageId).sort(), left, 'search after the deletes');
      // re-creating a deleted message does not resurrect its vector
      await store.saveThread(thread(`${r}-b`, r));
      await store.saveMessages([b[0] as Message]);
      expectEqual(
        await vectors.getVectors(SPACE, [b[0]?.id as string]),
        [],
        'a re-created message has no vector',
      );
      // vectors of absent messages are not stored (no orphans)
      const absent = ctx.id('absent');
      await vectors.upsertVectors(SPACE, [{ messageId: absent, hash: 'h', vector: unit(next) }]);
      expectEqual(await vectors.getVectors(SPACE, [absent]), [], 'a vector upserted for an absent message');
    },
  ),

  check(
    `upsertVectors racing deleteThread of its messages' thread (another store instance) leaves no vector of a deleted message (${DELETE_RACE_ROUNDS} rounds)${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const writer = vectorsOf(capabilitiesOf(store).processLocal ? store : await ctx.store());
      await vectors.claimSpace(SPACE);
      const r = ctx.id('r');
      const next = random(11);
      let orphaned = 0;
      let kept = 0;
      for (let round = 0; round < DELETE_RACE_ROUNDS; round++) {
        const t = thread(ctx.id('t'), r);
        await store.saveThread(t);
        const messages = [0, 1, 2].map((k) => message(`${t.id}-m${k}`, t, at(k)));
        await store.saveMessages(messages);
        const upserts = messages.map((m) => ({ messageId: m.id, hash: `h-${m.id}`, vector: unit(next) }));
        // The upsert starts 0–18 ms in, the delete at 10 ms: either may come first, or both at once.
        let deletedAt = 0;
        let upsertAt = 0;
        await Promise.all([
          sleep((round % 10) * 2).then(async () => {
            await writer.upsertVectors(SPACE, upserts);
            upsertAt = performance.now();
          }),
          sleep(10).then(async () => {
            await store.deleteThread({ threadId: t.id });
            deletedAt = performance.now();
          }),
        ]);
        if (upsertAt < deletedAt) kept++;
        if ((await vectors.getVectors(SPACE, idsOf(messages))).length > 0) orphaned++;
      }
      if (orphaned > 0) {
        throw new ConformanceError(
          `${orphaned} of ${DELETE_RACE_ROUNDS} rounds left vectors of the messages deleteThread removed while upsertVectors wrote them (a vector of a message deleted meanwhile must be skipped)`,
        );
      }
      ctx.log(
        `upsertVectors raced deleteThread ${DELETE_RACE_ROUNDS} times (${kept} upserts returned first): no vector outlived its message`,
      );
    },
  ),

  check(`an edited message is re-embedded and found by its new text only${NEEDS_VECTORS}`, async (ctx) => {
    const store = await ctx.store();
    const vectors = vectorsOf(store);
    const memory = memoryOver(store, 1, 0);
    const r = ctx.id('r');
    const [t, other] = [`${r}-t`, `${r}-o`];
    await memory.createThread({ resourceId: r, threadId: t });
    await memory.createThread({ resourceId: r, threadId: other });
    const [m] = await memory.saveMessages({
      messages: [{ threadId: t, resourceId: r, role: 'user', content: 'v:1' }],
    });
    const [before] = await vectors.getVectors(SPACE, [m?.id as string]);
    await memory.saveMessages({ messages: [{ ...(m as Message), content: 'v:2' }] });
    const [after] = await vectors.getVectors(SPACE, [m?.id as string]);
    expectTrue(before && after && before.hash !== after.hash, 'the stored hash changes with the text');
    const found = await memory.recall({ threadId: other, resourceId: r, query: 'v:2' });
    expectTrue(
      (found.hits[0]?.score ?? 0) > 1 - EPSILON,
      `the new text matches exactly, got ${found.hits[0]?.score}`,
    );
    const old = await memory.recall({ threadId: other, resourceId: r, query: 'v:1' });
    expectTrue((old.hits[0]?.score ?? 0) < 1 - EPSILON, 'the old text no longer matches exactly');
    expectEqual((await vectors.getVectors(SPACE, [m?.id as string])).length, 1, 'one vector per message');
  }),

  check(
    `huge (1e300) and subnormal (1e-310) embeddings keep their direction, zero vectors are never stored, no score is NaN, recall ranks as the in-memory reference${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const oracle = new InMemoryStore();
      const r = ctx.id('r');
      const [t, now] = [`${r}-t`, `${r}-now`];
      // Unscaled, the squares of 1e200 overflow to a zero vector and those of 1e-310 underflow.
      const contents = [
        'v:1*1e200',
        'v:2*1e-310',
        'v:3*1e300',
        'v:4*1e-300',
        'v:5*0',
        'v:6',
        'v:7*1e155',
        'v:8*3e-320',
        'v:9',
        'v:10*1e200',
      ];
      const both = [store, oracle].map((storage) => ({ storage, memory: memoryOver(storage, 5, 0) }));
      for (const { memory } of both) {
        await memory.createThread({ resourceId: r, threadId: t });
        await memory.createThread({ resourceId: r, threadId: now });
        await memory.saveMessages({
          messages: contents.map((content, i) => ({
            id: `${t}-m${i}`,
            threadId: t,
            resourceId: r,
            role: 'user' as const,
            content,
            createdAt: at(i),
          })),
        });
      }
      const ids = contents.map((_, i) => `${t}-m${i}`);
      expectEqual(
        (await vectors.getVectors(SPACE, ids)).map((v) => v.messageId).sort(),
        ids.filter((_, i) => i !== 4).sort(),
        'stored vectors (an all-zero embedding has no direction: none for it)',
      );
      const queries = ['v:1', 'v:2', 'v:3*1e-250', 'v:8', 'v:7*1e250', 'v:6*2e-310', 'v:11*1e300', 'v:12'];
      for (const query of queries) {
        const [got, want] = await Promise.all(
          both.map(async ({ memory }) => (await memory.recall({ threadId: now, resourceId: r, query })).hits),
        );
        const what = `recall of ${JSON.stringify(query)}`;
        for (const hit of got ?? []) {
          expectTrue(
            Number.isFinite(hit.score) && Math.abs(hit.score) <= 1 + EPSILON,
            `${what}: ${hit.message.content} scores ${hit.score}, not a cosine`,
          );
        }
        expectEqual(got?.length, want?.length, `${what}: number of hits`);
        (want ?? []).forEach((w, i) => {
          const g = got?.[i];
          const tied = (j: number) => Math.abs(w.score - (want?.[j]?.score ?? Number.NaN)) < EPSILON;
          expectTrue(
            g !== undefined && Math.abs(g.score - w.score) <= EPSILON,
            `${what}: hit ${i} scores ${g?.score}, the in-memory reference ${w.score}`,
          );
          expectTrue(
            g?.message.id === w.message.id || tied(i - 1) || tied(i + 1),
            `${what}: hit ${i} is ${g?.message.content}, the in-memory reference ${w.message.content}`,
          );
        });
      }
      const top = await memoryOver(store, 1, 0).recall({ threadId: now, resourceId: r, query: 'v:3' });
      expectEqual(top.hits[0]?.message.content, 'v:3*1e300', 'the best hit of v:3');
      expectTrue(
        (top.hits[0]?.score ?? 0) > 1 - EPSILON,
        `a huge embedding of the same direction scores 1, got ${top.hits[0]?.score}`,
      );
      ctx.log(`${queries.length} recalls equal the in-memory reference, every score finite`);
      // The primitives refuse what has no direction or is not unit length, and write nothing.
      const [first] = await vectors.getVectors(SPACE, [ids[0] as string]);
      for (const [what, vector] of [
        ['an all-zero vector', new Float32Array(SPACE.dimensions)],
        ['a vector of length 2', unit(random(1)).map((x) => x * 2)],
      ] as const) {
        await expectRejects(
          () => vectors.upsertVectors(SPACE, [{ messageId: ids[0] as string, hash: 'other', vector }]),
          ['INVALID_ARGUMENT'],
          `upserting ${what}`,
        );
        await expectRejects(
          () => vectors.searchVectors({ space: SPACE, vector, topK: 1, resourceId: r }),
          ['INVALID_ARGUMENT'],
          `searching with ${what}`,
        );
      }
      expectEqual(
        await vectors.getVectors(SPACE, [ids[0] as string]),
        [first],
        'the stored vector is unchanged',
      );
    },
  ),

  check(
    `a dimension or space mismatch is INVALID_ARGUMENT and writes nothing${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const r = ctx.id('r');
      const [m] = await seed(store, `${r}-t`, r, [unit(random(6))]);
      const id = m?.id as string;
      const wrong = {
        messageId: id,
        hash: 'other',
        vector: new Float32Array(SPACE.dimensions + 1).fill(0.1),
      };
      await expectRejects(
        () => vectors.upsertVectors(SPACE, [wrong]),
        ['INVALID_ARGUMENT'],
        'a 9-long vector in an 8-space',
      );
      const other = { id: SPACE.id, dimensions: SPACE.dimensions + 1 };
      await expectRejects(() => vectors.upsertVectors(other, [wrong]), ['INVALID_ARGUMENT'], 'another space');
      await expectRejects(
        () => vectors.searchVectors({ space: other, vector: wrong.vector, topK: 1, resourceId: r }),
        ['INVALID_ARGUMENT'],
        'a search in another space',
      );
      expectEqual(await vectors.claimSpace(other), SPACE, 'claiming another space returns the recorded one');
      expectEqual(
        (await vectors.getVectors(SPACE, [id]))[0]?.hash,
        `h-${id}`,
        'the stored vector is unchanged',
      );
    },
  ),

  check(
    (init) =>
      `concurrent saves from ${Math.max(2, init.processes ?? 4)} racers leave exactly one vector per message${NEEDS_VECTORS}`,
    async (ctx) => {
      const store = await ctx.store();
      const vectors = vectorsOf(store);
      const r = ctx.id('r');
      const t = `${r}-t`;
      await store.saveThread(thread(t, r));
      await vectors.claimSpace(SPACE);
      const ids = Array.from({ length: 12 }, (_, i) => `${t}-m${i}`);
      const task = { kind: 'embed-save' as const, threadId: t, resourceId: r, ids };
      const n = Math.max(2, ctx.init.processes ?? 4);
      const remote = !capabilitiesOf(store).processLocal && ctx.init.worker;
      const reports = remote
        ? await raceProcesses(ctx.init.worker as URL | string, task, n)
        : await Promise.all(Array.from({ length: n }, (_, racer) => runRacer(store, task, racer)));
      const failures = reports.flatMap((x) => x.failures);
      if (failures.length) throw new ConformanceError(`saves failed: ${failures.slice(0, 3).join('; ')}`);
      const stored = await vectors.getVectors(SPACE, ids);
      ctx.log(
        `${n} ${remote ? 'OS processes' : 'callers in one process'} saved ${ids.length} messages each; ${stored.length} vectors stored`,
      );
      expectEqual(stored.map((v) => v.messageId).sort(), [...ids].sort(), 'exactly one vector per message');
      const hits = await vectors.searchVectors({
        space: SPACE,
        vector: unit(random(9)),
        topK: 100,
        resourceId: r,
      });
      expectEqual(hits.length, ids.length, 'search sees each message once');
    },
  ),
  check(
    `searches follow every vector write, re-embedding, move, re-dating, message and thread delete, also made through another store of the same database (random operations, in-memory oracle)${NEEDS_VECTORS}`,
    async (ctx) => {
      const searcher = await ctx.store();
      // A second store reaches the same data unless it lives inside one store (processLocal).
      const other = capabilitiesOf(searcher).processLocal ? searcher : await ctx.store();
      const oracle = new InMemoryStore();
      const r = ctx.id('r');
      const threads = [`${r}-a`, `${r}-b`];
      const next = random(7);
      const live: Message[] = [];
      for (const [i, id] of threads.entries())
        live.push(...(await seedBoth(searcher, oracle, [searcher, id, r, [unit(next), unit(next)], i * 10])));
      const ops = { append: 0, reembed: 0, move: 0, redate: 0, delete: 0, 'delete thread': 0 };
      let searches = 0;
      const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
      for (let step = 0; step < 60; step++) {
        const writer = next() < 0.5 ? searcher : other;
        const both = async (fn: (store: MemoryStorage) => Promise<unknown>) => {
          await fn(oracle);
          await fn(writer);
        };
        const op = live.length < 3 ? 'append' : pick(Object.keys(ops) as (keyof typeof ops)[]);
        ops[op]++;
        const target = pick(live);
        if (op === 'append') {
          const m = message(`${r}-n${step}`, thread(pick(threads), r), at(100 + step));
          const vector = unit(next);
          live.push(m);
          await both(async (store) => {
            await store.saveMessages([m]);
            await vectorsOf(store).upsertVectors(SPACE, [{ messageId: m.id, hash: `h-${m.id}`, vector }]);
          });
        } else if (op === 'reembed') {
          const vector = unit(next);
          await both((store) =>
            vectorsOf(store).upsertVectors(SPACE, [{ messageId: target.id, hash: `h${step}`, vector }]),
          );
        } else if (op === 'delete') {
          live.splice(live.indexOf(target), 1);
          await both((store) => store.deleteMessages([target.id]));
        } else if (op === 'delete thread') {
          // The thread of a random message goes with its messages, and comes back empty.
          const gone = live.filter((m) => m.threadId === target.threadId);
          for (const m of gone) live.splice(live.indexOf(m), 1);
          await both(async (store) => {
            await store.deleteThread({ threadId: target.threadId });
            await store.saveThread(thread(target.threadId, r));
          });
        } else {
          const moved =
            op === 'move'
              ? { ...target, threadId: threads.find((t) => t !== target.threadId) as string }
              : { ...target, createdAt: at(Math.floor(next() * 200)) };
          live[live.indexOf(target)] = moved;
          await both((store) => store.saveMessages([moved]));
        }
        // Searches after about half of the steps: a copy kept by the searcher must also catch up
        // on several writes at once (a delete, then a write, unseen in between).
        if (step < 59 && next() < 0.5) continue;
        searches++;
        const vector = next() < 0.3 ? unit(random(1)) : unit(next);
        for (const args of [
          { topK: 4, resourceId: r },
          { topK: 3, resourceId: r, threadId: pick(threads) },
        ]) {
          const got = await vectorsOf(searcher).searchVectors({ space: SPACE, vector, ...args });
          const want = await vectorsOf(oracle).searchVectors({ space: SPACE, vector, ...args });
          expectRanking(
            got,
            want,
            `after step ${step} (${op} through the ${writer === searcher ? 'searching' : 'other'} store)`,
          );
        }
      }
      ctx.log(
        `${JSON.stringify(ops)}; ${other === searcher ? 'one store (processLocal)' : 'two stores of one database'}; searched after ${searches} of the 60 steps, every search equal to the oracle`,
      );
    },
  ),
];
