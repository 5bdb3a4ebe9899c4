import {
  capabilitiesOf,
  InMemoryStore,
  isMemoryError,
  Memory,
  type MemoryRecord,
  type MemoryStorage,
  type Message,
  type ResourceDeletion,
  type Thread,
} from '@engram/core';
import { compareMessages } from '@engram/core/driver';
import { expectEqual, expectRejects, expectTrue, show } from '../assert.ts';
import { raceProcesses } from '../concurrency/harness.ts';
import { purgeWhileWriting } from '../concurrency/purge-race.ts';
import { runRacer } from '../concurrency/tasks.ts';
import { defineArea } from '../define.ts';
import { at, message, partsContent, thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import type { ConformanceInit } from '../types.ts';
import { random, SPACE, unit } from '../vectors.ts';

const check = defineArea('purge');

/** The store, or a skip naming what it lacks: the purge area needs `deleteResource` and `restoreResource`. */
function purging(store: MemoryStorage): MemoryStorage {
  if (!store.deleteResource || !store.restoreResource) {
    skipCheck(
      `${store.name} declares no deleteResource/restoreResource (stores built with createStore have both)`,
    );
  }
  return store;
}

/** Everything seeded for one resource, as read back right after seeding. */
interface Seeded {
  resourceId: string;
  threads: Thread[];
  messages: Message[];
  resource: unknown;
  vectors: unknown[];
  logs: unknown[];
  turns: unknown[];
}

/**
 * Two threads of three messages each, thread-scope working memory on the first, resource-scope
 * working memory and metadata, a vector per message (when the store has vectors), a
 * thread-scope and a resource-scope observation log (when it has observations) and a turn record
 * per thread (when it has turns).
 */
export async function seedResource(store: MemoryStorage, resourceId: string): Promise<Seeded> {
  const threads = [0, 1].map((i) =>
    thread(`${resourceId}-t${i}`, resourceId, {
      metadata: i === 0 ? { workingMemory: `# thread ${i}`, tag: 'x' } : { tag: 'y' },
      createdAt: at(i),
      updatedAt: at(i),
    }),
  );
  for (const t of threads) await store.saveThread(t);
  const messages = threads.flatMap((t, i) =>
    [0, 1, 2].map((j) =>
      message(`${t.id}-m${j}`, t, at(10 * i + j), j === 1 ? { content: partsContent(`part ${j}`) } : {}),
    ),
  );
  await store.saveMessages(messages);
  await store.updateResource({ resourceId, workingMemory: '# resource', metadata: { plan: 'pro' } });
  const ids = messages.map((m) => m.id);
  if (store.vectors) {
    await store.vectors.claimSpace(SPACE);
    const next = random(ids.length);
    await store.vectors.upsertVectors(
      SPACE,
      ids.map((messageId) => ({ messageId, hash: `h-${messageId}`, vector: unit(next) })),
    );
  }
  if (store.observations) {
    const t = threads[0] as Thread;
    const updatedAt = at(5);
    await store.observations.swap(null, {
      key: `thread:${t.id}`,
      resourceId,
      threadId: t.id,
      generation: 1,
      version: 1,
      body: 'thread log',
      updatedAt,
    });
    await store.observations.swap(null, {
      key: `resource:${resourceId}`,
      resourceId,
      threadId: null,
      generation: 1,
      version: 1,
      body: 'resource log',
      updatedAt,
    });
  }
  if (store.turns) {
    for (const [i, t] of threads.entries()) {
      const id = `${t.id}-m0`;
      const body = JSON.stringify({ v: 1, history: [id], tokens: { history: i + 1 } });
      await store.turns.put({ id, threadId: t.id, resourceId, createdAt: at(10 * i + 1), body });
    }
  }
  return snapshot(store, resourceId, threads, ids);
}

/** What the store holds now for the records seeded under `resourceId`. */
async function snapshot(
  store: MemoryStorage,
  resourceId: string,
  seededThreads: readonly Thread[],
  ids: string[],
): Promise<Seeded> {
  const threads = (await store.listThreads({ resourceId, perPage: false, direction: 'ASC' })).threads;
  const messages = await store.listMessagesById({ ids });
  const resource = await store.getResourceById({ resourceId });
  const vectors = store.vectors ? await store.vectors.getVectors(SPACE, ids) : [];
  const logs: unknown[] = [];
  if (store.observations) {
    for (const t of seededThreads) logs.push(await store.observations.generations(`thread:${t.id}`));
    logs.push(await store.observations.generations(`resource:${resourceId}`));
  }
  const turns: unknown[] = [];
  if (store.turns) for (const t of seededThreads) turns.push(...(await store.turns.list(t.id, 10)));
  return { resourceId, threads, messages, resource, vectors, logs, turns };
}

async function again(store: MemoryStorage, seeded: Seeded): Promise<Seeded> {
  const ids = seeded.messages.map((m) => m.id);
  const threads = seeded.threads.length > 0 ? seeded.threads : [];
  return snapshot(store, seeded.resourceId, threads, ids);
}

function expectedCounts(store: MemoryStorage): ResourceDeletion {
  return {
    threads: 2,
    messages: 6,
    vectors: store.vectors ? 6 : 0,
    observations: store.observations ? 2 : 0,
    turns: store.turns ? 2 : 0,
    workingMemory: 2,
    resources: 1,
  };
}

const ZERO: ResourceDeletion = {
  threads: 0,
  messages: 0,
  vectors: 0,
  observations: 0,
  turns: 0,
  workingMemory: 0,
  resources: 0,
};

/** Ids around `victim` that a careless purge would reach: prefixes, extensions, wildcards, quotes. */
function neighbours(victim: string): string[] {
  return [
    victim.slice(0, -1),
    `${victim}1`,
    `${victim}%`,
    `${victim}_`,
    `${victim}*`,
    `${victim}:`,
    `${victim}'`,
    `${victim}"`,
    `${victim}😀`,
    `${victim.slice(0, -1)}_`,
    `${victim.slice(0, -1)}%`,
  ];
}

async function expectGone(store: MemoryStorage, seeded: Seeded, what: string): Promise<void> {
  const after = await again(store, seeded);
  const { resourceId } = seeded;
  expectEqual(after.threads, [], `${what}: threads of ${show(resourceId)} after deleteResource`);
  for (const t of seeded.threads) {
    expectEqual(await store.getThreadById({ threadId: t.id }), null, `${what}: thread ${show(t.id)}`);
  }
  expectEqual(after.messages, [], `${what}: messages of ${show(resourceId)} after deleteResource`);
  expectEqual(after.resource, null, `${what}: the resource row (and its working memory)`);
  expectEqual(after.vectors, [], `${what}: vectors of the resource's messages`);
  expectTrue(
    after.logs.every((rows) => Array.isArray(rows) && rows.length === 0),
    `${what}: observation logs of the resource after deleteResource: ${show(after.logs)}`,
  );
  expectEqual(after.turns, [], `${what}: turn records of the resource's threads`);
}

/**
 * After a purge that writers raced: nothing seeded is left — threads, messages, vectors, logs —
 * and a resource row, which a racing `updateResource` may have written anew, holds none of the
 * seeded working memory or metadata.
 */
async function expectSeededGone(store: MemoryStorage, seeded: Seeded): Promise<void> {
  const after = await again(store, seeded);
  const what = `${show(seeded.resourceId)} after deleteResource raced writers`;
  for (const t of seeded.threads) {
    expectEqual(await store.getThreadById({ threadId: t.id }), null, `${what}: seeded thread ${show(t.id)}`);
  }
  expectEqual(after.messages, [], `${what}: seeded messages`);
  expectEqual(after.vectors, [], `${what}: vectors of the seeded messages`);
  expectTrue(
    after.logs.every((rows) => Array.isArray(rows) && rows.length === 0),
    `${what}: observation logs: ${show(after.logs)}`,
  );
  expectEqual(after.turns, [], `${what}: turn records of the seeded threads`);
  const resource = await store.getResourceById({ resourceId: seeded.resourceId });
  expectTrue(
    resource === null || (resource.metadata.plan === undefined && resource.workingMemory !== '# resource'),
    `${what}: the resource row still holds seeded data: ${show(resource)}`,
  );
}

/**
 * The store seen through a view whose first working-memory write (`updateResource` or
 * `updateWorkingMemoryAtomically`) waits, once it is `reached`, until `release`; every other
 * call goes straight to the store.
 */
function heldWrites(store: MemoryStorage): {
  storage: MemoryStorage;
  reached: Promise<void>;
  release: () => void;
} {
  let reach = () => {};
  let release = () => {};
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  let armed = true;
  const storage = new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const call = (value as (...args: unknown[]) => unknown).bind(target);
      if (!armed || (key !== 'updateResource' && key !== 'updateWorkingMemoryAtomically')) return call;
      return async (...args: unknown[]) => {
        armed = false;
        reach();
        await released;
        return call(...args);
      };
    },
  });
  return { storage, reached, release };
}

