import { capabilitiesOf, type JsonObject, type MemoryStorage } from '@engram/core';
import { ConformanceError, expectEqual, expectTrue } from '../assert.ts';
import { raceProcesses } from '../concurrency/harness.ts';
import { interleavedReplace } from '../concurrency/interleaved.ts';
import { STOPS, stopMs, stoppedWriter } from '../concurrency/stopped.ts';
import {
  initKey,
  initThreadId,
  parseObject,
  type RacerReport,
  type RaceTask,
  REFUSED,
  runRacer,
} from '../concurrency/tasks.ts';
import { updatedAtChecks } from '../concurrency/updated-at.ts';
import { defineArea } from '../define.ts';
import { thread } from '../fixtures.ts';
import { NEEDS_ATOMIC, requireAtomic, skipCheck } from '../skip.ts';
import type { CheckContext, ConformanceInit } from '../types.ts';

const check = defineArea('concurrency');

/** Merges per racer in the repeated races. */
export const OPS_PER_RACER = 25;
/** Missing resources raced for in the first-write races. */
export const FIRST_WRITE_ROUNDS = 5;

/** How many racers a race has: `processes` (default 4), at least 2. */
export const racers = (init: ConformanceInit) => Math.max(2, init.processes ?? 4);

/** How many race, for test names (the log line of each race says whether they were OS processes). */
function mode(init: ConformanceInit): string {
  return `${racers(init)} racers`;
}

const NEEDS_WORKER = (name: string) =>
  `${name} declares capabilities.atomicWorkingMemory: true but no \`worker\` was supplied, so its ` +
  "cross-process atomicity cannot be measured. Pass `worker: new URL('./worker.ts', import.meta.url)` " +
  '(a module exporting `async function create()` that opens its own connection), or declare ' +
  '`capabilities.processLocal: true` if the data lives inside one process only.';

/** Runs `task` with every racer at once, across processes when possible. */
async function race(
  ctx: CheckContext,
  store: MemoryStorage,
  task: RaceTask,
  needsAtomic: boolean,
): Promise<{ reports: RacerReport[]; how: string }> {
  const n = racers(ctx.init);
  if (capabilitiesOf(store).processLocal) {
    const reports = await Promise.all(Array.from({ length: n }, (_, racer) => runRacer(store, task, racer)));
    return { reports, how: `${n} concurrent callers in one process (the store is processLocal)` };
  }
  if (ctx.init.worker) {
    return { reports: await raceProcesses(ctx.init.worker, task, n), how: `${n} OS processes` };
  }
  if (needsAtomic) throw new ConformanceError(NEEDS_WORKER(ctx.init.name));
  const reports = await Promise.all(Array.from({ length: n }, (_, racer) => runRacer(store, task, racer)));
  return { reports, how: `${n} concurrent callers in one process (no worker supplied)` };
}

/** Counts the written keys that survived and fails, with the numbers, if any was lost. */
function tally(
  ctx: CheckContext,
  label: string,
  how: string,
  reports: RacerReport[],
  present: (key: string) => boolean,
): void {
  const written = reports.flatMap((r) => r.written);
  const conflicts = reports.reduce((sum, r) => sum + r.conflicts, 0);
  const failures = reports.flatMap((r) => r.failures);
  const attempted = written.length + conflicts + failures.length;
  const lost = written.filter((key) => !present(key));
  const survived = written.length - lost.length;
  ctx.log(
    `${label}: ${how}, ${attempted} operations (${written.length} succeeded, ${conflicts} CONFLICT, ` +
      `${failures.length} failed); ${survived}/${written.length} keys survived`,
  );
  if (failures.length) {
    throw new ConformanceError(
      `${label}: ${failures.length} operations failed, e.g. ${failures.slice(0, 3).join('; ')}`,
    );
  }
  expectTrue(
    written.length * 2 >= attempted,
    `${label}: only ${written.length} of ${attempted} operations succeeded (${conflicts} gave up with CONFLICT)`,
  );
  if (lost.length) {
    throw new ConformanceError(
      `${label}: ${lost.length} of ${written.length} acknowledged writes were lost ` +
        `(${survived} keys survived; ${how}); lost e.g. ${lost.slice(0, 5).join(', ')}`,
    );
  }
}

function keysOf(metadata: JsonObject | undefined): Set<string> {
  return new Set(Object.keys(metadata ?? {}));
}

