import {
  InMemoryStore,
  type KeywordStore,
  Memory,
  type MemoryStorage,
  type Message,
  RESOURCE_BM25,
  type Thread,
} from '@engram/core';
import { expectEqual, expectRejects, expectTrue } from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import { conformanceEmbedder } from '../vectors.ts';
import { HOSTILE_SUFFIXES } from './isolation.ts';

const check = defineArea('recall');

/** Name suffix of checks that apply only to stores declaring `keywords`. */
export const NEEDS_KEYWORDS = ' [needs keywords]';

function keywordsOf(store: MemoryStorage): KeywordStore {
  if (!store.keywords) skipCheck(`${store.name} declares no keyword index (no keyword or hybrid recall)`);
  return store.keywords;
}

/** Saves a thread of `resourceId` with one message per text (1 ms apart from `start`). */
async function seedTexts(
  store: MemoryStorage,
  threadId: string,
  resourceId: string,
  texts: readonly string[],
  start = 0,
): Promise<Message[]> {
  const t = thread(threadId, resourceId);
  await store.saveThread(t);
  const messages = texts.map((content, i) => message(`${threadId}-m${i}`, t, at(start + i), { content }));
  await store.saveMessages(messages);
  return messages;
}

async function ids(keywords: KeywordStore, query: string, resourceId: string, threadId?: string) {
  const hits = await keywords.search({ query, topK: 50, resourceId, threadId });
  return hits.map((h) => h.messageId);
}

/**
 * A fixed corpus: shared everyday words, plus a rare word, a number or an id planted in one
 * message each. Each query's words are all in its planted message (and some in others too), so
 * that message ranks first under BM25 whatever else the backend's index holds (statistics are
 * over the whole index, which other tests share).
 */
const CORPUS = [
  'we talked about the weather and the garden today',
  'my sister Ingrid moved to Tromsø last spring',
  'the garden needs water every day in the summer',
  'booking reference QX-55821 for the flight on Friday',
  'I walked the dog in the park and then watered the garden',
  'the dentist appointment is at 14:30 next Tuesday',
  'remember the weather was cold at the park today',
  'my locker code is 80417 at the gym',
  'the dog likes the park more than the garden',
  'we planted heliotrope beside the garden wall',
];
const PLANTED: readonly [string, number][] = [
  ['where did ingrid move?', 1],
  ['what was the booking reference qx 55821', 3],
  ['the locker code 80417 at the gym', 7],
  ['which flower, heliotrope, in the garden', 9],
  ['TROMSØ in the spring', 1],
];

/** Creates thread `threadId` of `resourceId` through `memory` and saves `CORPUS` in it, 1 ms apart. */
async function saveCorpus(memory: Memory, resourceId: string, threadId: string): Promise<void> {
  await memory.createThread({ resourceId, threadId });
  await memory.saveMessages({
    messages: CORPUS.map((content, i) => ({
      threadId,
      resourceId,
      role: 'user' as const,
      content,
      createdAt: at(i),
    })),
  });
}

