import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { capabilitiesOf, Memory, MemoryError, type MemoryStorage } from '@engram/core';
import { racers } from '../areas/concurrency.ts';
import { ConformanceError, expectEqual, show } from '../assert.ts';
import type { CheckContext } from '../types.ts';
import { raceProcesses } from './harness.ts';
import {
  BATCH,
  batchIds,
  parseAckKey,
  purgeWriter,
  type WriterLog,
  writerThreadId,
} from './purge-writers.ts';
import { waitForFile } from './signal.ts';

/** Writers in this process racing the purge. */
const IN_PROCESS = 3;
/** Rounds a writer runs at most (so the purge, which chases new threads, always ends). */
const ROUNDS = 15;
/** Rounds each in-process writer runs after the purge returned. */
const AFTER = 2;
/** Calls of `deleteResource` the check makes at most when the store answers CONFLICT. */
const PURGE_ATTEMPTS = 5;

/** What the purge race needs from the purge area: seeding a resource and reading it back. */
export interface PurgeRaceHooks<S> {
  seed(store: MemoryStorage, resourceId: string): Promise<S & { resourceId: string }>;
  again(store: MemoryStorage, seeded: S): Promise<S>;
  /** Fails unless nothing seeded under `seeded.resourceId` is left (the resource row may be rewritten). */
  expectGone(store: MemoryStorage, seeded: S): Promise<void>;
}

/**
 * `deleteResource` while writers keep writing to the resource: in this process (each with its
 * own store instance unless the store is process-local) and, with a `worker` on a store that is
 * not process-local, in OS processes too. Afterwards nothing written before the call started is
 * left, a write called after it returned is whole, no message is left without its thread, no
 * batch is half stored, and neighbours whose ids extend or shorten the resource id are untouched.
 */