/** Writers racing one another lose nothing that they were told was written. */
export const concurrencyChecks = [
  check(
    (init) =>
      `atomic merges into one resource's working memory survive (${mode(init)} × ${OPS_PER_RACER} merges)${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      requireAtomic(store);
      const resourceId = ctx.id('race-r');
      const { reports, how } = await race(
        ctx,
        store,
        { kind: 'resource-merge', resourceId, ops: OPS_PER_RACER },
        true,
      );
      const stored = parseObject((await store.getResourceById({ resourceId }))?.workingMemory);
      tally(ctx, 'resource working-memory merges', how, reports, (key) => Object.hasOwn(stored, key));
    },
  ),

  check(
    (init) =>
      `atomic merges into one resource's working memory racing merges whose update function throws (at every call, or at a call after a lost race): every acknowledged merge survives, no refused one is stored, and a refused one holds up no other (${mode(init)} × ${OPS_PER_RACER} merges, 2 in 4 refusable)${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      requireAtomic(store);
      const resourceId = ctx.id('race-refused');
      const task = { kind: 'resource-merge', resourceId, ops: OPS_PER_RACER, refuseEvery: 4 } as const;
      const { reports, how } = await race(ctx, store, task, true);
      const stored = parseObject((await store.getResourceById({ resourceId }))?.workingMemory);
      const refused = reports.flatMap((r) => r.written).filter((key) => key.endsWith(REFUSED));
      // The op's own key: what its update function added on a first call that later lost.
      const own = (key: string) => key.slice(0, -REFUSED.length).replace(/-retry$/, '');
      const leaked = refused.filter((key) => Object.hasOwn(stored, own(key)));
      if (leaked.length > 0) {
        throw new ConformanceError(
          `${leaked.length} of ${refused.length} merges whose update function threw are stored, e.g. ${leaked.slice(0, 3).join(', ')}`,
        );
      }
      expectTrue(refused.length > 0, 'some update functions threw and came back as-is');
      const accepted = reports.map((r) => ({
        ...r,
        written: r.written.filter((key) => !key.endsWith(REFUSED)),
      }));
      const onRetry = refused.filter((key) => key.endsWith(`-retry${REFUSED}`)).length;
      tally(
        ctx,
        `resource working-memory merges beside ${refused.length} refused (${onRetry} at a call after a lost race)`,
        how,
        accepted,
        (key) => Object.hasOwn(stored, key),
      );
    },
  ),

  check(
    (init) =>
      `atomic merges into one thread's working memory survive (${mode(init)} × ${OPS_PER_RACER} merges)${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      requireAtomic(store);
      const t = thread(ctx.id('race-t'), ctx.id('race-r'), { metadata: { keep: 'me' } });
      await store.saveThread(t);
      const { reports, how } = await race(
        ctx,
        store,
        { kind: 'thread-merge', threadId: t.id, ops: OPS_PER_RACER },
        true,
      );
      const after = await store.getThreadById({ threadId: t.id });
      const stored = parseObject(after?.metadata.workingMemory);
      tally(ctx, 'thread working-memory merges', how, reports, (key) => Object.hasOwn(stored, key));
      expectTrue(after?.metadata.keep === 'me', 'other metadata keys of the thread must survive');
    },
  ),

  check(
    (init) =>
      `concurrent updateThread metadata merges all survive (${mode(init)} × ${OPS_PER_RACER} updates)`,
    async (ctx) => {
      const store = await ctx.store();
      const t = thread(ctx.id('race-t'), ctx.id('race-r'));
      await store.saveThread(t);
      const { reports, how } = await race(
        ctx,
        store,
        { kind: 'thread-metadata', threadId: t.id, ops: OPS_PER_RACER },
        false,
      );
      const keys = keysOf((await store.getThreadById({ threadId: t.id }))?.metadata);
      tally(ctx, 'updateThread metadata merges', how, reports, (key) => keys.has(key));
    },
  ),

  check(
    (init) =>
      `concurrent updateResource metadata merges all survive (${mode(init)} × ${OPS_PER_RACER} updates)`,
    async (ctx) => {
      const store = await ctx.store();
      const resourceId = ctx.id('race-r');
      await store.updateResource({ resourceId, workingMemory: 'kept' });
      const { reports, how } = await race(
        ctx,
        store,
        { kind: 'resource-metadata', resourceId, ops: OPS_PER_RACER },
        false,
      );
      const resource = await store.getResourceById({ resourceId });
      const keys = keysOf(resource?.metadata);
      tally(ctx, 'updateResource metadata merges', how, reports, (key) => keys.has(key));
      expectTrue(resource?.workingMemory === 'kept', 'metadata merges must not touch working memory');
    },
  ),

  check(
    (init) =>
      `concurrent first atomic merges into a missing resource all survive (${mode(init)}, ${FIRST_WRITE_ROUNDS} resources)${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      requireAtomic(store);
      const resourceIds = Array.from({ length: FIRST_WRITE_ROUNDS }, () => ctx.id('race-new'));
      const { reports, how } = await race(ctx, store, { kind: 'first-merge', resourceIds }, true);
      const stored = new Map<string, JsonObject>();
      for (const id of resourceIds)
        stored.set(id, parseObject((await store.getResourceById({ resourceId: id }))?.workingMemory));
      tally(ctx, 'first atomic merges into missing resources', how, reports, (key) => {
        const [id, k] = splitKey(key);
        return Object.hasOwn(stored.get(id) ?? {}, k);
      });
    },
  ),

  check(
    (init) =>
      `concurrent first updateResource calls on a missing resource all survive (${mode(init)}, ${FIRST_WRITE_ROUNDS} resources)`,
    async (ctx) => {
      const store = await ctx.store();
      const resourceIds = Array.from({ length: FIRST_WRITE_ROUNDS }, () => ctx.id('race-new'));
      const { reports, how } = await race(ctx, store, { kind: 'first-metadata', resourceIds }, false);
      const stored = new Map<string, Set<string>>();
      for (const id of resourceIds)
        stored.set(id, keysOf((await store.getResourceById({ resourceId: id }))?.metadata));
      tally(ctx, 'first updateResource calls on missing resources', how, reports, (key) => {
        const [id, k] = splitKey(key);
        return stored.get(id)?.has(k) ?? false;
      });
    },
  ),

  check(
    (init) =>
      `saves, moves, updates and deletes of the same message ids (${mode(init)} × ${OPS_PER_RACER}): each message is listed in one thread, every total matches its listing, every content an acknowledged write`,
    async (ctx) => {
      const store = await ctx.store();
      const resourceId = ctx.id('race-r');
      const threadIds = Array.from({ length: 3 }, () => ctx.id('race-t'));
      for (const id of threadIds) await store.saveThread(thread(id, resourceId));
      const messageIds = Array.from({ length: 8 }, () => ctx.id('race-m'));
      const task = { kind: 'mixed-messages', threadIds, resourceId, messageIds, ops: OPS_PER_RACER } as const;
      const { reports, how } = await race(ctx, store, task, false);
      const written = new Set(reports.flatMap((r) => r.written));
      const failures = reports.flatMap((r) => r.failures);
      ctx.log(
        `mixed message writes: ${how}, ${written.size} acknowledged, ` +
          `${reports.reduce((n, r) => n + r.conflicts, 0)} CONFLICT, ${failures.length} failed`,
      );
      if (failures.length) {
        throw new ConformanceError(`mixed message writes failed, e.g. ${failures.slice(0, 3).join('; ')}`);
      }
      const listed: string[] = [];
      for (const threadId of threadIds) {
        const whole = await store.listMessages({ threadId, perPage: false });
        const paged = await store.listMessages({ threadId, perPage: 2 });
        expectEqual(
          [whole.total, paged.total],
          [whole.messages.length, whole.messages.length],
          `the totals of thread ${threadId} (listed whole, by pages of 2) and the messages it lists`,
        );
        for (const m of whole.messages) {
          expectEqual(m.threadId, threadId, `the thread of message ${m.id} listed in ${threadId}`);
          listed.push(`${m.id} ${threadId}`);
        }
      }
      const stored = await store.listMessagesById({ ids: messageIds });
      expectEqual(
        listed.sort(),
        stored.map((m) => `${m.id} ${m.threadId}`).sort(),
        'the messages the threads list (each once) and the messages stored',
      );
      for (const m of stored) {
        expectTrue(
          written.has(String(m.content)),
          `message ${m.id} holds ${JSON.stringify(m.content)}, which no acknowledged write gave it`,
        );
      }
    },
  ),

  check(
    `a thread-memory replace (updateThread) by another process inside an atomic update is not overwritten${NEEDS_ATOMIC}`,
    (ctx) => interleavedReplace(ctx, 'thread', NEEDS_WORKER(ctx.init.name)),
  ),

  check(
    `a resource-memory replace (updateResource) by another process inside an atomic update is not overwritten${NEEDS_ATOMIC}`,
    (ctx) => interleavedReplace(ctx, 'resource', NEEDS_WORKER(ctx.init.name)),
  ),

  check(
    (init) =>
      `a writer process stopped (SIGSTOP) ${STOPS}× for ${stopMs(init)} ms, longer than any lease, while ` +
      `it merges and patches a message, then resumed, overwrites no acknowledged merge or message field of the others (${mode(init)}) ` +
      '[skipped when processLocal or without a worker]',
    (ctx) =>
      stoppedWriter(ctx, racers(ctx.init), (reports, how, present) =>
        tally(ctx, 'merges around a stopped writer', how, reports, present),
      ),
  ),

  check(
    (init) =>
      `init() of one new store by ${mode(init)} at once: every call succeeds and the store then works`,
    raceInit,
  ),

  ...updatedAtChecks,
];