/** Keyword recall: BM25 on the store's keyword index, kept in the same write as the messages. */
export const keywordRecallChecks = [
  check(
    `keyword hits come from the resource searched only, hostile ids included${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      const keywords = keywordsOf(store);
      const base = ctx.id('r');
      const resources = [`${base}1`, `${base}10`, ...HOSTILE_SUFFIXES.map((s) => `${base}${s}`)];
      for (const r of resources) await seedTexts(store, `${r}-t`, r, ['zebra quartz', 'quartz zebra zebra']);
      for (const r of resources) {
        expectEqual(
          (await ids(keywords, 'zebra', r)).sort(),
          [`${r}-t-m0`, `${r}-t-m1`],
          `resource ${JSON.stringify(r)}`,
        );
      }
      const r = `${base}1`;
      await seedTexts(store, `${r}-u`, r, ['zebra again']);
      expectEqual(await ids(keywords, 'zebra', r, `${r}-u`), [`${r}-u-m0`], 'thread scope');
      ctx.log(`${resources.length} resources, each saw exactly its own messages`);
    },
  ),

  check(
    `the index follows each write at once: edit, role, move, delete, thread delete${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      const keywords = keywordsOf(store);
      const r = ctx.id('r');
      const [a, b] = [`${r}-a`, `${r}-b`];
      const [m] = await seedTexts(store, a, r, ['the walrus sleeps']);
      await seedTexts(store, b, r, ['unrelated words']);
      expectEqual(await ids(keywords, 'walrus', r), [`${a}-m0`], 'found after save');
      await store.updateMessages([{ id: `${a}-m0`, content: 'the narwhal sleeps' }]);
      expectEqual(await ids(keywords, 'walrus', r), [], 'old words gone after updateMessages');
      expectEqual(await ids(keywords, 'narwhal', r), [`${a}-m0`], 'new words found after updateMessages');
      // Keyword recall indexes user and assistant messages only: a role patch moves it in or out.
      await store.updateMessages([{ id: `${a}-m0`, role: 'tool' }]);
      expectEqual(await ids(keywords, 'narwhal', r), [], 'gone after a patch makes it a tool message');
      await store.updateMessages([{ id: `${a}-m0`, role: 'assistant' }]);
      expectEqual(await ids(keywords, 'narwhal', r), [`${a}-m0`], 'found again as an assistant message');
      await store.saveMessages([{ ...(m as Message), threadId: b, content: 'the narwhal sleeps' }]);
      expectEqual(await ids(keywords, 'narwhal', r, a), [], 'not in the old thread after a move');
      expectEqual(await ids(keywords, 'narwhal', r, b), [`${a}-m0`], 'in the new thread after a move');
      await store.deleteMessages([`${a}-m0`]);
      expectEqual(await ids(keywords, 'narwhal', r), [], 'gone after deleteMessages');
      expectEqual(await ids(keywords, 'unrelated', r), [`${b}-m0`], 'another message stays');
      await store.deleteThread({ threadId: b });
      expectEqual(await ids(keywords, 'unrelated', r), [], 'gone after deleteThread');
    },
  ),

  check(
    `the top hit for a rare word, number or id agrees with the in-memory BM25 reference${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      const keywords = keywordsOf(store);
      const oracle = new InMemoryStore();
      const r = ctx.id('r');
      for (const s of [store, oracle]) await seedTexts(s, `${r}-t`, r, CORPUS);
      for (const [query, expected] of PLANTED) {
        const [ours] = await keywords.search({ query, topK: 3, resourceId: r });
        const [reference] = await (oracle.keywords as KeywordStore).search({ query, topK: 3, resourceId: r });
        expectEqual(
          reference?.messageId,
          `${r}-t-m${expected}`,
          `reference top hit for ${JSON.stringify(query)}`,
        );
        expectEqual(ours?.messageId, reference?.messageId, `top hit for ${JSON.stringify(query)}`);
        expectTrue((ours?.score ?? 0) > 0, `a positive score for ${JSON.stringify(query)}`);
      }
      ctx.log(`${PLANTED.length} queries, each top hit the planted message (ranking: ${keywords.ranking})`);
    },
  ),

  check(
    `statistics per resource: scores are the reference's BM25 over the resource, and another resource changes none${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      const keywords = keywordsOf(store);
      if (keywords.ranking !== RESOURCE_BM25) {
        skipCheck(
          `${store.name} ranks with ${JSON.stringify(keywords.ranking)}: statistics over the whole index`,
        );
      }
      const [r, other] = [ctx.id('r'), ctx.id('o')];
      const oracle = new InMemoryStore();
      for (const s of [store, oracle]) await seedTexts(s, `${r}-t`, r, CORPUS);
      const search = { query: 'the garden park dog gym 80417', topK: 10, resourceId: r };
      const scored = async () => (await keywords.search(search)).map((h) => [h.messageId, h.score] as const);
      const alone = await scored();
      await seedTexts(store, `${other}-t`, other, [...CORPUS.slice(0, 4), 'garden garden park', 'gym 80417']);
      expectEqual(
        await scored(),
        alone,
        'the same hits and scores after another resource saved its messages',
      );
      const reference = await (oracle.keywords as KeywordStore).search(search);
      expectEqual(
        alone.map(([id]) => id),
        reference.map((h) => h.messageId),
        'the hits of the reference over the resource alone',
      );
      reference.forEach((h, i) => {
        const score = alone[i]?.[1] ?? Number.NaN;
        expectTrue(
          Math.abs(score - h.score) <= 1e-9 * h.score,
          `hit ${i} scores ${score}, the reference ${h.score}`,
        );
      });
      ctx.log(`${alone.length} hits, each scored as the reference over the resource`);
    },
  ),

  check(`matching ignores case and accents and keeps non-Latin scripts${NEEDS_KEYWORDS}`, async (ctx) => {
    const store = await ctx.store();
    const keywords = keywordsOf(store);
    const r = ctx.id('r');
    const t = `${r}-t`;
    await seedTexts(store, t, r, [
      'Crème Brûlée in ZÜRICH',
      'Москва — столица России',
      '東京タワーに行きました',
      'हिन्दी भाषा सीखना',
      'Ελληνική γλώσσα',
    ]);
    const cases: [string, number][] = [
      ['creme brulee zurich', 0],
      ['CRÈME', 0],
      ['москва', 1],
      ['МОСКВА', 1],
      ['東京タワー', 2],
      ['हिन्दी', 3],
      ['ελληνικη', 4],
    ];
    for (const [query, n] of cases) {
      expectEqual((await ids(keywords, query, r))[0], `${t}-m${n}`, `top hit for ${JSON.stringify(query)}`);
    }
  }),

  check(
    `query syntax of any backend is plain text, never an operator or an error${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      const keywords = keywordsOf(store);
      const r = ctx.id('r');
      await seedTexts(store, `${r}-t`, r, ['zebra crossing', 'nothing here']);
      const queries = [
        '"zebra',
        'zebra*',
        'zebra:',
        '-zebra',
        'NEAR(zebra crossing)',
        'zebra & crossing',
        'zebra | crossing',
        '!zebra',
        '(zebra) AND NOT crossing OR',
        "zebra' OR 1=1 --",
        '\\zebra',
        '{zebra}',
      ];
      for (const query of queries) {
        expectEqual((await ids(keywords, query, r))[0], `${r}-t-m0`, `top hit for ${JSON.stringify(query)}`);
      }
      expectEqual(await ids(keywords, '" * : - & | ! ( )', r), [], 'a query of syntax only finds nothing');
    },
  ),

  check(
    `keyword recall without an embedder: windows, scope and the history left out${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      keywordsOf(store);
      const memory = new Memory({
        storage: store,
        options: { lastMessages: 1, semanticRecall: { topK: 2, messageRange: 1 } },
      });
      const r = ctx.id('r');
      const [a, b] = [`${r}-a`, `${r}-b`];
      await memory.createThread({ resourceId: r, threadId: a });
      await memory.createThread({ resourceId: r, threadId: b });
      const say = (threadId: string, content: string, ms: number) => ({
        id: `${threadId}-${ms}`,
        threadId,
        resourceId: r,
        role: 'user' as const,
        content,
        createdAt: at(ms),
      });
      await memory.saveMessages({
        messages: [
          say(a, 'one', 0),
          say(a, 'my passport number is P7731', 1),
          say(a, 'three', 2),
          say(b, 'passport P7731 renewal', 3),
        ],
      });
      const { hits } = await memory.recall({ threadId: b, resourceId: r, query: 'P7731 passport' });
      expectEqual(
        hits.map((h) => h.window.map((m) => m.id)),
        [[`${a}-0`, `${a}-1`, `${a}-2`]],
        'one hit with its window, the history (the newest message of the thread) left out',
      );
      expectTrue((hits[0]?.scores.keyword ?? 0) > 0, 'the hit reports its keyword score');
      const own = await memory.recall({ threadId: b, resourceId: r, query: 'passport', scope: 'thread' });
      expectEqual(own.hits, [], 'thread scope: only the history matched, and it is left out');
    },
  ),

  check(
    `the history's own matches do not crowd the other hits out of recall (keyword and hybrid)${NEEDS_KEYWORDS}`,
    async (ctx) => {
      const store = await ctx.store();
      keywordsOf(store);
      const r = ctx.id('r');
      const t = `${r}-t`;
      const modes = store.vectors ? (['keyword', 'hybrid'] as const) : (['keyword'] as const);
      // Message i says "kiwi" i + 1 times among the same other words: the newest rank best.
      const messages = Array.from({ length: 8 }, (_, i) => ({
        id: `${t}-m${i}`,
        threadId: t,
        resourceId: r,
        role: 'user' as const,
        content: `${'kiwi '.repeat(i + 1)}<b>fruit</b> & "notes"`,
        createdAt: at(i),
      }));
      for (const [n, mode] of modes.entries()) {
        const memory = new Memory({
          storage: store,
          ...(mode === 'hybrid' ? { embedder: conformanceEmbedder() } : {}),
          options: { lastMessages: 3, semanticRecall: { mode, topK: 2, messageRange: 0 } },
        });
        if (n === 0) {
          await memory.createThread({ resourceId: r, threadId: t });
          await memory.saveMessages({ messages });
        } else await memory.reindex({ resourceId: r });
        const { hits } = await memory.recall({ threadId: t, resourceId: r, query: 'kiwi' });
        const found = hits.map((h) => h.message.id);
        expectEqual(found.length, 2, `${mode}: two hits outside the history (the newest 3)`);
        expectTrue(
          found.every((id) => !['m5', 'm6', 'm7'].some((m) => id === `${t}-${m}`)),
          `${mode}: no hit from the history`,
        );
        if (mode === 'keyword')
          expectEqual(found, [`${t}-m4`, `${t}-m3`], 'keyword: the best two outside it');
      }
    },
  ),

  check(
    `hybrid recall never ranks a message below both of its ranks in the keyword and the vector list [needs keywords and vectors]`,
    async (ctx) => {
      const store = await ctx.store();
      keywordsOf(store);
      if (!store.vectors) skipCheck(`${store.name} declares no vectors (no hybrid recall)`);
      const r = ctx.id('r');
      const t = `${r}-t`;
      const memoryIn = (mode: 'keyword' | 'vector' | 'hybrid') =>
        new Memory({
          storage: store,
          embedder: conformanceEmbedder(),
          onEmbeddingError: (error) => {
            throw error;
          },
          options: { lastMessages: 0, semanticRecall: { mode, topK: CORPUS.length, messageRange: 0 } },
        });
      await saveCorpus(memoryIn('hybrid'), r, t);
      const ranked = async (mode: 'keyword' | 'vector' | 'hybrid', query: string) =>
        (await memoryIn(mode).recall({ threadId: t, resourceId: r, query })).hits.map((h) => h.message.id);
      for (const query of [
        'the dog in the garden park',
        'weather today at the park',
        'garden water summer day',
      ]) {
        const [byKeyword, byVector, hybrid] = await Promise.all([
          ranked('keyword', query),
          ranked('vector', query),
          ranked('hybrid', query),
        ]);
        expectTrue(byKeyword.length >= 3, `"${query}": the keyword list finds several messages`);
        for (const [i, id] of hybrid.entries()) {
          const k = byKeyword.indexOf(id);
          const v = byVector.indexOf(id);
          if (k < 0 || v < 0) continue;
          expectTrue(
            i <= Math.max(k, v),
            `"${query}": hybrid rank ${i + 1} of ${id} is below both its keyword rank ${k + 1} and its vector rank ${v + 1} (keyword ${JSON.stringify(byKeyword)}, vector ${JSON.stringify(byVector)}, hybrid ${JSON.stringify(hybrid)})`,
          );
        }
        // Every message of either list is in the fused one, which holds nothing else.
        expectEqual(
          [...hybrid].sort(),
          [...new Set([...byKeyword, ...byVector])].sort(),
          `"${query}": hybrid holds the union of both lists`,
        );
      }
    },
  ),

  check(
    `hybrid recall fuses both lists and reports both scores [needs keywords and vectors]`,
    async (ctx) => {
      const store = await ctx.store();
      keywordsOf(store);
      if (!store.vectors) skipCheck(`${store.name} declares no vectors (no hybrid recall)`);
      const memory = new Memory({
        storage: store,
        embedder: conformanceEmbedder(),
        onEmbeddingError: (error) => {
          throw error;
        },
        options: { lastMessages: 0, semanticRecall: { topK: 3, messageRange: 0 } },
      });
      const r = ctx.id('r');
      const t = `${r}-t`;
      await saveCorpus(memory, r, t);
      const { hits } = await memory.recall({ threadId: t, resourceId: r, query: 'locker code 80417' });
      expectEqual(hits[0]?.message.content, CORPUS[7], 'top hit');
      expectTrue(hits[0]?.scores.keyword !== undefined, 'the top hit reports its keyword score');
      expectTrue(hits[0]?.scores.vector !== undefined, 'the top hit reports its vector score');
    },
  ),

  check(
    `an index turned off (keywords: false) and on again: the next open indexes what was saved, edited, moved and deleted meanwhile, scored as the reference${NEEDS_KEYWORDS}`,
    async (ctx) => {
      keywordsOf(await ctx.store());
      if (!ctx.init.fresh) skipCheck(NO_KEYWORDS_OFF);
      const fresh = await ctx.init.fresh();
      const opened: MemoryStorage[] = [];
      const open = async (create: () => MemoryStorage | Promise<MemoryStorage>) => {
        const store = await create();
        opened.push(store);
        await store.init();
        return store;
      };
      try {
        if (!fresh.createWithoutKeywords) skipCheck(NO_KEYWORDS_OFF);
        const before = await open(fresh.create);
        keywordsOf(before);
        const r = ctx.id('r');
        const [t, u, v] = [thread(`${r}-t`, r), thread(`${r}-u`, r), thread(`${r}-v`, r)];
        const text = (id: string, owner: Thread, ms: number, content: string) =>
          message(id, owner, at(ms), { content });
        const a = text(`${r}-a`, t, 1, 'apple zebra');
        const b = text(`${r}-b`, t, 2, 'banana zebra');
        const c = text(`${r}-c`, t, 3, 'cherry zebra zebra');
        const d = text(`${r}-d`, u, 4, 'durian zebra');
        for (const owner of [t, u]) await before.saveThread(owner);
        await before.saveMessages([a, b, c, d]);
        await before.close();

        const off = await open(fresh.createWithoutKeywords);
        expectEqual(off.keywords, undefined, 'store.keywords of a store opened with keywords: false');
        await expectRejects(
          async () => new Memory({ storage: off, options: { semanticRecall: { mode: 'keyword' } } }),
          ['UNSUPPORTED'],
          'keyword recall on a store without a keyword index',
        );
        const e = text(`${r}-e`, t, 5, 'elderberry zebra');
        const f = text(`${r}-f`, v, 6, 'fig zebra and more zebra');
        await off.saveThread(v);
        await off.saveMessages([e, f, { ...c, threadId: v.id }]);
        await off.updateMessages([{ id: a.id, content: 'apricot' }]);
        await off.deleteMessages([b.id]);
        await off.deleteThread({ threadId: u.id });
        await off.close();

        const after = await open(fresh.create);
        const keywords = keywordsOf(after);
        const reference = new InMemoryStore();
        for (const owner of [t, v]) await reference.saveThread(owner);
        await reference.saveMessages([{ ...a, content: 'apricot' }, e, { ...c, threadId: v.id }, f]);
        const searches = [
          { query: 'zebra', resourceId: r },
          { query: 'zebra', resourceId: r, threadId: v.id },
          { query: 'zebra', resourceId: r, threadId: t.id },
          { query: 'apricot apple banana durian cherry', resourceId: r },
        ];
        for (const search of searches) {
          const ours = await keywords.search({ ...search, topK: 10 });
          const expected = await (reference.keywords as KeywordStore).search({ ...search, topK: 10 });
          const what = JSON.stringify(search);
          expectEqual(
            ours.map((h) => [h.messageId, h.threadId]),
            expected.map((h) => [h.messageId, h.threadId]),
            `the hits of ${what} once the index is on again`,
          );
          expected.forEach((h, i) => {
            const score = ours[i]?.score ?? Number.NaN;
            expectTrue(
              Math.abs(score - h.score) <= 1e-9 * h.score,
              `hit ${i} of ${what} scores ${score}, the reference ${h.score}`,
            );
          });
        }
        ctx.log(
          'saved, edited, moved and deleted with the index off: indexed as the reference at the next open',
        );
      } finally {
        for (const store of opened) await store.close().catch(() => undefined);
        await fresh.drop?.();
      }
    },
  ),
];

/** Why the keyword switch check is skipped. */
const NO_KEYWORDS_OFF =
  'no `fresh` hook with `createWithoutKeywords` supplied, so an index turned off and on again cannot be checked';