/** `memory.deleteResource`: everything of one resource goes, nothing of another; re-running is a no-op. */
export const purgeChecks = [
  check(
    'deleteResource removes every record of the resource, counts them, and leaves hostile-id neighbours untouched',
    async (ctx) => {
      const store = purging(await ctx.store());
      const memory = new Memory({ storage: store });
      const base = ctx.id('p');
      for (const victim of [base, `${base}:%_*'"é`]) {
        const others = [];
        for (const id of neighbours(victim)) others.push(await seedResource(store, id));
        const seeded = await seedResource(store, victim);
        const counts = await memory.deleteResource({ resourceId: victim });
        expectEqual(counts, expectedCounts(store), `counts of deleteResource(${show(victim)})`);
        await expectGone(store, seeded, show(victim));
        for (const other of others) {
          expectEqual(
            await again(store, other),
            other,
            `${show(other.resourceId)} after deleteResource(${show(victim)})`,
          );
        }
        expectEqual(
          await memory.deleteResource({ resourceId: victim }),
          ZERO,
          `deleteResource(${show(victim)}) run again`,
        );
        for (const other of others) await memory.deleteResource({ resourceId: other.resourceId });
      }
    },
  ),

  check(
    'deleteResource while writers keep writing to the resource (in this process, and in OS processes with a worker unless processLocal): earlier writes gone, later ones whole, no message without its thread, no half batch, prefix neighbours untouched',
    async (ctx) => {
      purging(await ctx.store());
      await purgeWhileWriting<Seeded>(ctx, { seed: seedResource, again, expectGone: expectSeededGone });
    },
  ),

  check(
    'after deleteResource no row of the backend names the resource, its threads or its messages (bookkeeping included), while another resource is still listed',
    async (ctx) => {
      const store = purging(await ctx.store());
      const memory = new Memory({ storage: store });
      const [victim, kept] = [ctx.id('erased'), ctx.id('kept')];
      for (const id of [kept, victim]) {
        const seeded = await seedResource(store, id);
        // What deleting a thread and a message on their own leaves behind (logs, tombstones).
        await store.deleteMessages([(seeded.messages[4] as Message).id]);
        await store.deleteThread({ threadId: (seeded.threads[1] as Thread).id });
      }
      await memory.deleteResource({ resourceId: victim });
      const rows = await (ctx.init.storedRows as NonNullable<ConformanceInit['storedRows']>)(store);
      const left = rows.filter((row) => row.includes(victim));
      expectEqual(
        left.slice(0, 5),
        [],
        `rows naming ${show(victim)} after deleteResource (${left.length} in all)`,
      );
      expectTrue(
        rows.some((row) => row.includes(kept)),
        `storedRows lists no row of ${show(kept)}, which is still stored: it does not see the store's rows`,
      );
      await memory.deleteResource({ resourceId: kept });
    },
    (init) => (init.storedRows ? undefined : 'no storedRows hook supplied'),
  ),

  check(
    "resource-scope working memory written for a thread while its resource is erased: the write is refused NOT_FOUND and leaves no document (a first write by updateWorkingMemory and by editWorkingMemory, the store's write held until deleteResource returned); a write over an existing document whose thread alone is deleted meanwhile is kept",
    async (ctx) => {
      const store = purging(await ctx.store());
      for (const [how, existing] of [
        ['updateWorkingMemory', null],
        ['editWorkingMemory', null],
        ['updateWorkingMemory', '# before'],
        ['editWorkingMemory', '# before'],
      ] as const) {
        const r = ctx.id('wm');
        const t = thread(`${r}-t`, r);
        await store.saveThread(t);
        if (existing) await store.updateResource({ resourceId: r, workingMemory: existing });
        const held = heldWrites(store);
        const memory = new Memory({
          storage: held.storage,
          options: { workingMemory: { enabled: true, scope: 'resource' } },
        });
        const ids = { threadId: t.id, resourceId: r };
        const write =
          how === 'updateWorkingMemory'
            ? memory.updateWorkingMemory({ ...ids, workingMemory: '# written' })
            : memory.editWorkingMemory({ ...ids, edit: () => '# written' });
        const outcome = write.then(
          () => 'written',
          (error: unknown) => error,
        );
        await held.reached;
        const what = `${how} naming thread ${show(t.id)} of ${show(r)}${existing ? ' (a document stored)' : ''}`;
        if (existing) await store.deleteThread({ threadId: t.id });
        else await new Memory({ storage: store }).deleteResource({ resourceId: r });
        held.release();
        const result = await outcome;
        const stored = (await store.getResourceById({ resourceId: r }))?.workingMemory ?? null;
        if (existing) {
          expectEqual(result, 'written', `${what}, its thread deleted meanwhile: the call`);
          expectEqual(stored, '# written', `${what}, its thread deleted meanwhile: the document`);
        } else {
          expectTrue(
            isMemoryError(result) && result.code === 'NOT_FOUND',
            `${what}, erased meanwhile: expected NOT_FOUND, got ${show(result)}`,
          );
          expectEqual(stored, null, `${what}, erased meanwhile: the working memory left`);
        }
        await new Memory({ storage: store }).deleteResource({ resourceId: r });
      }
    },
  ),

  check('deleteResource of a resource with nothing stored returns zeros', async (ctx) => {
    const store = purging(await ctx.store());
    const memory = new Memory({ storage: store });
    expectEqual(await memory.deleteResource({ resourceId: ctx.id('none') }), ZERO, 'counts');
  }),

  check('deleteResource with a bad id is INVALID_ARGUMENT and changes nothing', async (ctx) => {
    const store = purging(await ctx.store());
    const memory = new Memory({ storage: store });
    const seeded = await seedResource(store, ctx.id('p'));
    const bad: unknown[] = [undefined, null, '', 42, { $gt: '' }, ['x'], 'x'.repeat(256)];
    for (const resourceId of bad) {
      await expectRejects(
        () => memory.deleteResource({ resourceId } as never),
        ['INVALID_ARGUMENT'],
        `deleteResource({ resourceId: ${show(resourceId)} })`,
      );
    }
    for (const args of [undefined, null, 'r', []]) {
      await expectRejects(
        () => memory.deleteResource(args as never),
        ['INVALID_ARGUMENT'],
        `deleteResource(${show(args)})`,
      );
    }
    expectEqual(await again(store, seeded), seeded, 'the resource after refused calls');
  }),

  check(
    'exportResource → importRecords round-trips exactly, to and from the in-memory reference store',
    async (ctx) => {
      const store = purging(await ctx.store());
      const reference = new InMemoryStore({
        vectors: store.vectors !== undefined,
        observations: store.observations !== undefined,
        turns: store.turns !== undefined,
      });
      const r = ctx.id('x');
      // Vectors are exported by stores that read them back; every store with vectors imports them.
      const readsVectors = store.vectors?.readVectors !== undefined;
      const thread = ['thread', 'message', 'message', 'message']
        .concat(readsVectors ? ['vector', 'vector', 'vector'] : [])
        .concat(store.turns ? ['turn'] : []);
      // This store → reference.
      await seedResource(store, r);
      const exported = await records(store, r);
      expectEqual(
        exported.map((x) => x.kind),
        ['resource', ...thread]
          .concat(store.observations ? ['observation'] : [])
          .concat(thread)
          .concat(store.observations ? ['observation'] : []),
        'the kinds of the exported records, in order',
      );
      const lines = exported.map((x) => JSON.parse(JSON.stringify(x)) as unknown);
      await new Memory({ storage: reference }).importRecords(lines);
      expectEqual(
        await records(reference, r),
        exported,
        `the reference store after importing ${store.name}'s export`,
      );
      // Reference → this store, under another resource id.
      const back = ctx.id('y');
      await seedResource(reference, back);
      const fromReference = await records(reference, back);
      const memory = new Memory({ storage: store });
      await memory.importRecords(fromReference.map((x) => JSON.parse(JSON.stringify(x)) as unknown));
      const comparable = fromReference.filter((x) => readsVectors || x.kind !== 'vector');
      expectEqual(
        await records(store, back),
        comparable,
        `${store.name} after importing the reference export`,
      );
      const vectors = fromReference.flatMap((x) => (x.kind === 'vector' ? [x] : []));
      if (store.vectors) {
        const stored = await store.vectors.getVectors(
          SPACE,
          vectors.map((v) => v.messageId),
        );
        expectEqual(
          stored.map((v) => `${v.messageId} ${v.hash}`).sort(),
          vectors.map((v) => `${v.messageId} ${v.hash}`).sort(),
          `${store.name}'s vectors after importing the reference export`,
        );
      }
      // Again with 'skip' and 'replace': nothing duplicated, nothing changed; 'fail' refuses.
      await memory.importRecords(fromReference, { onConflict: 'skip' });
      await memory.importRecords(fromReference, { onConflict: 'replace' });
      expectEqual(
        await records(store, back),
        comparable,
        `${store.name} after importing the same records again`,
      );
      await expectRejects(
        () => memory.importRecords(fromReference),
        ['CONFLICT'],
        "importing again with onConflict 'fail'",
      );
    },
  ),
  check(
    'exportResource while messages of the thread are deleted exports every message stored all along, once, in (createdAt, id) order (200 messages five at each instant, then 1,000 at one instant; ids that sort by UTF-8 bytes)',
    async (ctx) => {
      const store = await ctx.store();
      const memory = new Memory({ storage: store });
      const r = ctx.id('x');
      const t = thread(`${r}-t`, r);
      await store.saveThread(t);
      const suffixes = ['a', 'B', 'é', 'Z', '😀'];
      const stored = Array.from({ length: 1_200 }, (_, i) =>
        message(
          `${t.id}-${String(Math.floor(i / 5)).padStart(3, '0')}${suffixes[i % 5]}`,
          t,
          at(Math.min(40, Math.floor(i / 5))),
        ),
      );
      for (let i = 0; i < stored.length; i += 100) await store.saveMessages(stored.slice(i, i + 100));
      const order = [...stored].sort(compareMessages).map((m) => m.id);
      // Around the export's first page of 500: one read, one at its end, one just after. Then one
      // later, with the export inside the instant of 1,000, where its next page starts at an offset.
      const deleted = [order[3], order[499], order[500], order[1_100]] as string[];
      const ids: string[] = [];
      for await (const record of memory.exportResource({ resourceId: r })) {
        if (record.kind !== 'message') continue;
        ids.push(record.id);
        if (ids.length === 500) await store.deleteMessages(deleted.slice(0, 3));
        if (ids.length === 999) await store.deleteMessages(deleted.slice(3));
      }
      expectEqual(
        ids,
        order.filter((id) => !deleted.includes(id) || ids.includes(id)),
        'the messages exported',
      );
      await store.deleteThread({ threadId: t.id });
    },
  ),
  check(
    'exportResource while threads of the resource are deleted throughout exports every thread stored all along, once, oldest first (1,040 threads, four at each instant, ids that sort by UTF-8 bytes)',
    async (ctx) => {
      const store = await ctx.store();
      const memory = new Memory({ storage: store });
      const r = ctx.id('x');
      const suffixes = ['a', 'B', 'é', '😀'];
      const threads = Array.from({ length: 1_040 }, (_, i) =>
        thread(`${r}-t${String(Math.floor(i / 4)).padStart(3, '0')}${suffixes[i % 4]}`, r, {
          createdAt: at(Math.floor(i / 4)),
          updatedAt: at(Math.floor(i / 4)),
        }),
      );
      for (const t of threads) await store.saveThread(t);
      const order = [...threads].sort(compareMessages).map((t) => t.id);
      // Every 50 threads read: the last read, two read before it and one not read yet.
      const deleted = new Set<string>();
      const ids: string[] = [];
      for await (const record of memory.exportResource({ resourceId: r })) {
        if (record.kind !== 'thread') continue;
        ids.push(record.id);
        if (ids.length % 50 !== 0) continue;
        for (const threadId of [ids.at(-1), ids.at(-10), ids.at(-30), order[order.indexOf(record.id) + 5]]) {
          if (threadId === undefined || deleted.has(threadId)) continue;
          deleted.add(threadId);
          await store.deleteThread({ threadId });
        }
      }
      expectEqual(
        ids,
        order.filter((id) => !deleted.has(id) || ids.includes(id)),
        'the threads exported',
      );
      await memory.deleteResource({ resourceId: r });
    },
  ),
  check(
    (init) =>
      `one dump imported by ${Math.max(2, init.processes ?? 4)} OS processes at once with onConflict 'skip' (callers in one process when processLocal or without a worker): each succeeds or is a CONFLICT of racing writes, and one more import leaves the store holding the dump exactly, a log of two generations included`,
    async (ctx) => {
      const store = purging(await ctx.store());
      const memory = new Memory({ storage: store });
      const r = ctx.id('x');
      await seedResource(store, r);
      const log = store.observations;
      if (log) {
        // The resource's log in its second generation, replaced once: four swaps to write again.
        const head = await log.head(`resource:${r}`);
        if (!head) throw new Error('seedResource wrote no resource log');
        const next = { ...head, updatedAt: at(6) };
        await log.swap(head, { ...next, version: 2, body: 'resource log, replaced' });
        await log.swap({ generation: 1, version: 2 }, { ...next, generation: 2, version: 3, body: 'g2' });
        await log.swap(
          { generation: 2, version: 3 },
          { ...next, generation: 2, version: 4, body: 'g2, replaced' },
        );
      }
      const exported = await records(store, r);
      await memory.deleteResource({ resourceId: r });
      const n = Math.max(2, ctx.init.processes ?? 4);
      const task = { kind: 'import-dump', records: JSON.parse(JSON.stringify(exported)) } as const;
      const remote = !capabilitiesOf(store).processLocal && ctx.init.worker;
      const reports = remote
        ? await raceProcesses(ctx.init.worker as URL | string, task, n)
        : await Promise.all(Array.from({ length: n }, (_, racer) => runRacer(store, task, racer)));
      // Racing saves of one new id may be CONFLICT (the contract allows it); anything else fails.
      const failures = reports.flatMap((x) => x.failures);
      expectEqual(failures, [], 'imports that failed other than with CONFLICT');
      const succeeded = reports.flatMap((x) => x.written).length;
      expectTrue(succeeded > 0, `none of ${n} imports of the dump at once succeeded`);
      await memory.importRecords(task.records, { onConflict: 'skip' });
      expectEqual(
        await records(store, r),
        exported,
        `${store.name} after ${n} imports of the dump at once and one more`,
      );
      ctx.log(
        `${n} ${remote ? 'OS processes' : 'callers in one process'} imported the ${exported.length} records of one dump at once: ${succeeded} succeeded, ${n - succeeded} CONFLICT`,
      );
      await memory.deleteResource({ resourceId: r });
    },
  ),
  check(
    "importRecords with onConflict 'replace' never takes another resource's records: a dump whose message and turn ids another resource holds is refused, and that resource is unchanged",
    async (ctx) => {
      const store = purging(await ctx.store());
      const memory = new Memory({ storage: store });
      const owner = ctx.id('own');
      const seeded = await seedResource(store, owner);
      const intruder = ctx.id('in');
      // The owner's export, retold as the intruder's: its own thread, the owner's message and turn ids.
      const taken = (await records(store, owner)).flatMap((x): unknown[] => {
        const ids = { resourceId: intruder };
        if (x.kind === 'thread' && x.id === seeded.threads[0]?.id)
          return [{ ...x, ...ids, id: `${intruder}-t` }];
        if (x.kind === 'message' || x.kind === 'turn') {
          if (x.threadId !== seeded.threads[0]?.id) return [];
          return [{ ...x, ...ids, threadId: `${intruder}-t` }];
        }
        return [];
      });
      const kinds = new Set(taken.map((x) => (x as MemoryRecord).kind));
      expectTrue(
        kinds.has('message') && (kinds.has('turn') || !store.turns),
        `the forged dump: ${show([...kinds])}`,
      );
      for (const only of ['message', 'turn'] as const) {
        const dump = taken.filter((x) => ['thread', only].includes((x as MemoryRecord).kind));
        if (dump.length === 1) continue;
        await expectRejects(
          () => memory.importRecords(dump, { onConflict: 'replace' }),
          ['INVALID_ARGUMENT', 'CONFLICT', 'VALIDATION'],
          `importing the owner's ${only} ids as ${show(intruder)}'s with 'replace'`,
        );
      }
      expectEqual(await again(store, seeded), seeded, `${show(owner)} after the refused imports`);
    },
  ),
];

async function records(store: MemoryStorage, resourceId: string): Promise<MemoryRecord[]> {
  const out: MemoryRecord[] = [];
  for await (const record of new Memory({ storage: store }).exportResource({ resourceId })) out.push(record);
  return out;
}