const NO_FRESH =
  'no `fresh` hook (and `worker`) supplied, so concurrent init() of a new store across processes cannot be measured';

/** `init()` of one new store by every racer at once, across OS processes unless the store is processLocal. */
async function raceInit(ctx: CheckContext): Promise<void> {
  const store = await ctx.store();
  const n = racers(ctx.init);
  const resourceId = ctx.id('init-r');
  const task: RaceTask = { kind: 'init', resourceId };
  const close = (s: MemoryStorage) => (ctx.init.destroy ? ctx.init.destroy(s) : s.close());
  if (capabilitiesOf(store).processLocal) {
    // No other process can open such a store: new instances initialise at once in this one.
    const instances = await Promise.all(Array.from({ length: n }, () => ctx.init.create()));
    try {
      const reports = await Promise.all(instances.map((s, racer) => runRacer(s, task, racer)));
      const present = await Promise.all(instances.map((s, racer) => initSurvivors(s, resourceId, [racer])));
      const how = `${n} new instances in one process (the store is processLocal)`;
      expectInit(ctx, n, reports, how, (key) => present.some((p) => p.has(key)));
    } finally {
      for (const s of instances) await close(s);
    }
    return;
  }
  if (!ctx.init.fresh || !ctx.init.worker) skipCheck(NO_FRESH);
  const fresh = await ctx.init.fresh();
  try {
    // Something the fresh store must not see: it has to be a place of its own.
    const elsewhere = thread(initThreadId(resourceId, n), resourceId);
    await store.saveThread(elsewhere);
    const reports = await raceProcesses(ctx.init.worker, task, n, { env: fresh.env, lazy: true });
    const reader = await fresh.create();
    try {
      await reader.init();
      const survivors = await initSurvivors(
        reader,
        resourceId,
        Array.from({ length: n }, (_, r) => r),
      );
      expectTrue(
        !survivors.has(elsewhere.id),
        `${ctx.init.name}: the store from fresh() sees a thread saved in the suite's store; fresh() must give a new, empty place`,
      );
      expectInit(ctx, n, reports, `${n} OS processes`, (key) => survivors.has(key));
    } finally {
      await close(reader);
    }
  } finally {
    await fresh.drop?.();
  }
}

/** The keys a racer of the init task wrote that `store` holds (init keys count as present). */
async function initSurvivors(
  store: MemoryStorage,
  resourceId: string,
  racerIds: number[],
): Promise<Set<string>> {
  const threads = await store.listThreads({ resourceId, perPage: false });
  const metadata = (await store.getResourceById({ resourceId }))?.metadata ?? {};
  return new Set([...racerIds.map(initKey), ...threads.threads.map((t) => t.id), ...Object.keys(metadata)]);
}

function expectInit(
  ctx: CheckContext,
  n: number,
  reports: RacerReport[],
  how: string,
  present: (key: string) => boolean,
): void {
  tally(ctx, 'init() of a new store, then a write each', how, reports, present);
  const initialised = reports.flatMap((r) => r.written).filter((key) => key.startsWith('init '));
  expectTrue(
    initialised.length === n,
    `only ${initialised.length} of ${n} concurrent init() calls on a new store succeeded (${how})`,
  );
}

function splitKey(key: string): [string, string] {
  const at = key.lastIndexOf('/');
  return [key.slice(0, at), key.slice(at + 1)];
}