export async function purgeWhileWriting<S>(ctx: CheckContext, hooks: PurgeRaceHooks<S>): Promise<void> {
  const store = await ctx.store();
  const local = capabilitiesOf(store).processLocal;
  const victim = ctx.id('race');
  const neighbours = [];
  for (const id of [victim.slice(0, -1), `${victim}0`]) neighbours.push(await hooks.seed(store, id));
  const seeded = await hooks.seed(store, victim);

  const dir = mkdtempSync(join(tmpdir(), 'engram-purge-race-'));
  const stop = join(dir, 'stop');
  const ready = join(dir, 'ready');
  const processes = !local && ctx.init.worker ? racers(ctx.init) : 0;
  const racing =
    processes > 0 && ctx.init.worker
      ? raceProcesses(
          ctx.init.worker,
          { kind: 'purge-writers', resourceId: victim, rounds: ROUNDS, stop, ready },
          processes,
        )
      : Promise.resolve([]);
  racing.catch(() => undefined);
  let purged = false;
  let purgeDone!: () => void;
  const done = new Promise<void>((resolve) => {
    purgeDone = resolve;
  });
  const logs: Promise<WriterLog>[] = [];
  try {
    // The OS processes take a while to start: the writers here start once those write.
    if (processes > 0) await waitForFile(ready, 60_000);
    for (let w = 0; w < IN_PROCESS; w++) {
      const writerStore = local ? store : await ctx.store();
      let after = 0;
      logs.push(
        purgeWriter(writerStore, {
          resourceId: victim,
          writer: `i${w}`,
          rounds: ROUNDS + AFTER,
          // ROUNDS rounds while the purge runs (then wait for it), and AFTER rounds after it returned.
          stop: async (round) => {
            if (round >= ROUNDS) await done;
            return purged && after++ >= AFTER;
          },
        }),
      );
    }
    // Let every writer get a few rounds in, so the purge starts with their threads stored.
    await sleep(local ? 0 : 50);
    for (let i = 0; i < 200 && (await threadCount(store, victim)) < 4 + IN_PROCESS; i++) await sleep(5);

    const start = Date.now();
    // A store may refuse a purge that lost too many races for its locks (CONFLICT); the contract
    // says calling it again completes it, so the check does, a few times.
    const memory = new Memory({ storage: store });
    for (let attempt = 1; ; attempt++) {
      try {
        await memory.deleteResource({ resourceId: victim });
        break;
      } catch (error) {
        if (!(error instanceof MemoryError && error.code === 'CONFLICT') || attempt === PURGE_ATTEMPTS)
          throw error;
        ctx.log(`deleteResource attempt ${attempt}: CONFLICT (${error.message}); calling it again`);
      }
    }
    const end = Date.now();
    purged = true;
    purgeDone();
    writeFileSync(stop, '');
    const inProcess = await Promise.all(logs);
    const reports = await racing;

    const failures = [...inProcess.flatMap((l) => l.failures), ...reports.flatMap((r) => r.failures)];
    if (failures.length) {
      throw new ConformanceError(
        `writers racing deleteResource failed other than with a MemoryError: ${failures.slice(0, 3).join('; ')}`,
      );
    }
    await hooks.expectGone(store, seeded);

    // Every acknowledged write, from this process and the racers (one clock: the same machine).
    const acked = [
      ...inProcess.flatMap((l) => l.acks),
      ...reports.flatMap((r) => r.written.map(parseAckKey)),
    ];
    const before = acked.filter((a) => a.at < start);
    const later = acked.filter((a) => a.from > end);
    for (const ack of before) {
      const left =
        ack.kind === 'thread'
          ? (await store.getThreadById({ threadId: ack.threadId })) !== null
          : (await store.listMessagesById({ ids: batchIds(ack.threadId) })).length > 0;
      if (left) {
        throw new ConformanceError(
          `a ${ack.kind} of ${show(ack.threadId)} acknowledged before deleteResource started is still stored`,
        );
      }
    }
    for (const ack of later) {
      const whole =
        ack.kind === 'thread'
          ? (await store.getThreadById({ threadId: ack.threadId })) !== null
          : (await store.listMessagesById({ ids: batchIds(ack.threadId) })).length === BATCH;
      if (!whole) {
        throw new ConformanceError(
          `a ${ack.kind} of ${show(ack.threadId)} acknowledged after deleteResource returned is not (wholly) stored`,
        );
      }
    }

    const writers = [
      ...inProcess.map((l, w) => ({ writer: `i${w}`, rounds: l.rounds })),
      ...Array.from({ length: processes }, (_, racer) => ({ writer: `p${racer}`, rounds: ROUNDS })),
    ];
    const threads = new Set(
      (await store.listThreads({ resourceId: victim, perPage: false })).threads.map((t) => t.id),
    );
    let whole = 0;
    for (const { writer, rounds } of writers) {
      const ids = Array.from({ length: rounds }, (_, round) => writerThreadId(victim, writer, round));
      const found = await store.listMessagesById({ ids: ids.flatMap(batchIds) });
      for (const threadId of ids) {
        const mine = found.filter((m) => m.threadId === threadId);
        if (mine.length > 0 && !threads.has(threadId)) {
          throw new ConformanceError(
            `${mine.length} message(s) of ${show(threadId)} are stored without their thread after deleteResource raced their save`,
          );
        }
        if (mine.length !== 0 && mine.length !== BATCH) {
          throw new ConformanceError(
            `half a batch of ${show(threadId)} is stored (${mine.length} of ${BATCH} messages) after deleteResource raced its save`,
          );
        }
        if (mine.length === BATCH) whole++;
      }
    }
    for (const other of neighbours) {
      expectEqual(
        await hooks.again(store, other),
        other,
        `neighbour ${show(other.resourceId)} after deleteResource(${show(victim)}) raced writers`,
      );
    }
    const acks =
      inProcess.reduce((n, l) => n + l.acks.length, 0) + reports.reduce((n, r) => n + r.written.length, 0);
    const refused =
      inProcess.reduce((n, l) => n + l.refused, 0) + reports.reduce((n, r) => n + r.conflicts, 0);
    ctx.log(
      `deleteResource raced ${IN_PROCESS} writers in this process${processes ? ` and ${processes} OS processes` : ''}: ` +
        `${acks} acknowledged writes, ${refused} refused with a MemoryError, ${threads.size} threads left ` +
        `(${whole} whole batches), ${before.length} earlier writes gone, ${later.length} later ones kept`,
    );
    for (const id of [victim, ...neighbours.map((n) => n.resourceId)]) {
      await store.deleteResource?.({ resourceId: id });
    }
  } finally {
    purged = true;
    purgeDone();
    writeFileSync(stop, '');
    await Promise.allSettled([racing, ...logs]);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function threadCount(store: MemoryStorage, resourceId: string): Promise<number> {
  return (await store.listThreads({ resourceId, perPage: 1 })).total;
}
