import { setTimeout as sleep } from 'node:timers/promises';
import { capabilitiesOf, type JsonObject, MemoryError, type MemoryStorage, type Thread } from '@engram/core';
import { compareIds } from '@engram/core/driver';
import { expectDate, expectEqual, expectRejects, expectTrue, idsOf, show } from '../assert.ts';
import { oneWinnerEach, raceSeparately } from '../concurrency/separate.ts';
import { creatorThread } from '../concurrency/tasks.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { SPACE } from '../vectors.ts';
import { FIRST_WRITE_ROUNDS, racers } from './concurrency.ts';

/** Batches a writer tries at most while `deleteThread` races it (it stops once refused after it). */
const DELETE_RACE_ROUNDS = 2_000;

const check = defineArea('threads');

/** Thread ids in the order `listThreads` must return them: `createdAt`, then id, in `direction`. */
function ordered(threads: Thread[], direction: 'ASC' | 'DESC', key: 'createdAt' | 'updatedAt' = 'createdAt') {
  const sorted = [...threads].sort((a, b) => a[key].getTime() - b[key].getTime() || compareIds(a.id, b.id));
  return idsOf(direction === 'ASC' ? sorted : sorted.reverse());
}

/** Thread CRUD and listing. */
export const threadsChecks = [
  check('getThreadById: null when absent, null for another resourceId', async (ctx) => {
    const store = await ctx.store();
    expectEqual(await store.getThreadById({ threadId: ctx.id('t') }), null, 'absent thread');
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    expectEqual(await store.getThreadById({ threadId: t.id, resourceId: t.resourceId }), t, 'own resource');
    expectEqual(
      await store.getThreadById({ threadId: t.id, resourceId: ctx.id('r') }),
      null,
      'another resourceId must read null',
    );
  }),

  check('saveThread upserts by id', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'), { title: 'first', metadata: { a: 1 } });
    await store.saveThread(t);
    const second = { ...t, title: 'second', metadata: { b: 2 }, updatedAt: at(5_000) };
    expectEqual(await store.saveThread(second), second, 'saveThread() return value on update');
    expectEqual(await store.getThreadById({ threadId: t.id }), second, 'the stored thread is replaced');
    const page = await store.listThreads({ resourceId: t.resourceId });
    expectEqual(idsOf(page.threads), [t.id], 'one thread after two saves');
    expectEqual(page.total, 1, 'total');
  }),

  check(
    'metadata replaced by the same values under other keys is stored (saveThread, updateThread)',
    async (ctx) => {
      const store = await ctx.store();
      // Read back through another instance (its own connection) so nothing cached can answer.
      const reader = capabilitiesOf(store).processLocal ? store : await ctx.store();
      const r = ctx.id('r');
      const t = thread(ctx.id('t'), r, { metadata: { x: 1 } });
      await store.saveThread(t);
      const resaved = { ...t, metadata: { y: 1 } };
      expectEqual(
        await store.saveThread(resaved),
        resaved,
        'saveThread() return value, { x: 1 } then { y: 1 }',
      );
      expectEqual(await reader.getThreadById({ threadId: t.id }), resaved, 'the thread saved with { y: 1 }');
      const found = async (metadata: JsonObject) =>
        idsOf((await reader.listThreads({ resourceId: r, metadata })).threads);
      expectEqual(await found({ y: 1 }), [t.id], 'listThreads({ metadata: { y: 1 } })');
      expectEqual(
        await found({ x: 1 }),
        [],
        'listThreads({ metadata: { x: 1 } }) after the key was replaced',
      );

      const nested: JsonObject = {
        prefs: { tone: 'formal' },
        list: [{ a: 1 }, { b: [2] }],
        deep: { a: { b: 'v' } },
        keep: { same: true },
      };
      await store.saveThread({ ...t, metadata: nested });
      const patch: JsonObject = {
        prefs: { style: 'formal' },
        list: [{ c: 1 }, { d: [2] }],
        deep: { a: { c: 'v' } },
      };
      const expected = { ...nested, ...patch };
      const updated = await store.updateThread({ id: t.id, metadata: patch });
      expectEqual(updated.metadata, expected, 'updateThread() return value, nested values under new keys');
      expectEqual(
        (await reader.getThreadById({ threadId: t.id }))?.metadata,
        expected,
        'the stored metadata',
      );
      expectEqual(await found({ prefs: { style: 'formal' } }), [t.id], 'listThreads by the new nested value');
      expectEqual(await found({ prefs: { tone: 'formal' } }), [], 'listThreads by the replaced nested value');
    },
  ),

  check('createThread inserts a new thread; an existing id is CONFLICT and changes nothing', async (ctx) => {
    const store = await ctx.store();
    const alice = thread(ctx.id('t'), ctx.id('alice'), {
      title: 'first',
      metadata: { workingMemory: 'alice memory', k: 1 },
    });
    expectEqual(await store.createThread(alice), alice, 'createThread() return value');
    expectEqual(await store.getThreadById({ threadId: alice.id }), alice, 'the created thread');
    await store.saveMessages([message(ctx.id('m'), alice, at(1))]);
    const before = await store.getThreadById({ threadId: alice.id });
    const bob = thread(alice.id, ctx.id('bob'), {
      title: 'taken',
      metadata: { workingMemory: 'bob memory' },
      updatedAt: at(9_000),
    });
    await expectRejects(store.createThread(bob), ['CONFLICT'], "createThread with another resource's id");
    await expectRejects(
      store.createThread({ ...alice, title: 'again' }),
      ['CONFLICT'],
      'createThread with an existing id of the same resource',
    );
    expectEqual(await store.getThreadById({ threadId: alice.id }), before, 'the thread is unchanged');
    expectEqual((await store.listMessages({ threadId: alice.id })).total, 1, 'its message is kept');
    expectEqual(
      idsOf((await store.listThreads({ resourceId: bob.resourceId })).threads),
      [],
      'the refused resource lists no thread',
    );
  }),

  check(
    (init) =>
      `concurrent Memory.createThread with one new id: exactly one of ${racers(init)} racers wins, the others get CONFLICT (${FIRST_WRITE_ROUNDS} ids)`,
    async (ctx) => {
      const store = await ctx.store();
      const threadIds = Array.from({ length: FIRST_WRITE_ROUNDS }, () => ctx.id('race-new-t'));
      const task = { kind: 'create-thread', threadIds, resourcePrefix: ctx.id('race-r') } as const;
      const race = await raceSeparately(ctx, store, task);
      const winners = oneWinnerEach(ctx, 'createThread races', threadIds, race);
      for (const [i, threadId] of threadIds.entries()) {
        const expected = creatorThread(task, threadId, winners[i]!);
        const stored = await store.getThreadById({ threadId });
        expectEqual(
          [stored?.resourceId, stored?.title, stored?.metadata],
          [expected.resourceId, expected.title, expected.metadata],
          `thread ${threadId} as stored: resource, title and initial working memory of the winner p${winners[i]}`,
        );
      }
    },
  ),

  check('updateThread: title kept when omitted, metadata shallow-merged, updatedAt bumped', async (ctx) => {
    const store = await ctx.store();
    const old = new Date('2020-01-01T00:00:00.000Z');
    const t = thread(ctx.id('t'), ctx.id('r'), {
      title: 'kept',
      metadata: { keep: 'me', nested: { a: 1, b: 2 }, replace: 'old' },
      createdAt: old,
      updatedAt: old,
    });
    await store.saveThread(t);
    const updated = await store.updateThread({ id: t.id, metadata: { replace: 'new', nested: { c: 3 } } });
    const expectedMetadata = { keep: 'me', nested: { c: 3 }, replace: 'new' };
    expectEqual(updated.title, 'kept', 'title when omitted');
    expectEqual(updated.metadata, expectedMetadata, 'metadata is shallow-merged (nested objects replaced)');
    expectDate(updated.createdAt, 'createdAt', old);
    expectDate(updated.updatedAt, 'updatedAt');
    expectTrue(updated.updatedAt.getTime() > old.getTime(), 'updateThread must bump updatedAt');
    const stored = await store.getThreadById({ threadId: t.id });
    expectEqual(stored, updated, 'the stored thread equals what updateThread returned');

    const retitled = await store.updateThread({ id: t.id, title: '' });
    expectEqual(retitled.title, '', "title set to ''");
    expectEqual(retitled.metadata, expectedMetadata, 'metadata kept when omitted');
  }),

  check('updateThread on a missing thread throws NOT_FOUND', async (ctx) => {
    const store = await ctx.store();
    const id = ctx.id('t');
    await expectRejects(store.updateThread({ id, title: 'x' }), ['NOT_FOUND'], 'updateThread(missing)');
    expectEqual(await store.getThreadById({ threadId: id }), null, 'nothing was created');
  }),

  check('deleteThread removes the thread and its messages; absent ids are ignored', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const gone = thread(ctx.id('t'), r);
    const kept = thread(ctx.id('t'), r);
    await store.saveThread(gone);
    await store.saveThread(kept);
    const goneMessages = [message(ctx.id('m'), gone, at(1)), message(ctx.id('m'), gone, at(2))];
    const keptMessage = message(ctx.id('m'), kept, at(3));
    await store.saveMessages([...goneMessages, keptMessage]);
    await store.deleteThread({ threadId: gone.id });
    expectEqual(await store.getThreadById({ threadId: gone.id }), null, 'deleted thread');
    expectEqual(
      await store.listMessagesById({ ids: [...idsOf(goneMessages), keptMessage.id] }),
      [keptMessage],
      "only the other thread's message is left",
    );
    expectEqual((await store.listMessages({ threadId: gone.id })).messages, [], 'listMessages(deleted)');
    await store.deleteThread({ threadId: gone.id });
    await store.deleteThread({ threadId: ctx.id('t') });
  }),

  check(
    'deleteThread while other store instances keep saving into the thread (with vectors and keyword terms): nothing of the thread is left, and no save succeeds after it returned',
    async (ctx) => {
      const store = await ctx.store();
      const local = capabilitiesOf(store).processLocal;
      const r = ctx.id('r');
      const t = thread(ctx.id('t'), r);
      await store.saveThread(t);
      if (store.vectors) await store.vectors.claimSpace(SPACE);
      let deleted: number | undefined;
      const late: string[] = [];
      const tried: string[] = [];
      let refused = 0;
      const writer = async (w: number, writerStore: MemoryStorage) => {
        let acked = 0;
        for (let round = 0; round < DELETE_RACE_ROUNDS; round++) {
          const ids = [0, 1, 2].map((k) => `${t.id}-w${w}-${round}-${k}`);
          tried.push(...ids);
          const started = Date.now();
          try {
            await writerStore.saveMessages(
              ids.map((id, k) => message(id, t, at(round * 3 + k), { content: `zebrafish ${id}` })),
            );
            acked++;
            if (deleted !== undefined && started > deleted) late.push(ids[0] as string);
            const vector = new Float32Array(SPACE.dimensions);
            vector[w % SPACE.dimensions] = 1;
            await writerStore.vectors?.upsertVectors(
              SPACE,
              ids.map((messageId) => ({ messageId, hash: `h-${messageId}`, vector })),
            );
          } catch (error) {
            expectTrue(
              error instanceof MemoryError && error.code === 'NOT_FOUND',
              `a save into the thread being deleted fails with NOT_FOUND or not at all, got ${show(error)}`,
            );
            refused++;
            if (deleted !== undefined) break;
          }
          // A breath between batches: a store answering synchronously would run every round first.
          await sleep(1);
          // Saves keep coming until the delete returned; one after it must be refused too.
          if (deleted !== undefined && late.length > 0) break;
        }
        return acked;
      };
      const writers: Promise<number>[] = [];
      for (let w = 0; w < 3; w++) writers.push(writer(w, local ? store : await ctx.store()));
      // Let every writer save a few batches, then delete the thread under them.
      for (let i = 0; i < 400 && tried.length < 3 * 3 * 3; i++) await sleep(5);
      await store.deleteThread({ threadId: t.id });
      deleted = Date.now();
      const acked = (await Promise.all(writers)).reduce((a, b) => a + b, 0);
      expectEqual(late, [], 'saves started after deleteThread returned that succeeded');
      expectEqual(await store.getThreadById({ threadId: t.id }), null, 'the deleted thread');
      expectEqual(idsOf(await store.listMessagesById({ ids: tried })), [], 'messages of the deleted thread');
      if (store.keywords) {
        const hits = await store.keywords.search({ query: 'zebrafish', topK: 100, resourceId: r });
        expectEqual(
          hits.map((h) => h.messageId),
          [],
          'keyword hits of the deleted thread',
        );
      }
      if (store.vectors) {
        const hits = await store.vectors.searchVectors({
          space: SPACE,
          vector: Float32Array.from({ length: SPACE.dimensions }, (_, i) => (i === 0 ? 1 : 0)),
          topK: 100,
          resourceId: r,
        });
        expectEqual(
          hits.map((h) => h.messageId),
          [],
          'vector hits of the deleted thread',
        );
        expectEqual(await store.vectors.getVectors(SPACE, tried), [], 'vectors of the deleted thread');
      }
      expectTrue(
        acked > 0 && refused > 0,
        'the writers saved batches before the delete, and were refused after it',
      );
      ctx.log(
        `deleteThread raced 3 writers: ${acked} batches saved before it, ${refused} refused (NOT_FOUND)`,
      );
    },
  ),

  check('listThreads: default order createdAt DESC with ties by id, perPage 100', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const base = ctx.id('t');
    const threads = ['b', 'a', 'B', 'é', '_', 'aa'].map((suffix, i) =>
      thread(`${base}-${suffix}`, r, { createdAt: at(i % 2 ? 0 : 1_000) }),
    );
    for (const t of threads) await store.saveThread(t);
    const page = await store.listThreads({ resourceId: r });
    expectEqual(idsOf(page.threads), ordered(threads, 'DESC'), 'default order (createdAt DESC, id DESC)');
    expectEqual(
      { total: page.total, page: page.page, perPage: page.perPage, hasMore: page.hasMore },
      { total: 6, page: 0, perPage: 100, hasMore: false },
      'paging fields with defaults',
    );
    const asc = await store.listThreads({ resourceId: r, direction: 'ASC' });
    expectEqual(idsOf(asc.threads), ordered(threads, 'ASC'), 'createdAt ASC, ties by id ASC (UTF-8 order)');
  }),

  check('listThreads: orderBy updatedAt follows updates', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const threads = [0, 1, 2].map((i) =>
      thread(ctx.id(`t${i}`), r, { createdAt: at(i), updatedAt: new Date(Date.UTC(2021, 0, 1, 0, 0, i)) }),
    );
    for (const t of threads) await store.saveThread(t);
    const first = threads[0]!;
    await store.updateThread({ id: first.id, title: 'touched' });
    const page = await store.listThreads({ resourceId: r, orderBy: 'updatedAt', direction: 'DESC' });
    expectEqual(page.threads[0]?.id, first.id, 'the thread updated last comes first by updatedAt DESC');
    const asc = await store.listThreads({ resourceId: r, orderBy: 'updatedAt', direction: 'ASC' });
    expectEqual(idsOf(asc.threads), [threads[1]!.id, threads[2]!.id, first.id], 'updatedAt ASC');
  }),

  check('listThreads: pages, totals, hasMore, perPage false', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const threads = [0, 1, 2, 3, 4].map((i) => thread(ctx.id(`t${i}`), r, { createdAt: at(i * 10) }));
    for (const t of threads) await store.saveThread(t);
    const all = ordered(threads, 'DESC');
    const pages = await Promise.all(
      [0, 1, 2].map((page) => store.listThreads({ resourceId: r, page, perPage: 2 })),
    );
    expectEqual(
      pages.map((p) => idsOf(p.threads)),
      [all.slice(0, 2), all.slice(2, 4), all.slice(4)],
      'pages',
    );
    expectEqual(
      pages.map((p) => p.hasMore),
      [true, true, false],
      'hasMore',
    );
    expectEqual(
      pages.map((p) => p.total),
      [5, 5, 5],
      'total',
    );
    expectEqual(
      pages.map((p) => p.perPage),
      [2, 2, 2],
      'perPage',
    );
    const beyond = await store.listThreads({ resourceId: r, page: 9, perPage: 2 });
    expectEqual([beyond.threads, beyond.total, beyond.hasMore], [[], 5, false], 'a page past the end');
    const every = await store.listThreads({ resourceId: r, perPage: false });
    expectEqual(idsOf(every.threads), all, 'perPage false returns every thread');
    expectEqual(
      [every.perPage, every.hasMore, every.total],
      [false, false, 5],
      'perPage false paging fields',
    );
  }),

  check('listThreads: metadata filters are AND-ed JSON equality', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const a = thread(ctx.id('t'), r, {
      createdAt: at(1),
      metadata: { kind: 'chat', n: 1, tags: ['x', 'y'] },
    });
    const b = thread(ctx.id('t'), r, {
      createdAt: at(2),
      metadata: { kind: 'chat', n: '1', tags: ['y', 'x'] },
    });
    const c = thread(ctx.id('t'), r, { createdAt: at(3), metadata: { kind: 'task', n: 1, obj: { k: [1] } } });
    for (const t of [a, b, c]) await store.saveThread(t);
    const ids = async (metadata: Record<string, unknown>) =>
      idsOf(
        (await store.listThreads({ resourceId: r, metadata: metadata as never, direction: 'ASC' })).threads,
      );
    expectEqual(await ids({ kind: 'chat' }), [a.id, b.id], '{ kind: chat }');
    expectEqual(await ids({ kind: 'chat', n: 1 }), [a.id], 'number 1 is not the string "1"');
    expectEqual(await ids({ n: '1' }), [b.id], 'the string "1"');
    expectEqual(await ids({ tags: ['x', 'y'] }), [a.id], 'arrays compare in order');
    expectEqual(await ids({ obj: { k: [1] } }), [c.id], 'objects compare as JSON');
    expectEqual(await ids({ kind: 'chat', missing: null }), [], 'a missing key does not equal null');
    const page = await store.listThreads({ resourceId: r, metadata: { kind: 'chat' }, perPage: 1 });
    expectEqual([page.total, page.hasMore], [2, true], 'total counts the filtered threads');
  }),

  check(
    'listThreads: dateRange filters createdAt (inclusive unless exclusive) whichever orderBy, with the resource, metadata, pages and totals, and across resources',
    async (ctx) => {
      const store = await ctx.store();
      const r = ctx.id('r');
      // An instant of this check's own, so the whole store's listing in it holds only these threads.
      const base = Date.UTC(1990, 0, 1) + Math.floor(Math.random() * 1e11) * 10;
      const when = (ms: number) => new Date(base + ms);
      // Three threads at one instant (ids in UTF-8 order apart), one each side, one of another resource.
      const threads = [
        thread(`${ctx.id('t')}-a`, r, { createdAt: when(0), metadata: { kind: 'chat' } }),
        thread(`${ctx.id('t')}-é`, r, { createdAt: when(1), metadata: { kind: 'task' } }),
        thread(`${ctx.id('t')}-B`, r, { createdAt: when(1), metadata: { kind: 'chat' } }),
        thread(`${ctx.id('t')}-_`, r, { createdAt: when(1), metadata: { kind: 'chat' } }),
        thread(`${ctx.id('t')}-z`, r, { createdAt: when(2), metadata: { kind: 'chat' } }),
      ];
      const other = thread(ctx.id('t'), ctx.id('r'), { createdAt: when(1), metadata: { kind: 'chat' } });
      // updatedAt in the reverse order of createdAt.
      for (const [i, t] of [...threads, other].entries())
        await store.saveThread({ ...t, updatedAt: new Date(base + 1_000 - i) });
      const mine = (await Promise.all(
        threads.map((t) => store.getThreadById({ threadId: t.id })),
      )) as Thread[];
      const [a, , , , z] = mine as [Thread, Thread, Thread, Thread, Thread];
      const middle = mine.slice(1, 4);
      const list = async (args: Parameters<typeof store.listThreads>[0]) => {
        const page = await store.listThreads({ resourceId: r, ...args });
        expectEqual(page.total, page.threads.length, `total of ${show(args)}`);
        return idsOf(page.threads);
      };
      const inclusive = { start: when(0), end: when(1) };
      expectEqual(await list({ dateRange: inclusive }), ordered([a, ...middle], 'DESC'), 'inclusive range');
      expectEqual(
        await list({ dateRange: { ...inclusive, startExclusive: true }, direction: 'ASC' }),
        ordered(middle, 'ASC'),
        'startExclusive, ASC',
      );
      expectEqual(
        await list({ dateRange: { start: when(1), end: when(2), endExclusive: true } }),
        ordered(middle, 'DESC'),
        'endExclusive: one instant',
      );
      expectEqual(await list({ dateRange: { start: when(2) } }), [z.id], 'only start');
      expectEqual(await list({ dateRange: { end: when(0) } }), [a.id], 'only end');
      expectEqual(await list({ dateRange: { start: when(3) } }), [], 'after every thread');
      expectEqual(
        await list({ dateRange: { start: when(1) }, orderBy: 'updatedAt', direction: 'ASC' }),
        ordered([...middle, z], 'ASC', 'updatedAt'),
        'orderBy updatedAt keeps the range on createdAt',
      );
      expectEqual(
        await list({ dateRange: { start: when(1), end: when(1) }, metadata: { kind: 'chat' } }),
        ordered(middle, 'DESC').filter((id) => !id.endsWith('-é')),
        'with a metadata filter',
      );
      // Pages inside one instant, read from its start (as exports walk threads).
      const pages = await Promise.all(
        [0, 1, 2].map((page) =>
          store.listThreads({
            resourceId: r,
            dateRange: { start: when(1) },
            direction: 'ASC',
            page,
            perPage: 2,
          }),
        ),
      );
      expectEqual(
        pages.map((p) => idsOf(p.threads)),
        [ordered(middle, 'ASC').slice(0, 2), [...ordered(middle, 'ASC').slice(2), z.id], []],
        'pages of a range',
      );
      expectEqual(
        pages.map((p) => [p.total, p.hasMore]),
        [
          [4, true],
          [4, false],
          [4, false],
        ],
        'totals and hasMore count the range',
      );
      const everywhere = await store.listThreads({
        dateRange: { start: when(1), end: when(1) },
        direction: 'ASC',
        perPage: false,
      });
      expectEqual(
        idsOf(everywhere.threads),
        ordered([...middle, other], 'ASC'),
        "without resourceId: every resource's threads in the range",
      );
    },
  ),
];
