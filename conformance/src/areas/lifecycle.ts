import { capabilitiesOf, type MemoryStorage, type Thread } from '@engram/core';
import { ConformanceError, describeError, expectEqual, expectRejects, expectTrue, show } from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import type { CheckContext } from '../types.ts';

const check = defineArea('lifecycle');

/** Every contract call, each with arguments that would succeed on an open store. */
function everyCall(ctx: CheckContext): [string, (store: MemoryStorage) => Promise<unknown>][] {
  const t = thread(ctx.id('t'), ctx.id('r'));
  const m = message(ctx.id('m'), t, at(1));
  return [
    ['init()', (s) => s.init()],
    ['getThreadById', (s) => s.getThreadById({ threadId: t.id })],
    ['saveThread', (s) => s.saveThread(t)],
    ['updateThread', (s) => s.updateThread({ id: t.id, title: 'x' })],
    ['deleteThread', (s) => s.deleteThread({ threadId: t.id })],
    ['listThreads', (s) => s.listThreads({ resourceId: t.resourceId })],
    ['saveMessages', (s) => s.saveMessages([m])],
    ['saveMessages([])', (s) => s.saveMessages([])],
    ['listMessages', (s) => s.listMessages({ threadId: t.id })],
    ['listMessagesById', (s) => s.listMessagesById({ ids: [m.id] })],
    ['updateMessages', (s) => s.updateMessages([{ id: m.id, content: 'x' }])],
    ['deleteMessages', (s) => s.deleteMessages([m.id])],
    ['getResourceById', (s) => s.getResourceById({ resourceId: t.resourceId })],
    ['updateResource', (s) => s.updateResource({ resourceId: t.resourceId, workingMemory: 'x' })],
  ];
}

/** Fails unless every call on `store` rejects with `CONNECTION` saying the store is closed. */
async function expectAllClosed(ctx: CheckContext, store: MemoryStorage, when: string): Promise<void> {
  const calls = everyCall(ctx);
  const atomic = store.updateWorkingMemoryAtomically?.bind(store);
  if (capabilitiesOf(store).atomicWorkingMemory && atomic) {
    calls.push([
      'updateWorkingMemoryAtomically',
      () => atomic({ scope: 'resource', resourceId: ctx.id('r'), update: () => 'x' }),
    ]);
  }
  for (const [what, call] of calls) {
    await expectRejects(() => call(store), ['CONNECTION'], `${what} ${when}`);
    const error = await call(store).catch((e: unknown) => e);
    if (!(error instanceof Error) || !/closed/i.test(error.message)) {
      throw new ConformanceError(
        `${what} ${when}: the message must say the store is closed, got ${describeError(error)}`,
      );
    }
  }
}

async function expectThread(store: MemoryStorage, t: Thread, what: string): Promise<void> {
  expectEqual(await store.getThreadById({ threadId: t.id }), t, what);
}

/**
 * One lifecycle for every store: it connects and migrates lazily on first use through one
 * memoised open, so `init()` is optional, idempotent and safe to call concurrently; `close()`
 * is idempotent; after `close()` every call, `init()` included, rejects with `CONNECTION`.
 */
export const lifecycleChecks = [
  check('works without init(): the first call, a read, connects and migrates', async (ctx) => {
    const store = await ctx.storeWithoutInit();
    const r = ctx.id('r');
    const empty = await store.listThreads({ resourceId: r });
    expectEqual(empty.total, 0, 'listThreads() as the very first call: total');
    expectEqual(await store.getResourceById({ resourceId: r }), null, 'getResourceById() before any write');
    const t = thread(ctx.id('t'), r);
    await store.saveThread(t);
    await expectThread(store, t, 'a thread saved without init()');
    await store.saveMessages([message(ctx.id('m'), t, at(1))]);
    expectEqual((await store.listMessages({ threadId: t.id })).total, 1, 'a message saved without init()');
  }),

  check('concurrent first calls without init() all succeed (one memoised open)', async (ctx) => {
    const store = await ctx.storeWithoutInit();
    const r = ctx.id('r');
    const threads = Array.from({ length: 6 }, (_, i) => thread(ctx.id(`t${i}`), r));
    await Promise.all([
      store.init(),
      ...threads.map((t) => store.saveThread(t)),
      store.init(),
      store.updateResource({ resourceId: r, workingMemory: 'wm' }),
    ]);
    expectEqual((await store.listThreads({ resourceId: r })).total, threads.length, 'threads saved');
    expectEqual((await store.getResourceById({ resourceId: r }))?.workingMemory, 'wm', 'working memory');
  }),

  check('init() twice on one instance, and concurrently on two instances', async (ctx) => {
    const store = await ctx.store();
    await store.init();
    await Promise.all([store.init(), store.init()]);
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    await expectThread(store, t, 'a thread saved after init() three times');
    const [a, b] = await Promise.all([ctx.storeWithoutInit(), ctx.storeWithoutInit()]);
    await Promise.all([a.init(), b.init(), a.init(), b.init()]);
    if (capabilitiesOf(store).processLocal) return; // each instance has its own data
    const u = thread(ctx.id('t'), ctx.id('r'));
    await a.saveThread(u);
    await expectThread(b, u, 'one instance reads what another saved');
    await expectThread(b, t, 'the first thread, read by a third instance');
  }),

  check('close() is idempotent: twice, concurrently, and before any use', async (ctx) => {
    const store = await ctx.store();
    await store.close();
    await store.close();
    const other = await ctx.store();
    await Promise.all([other.close(), other.close()]);
    const unused = await ctx.storeWithoutInit();
    await unused.close();
    await unused.close();
  }),

  check('after close() every call, init() included, rejects with CONNECTION "closed"', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    await store.close();
    await expectAllClosed(ctx, store, 'after close()');
    const unused = await ctx.storeWithoutInit();
    await unused.close();
    await expectAllClosed(ctx, unused, 'after close() of a store never used');
  }),

  check('close() during init() in flight: init settles, later calls reject, data is intact', async (ctx) => {
    const store = await ctx.storeWithoutInit();
    const initializing = store.init().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    const saving = store.saveThread(thread(ctx.id('t'), ctx.id('r'))).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await store.close();
    for (const [what, outcome] of [
      ['init()', await initializing],
      ['saveThread', await saving],
    ] as const) {
      if (outcome === 'resolved') continue;
      await expectRejects(Promise.reject(outcome), ['CONNECTION'], `${what} racing close()`);
    }
    await expectRejects(() => store.init(), ['CONNECTION'], 'init() after a close() that raced init()');
    // A fresh instance still works: nothing half-open blocks the backend.
    const fresh = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'));
    await fresh.saveThread(t);
    await expectThread(fresh, t, 'a fresh store after the race');
  }),

  check('closing one store leaves another store of the same backend working', async (ctx) => {
    const [a, b] = await Promise.all([ctx.store(), ctx.store()]);
    const t = thread(ctx.id('t'), ctx.id('r'));
    await b.saveThread(t);
    await a.close();
    await expectThread(b, t, 'the other store after close()');
    const u = thread(ctx.id('t'), ctx.id('r'));
    await b.saveThread(u);
    await expectThread(b, u, 'a write on the other store after close()');
    const listed = await b.listThreads({ resourceId: u.resourceId });
    expectTrue(listed.total === 1, `the other store lists its thread, got ${show(listed)}`);
  }),
];
