import { capabilitiesOf, type MemoryStorage, type Thread } from '@engram/core';
import { racers } from '../areas/concurrency.ts';
import { ConformanceError, expectTrue } from '../assert.ts';
import { defineArea } from '../define.ts';
import { message, thread } from '../fixtures.ts';
import type { CheckContext } from '../types.ts';
import { raceSeparately } from './separate.ts';

/**
 * The `updatedAt` rule: a thread's stored `updatedAt` never decreases, and is never older than
 * the `createdAt` of any message a write stored in the thread (a message dated in the future
 * carries it forward to that date). Checked under racing saves and, step by step, in one process.
 */

const check = defineArea('concurrency');

/** Saves per racer in the racing-saves check (each one message, dated as it is saved). */
export const STAMPED_SAVES_PER_RACER = 25;

const DAY = 86_400_000;

/** Reads the thread, or fails naming the step. */
async function updatedAtOf(store: MemoryStorage, threadId: string, step: string): Promise<number> {
  const read = await store.getThreadById({ threadId });
  if (!read) throw new ConformanceError(`the thread is missing after ${step}`);
  return read.updatedAt.getTime();
}

/** The newest `createdAt` among the thread's messages (-Infinity when it has none). */
async function newestMessage(store: MemoryStorage, threadId: string): Promise<number> {
  const { messages } = await store.listMessages({ threadId, perPage: false });
  return Math.max(-Infinity, ...messages.map((m) => m.createdAt.getTime()));
}

const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

/** Racing saves into one thread while this process reads its `updatedAt` over and over. */
async function racingSaves(ctx: CheckContext): Promise<void> {
  const store = await ctx.store();
  const resourceId = ctx.id('stamp-r');
  const t: Thread = thread(ctx.id('stamp-t'), resourceId);
  await store.saveThread(t);
  let done = false;
  const racing = raceSeparately(ctx, store, {
    kind: 'save-now',
    threadId: t.id,
    resourceId,
    ops: STAMPED_SAVES_PER_RACER,
  }).finally(() => {
    done = true;
  });
  // Awaited after the reads; a racer failing meanwhile must not be an unhandled rejection.
  racing.catch(() => undefined);
  // Reads until every racer has finished its fixed number of saves, then once more.
  const seen: number[] = [];
  while (!done) {
    seen.push(await updatedAtOf(store, t.id, 'a save'));
    // A breath between reads, so the reader does not crowd out the writers' locks.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const { reports, how } = await racing;
  const final = await updatedAtOf(store, t.id, 'the saves');
  seen.push(final);

  let highest = -Infinity;
  let backwards = 0;
  let worst = 0;
  for (const value of seen) {
    if (value < highest) {
      backwards++;
      worst = Math.max(worst, highest - value);
    }
    highest = Math.max(highest, value);
  }
  const failures = reports.flatMap((r) => r.failures);
  const written = reports.reduce((sum, r) => sum + r.written.length, 0);
  const { total } = await store.listMessages({ threadId: t.id, perPage: 0 });
  const newest = await newestMessage(store, t.id);
  ctx.log(
    `updatedAt under racing saves: ${how}, ${written} saves acknowledged, ${total} messages stored; ` +
      `${seen.length} reads, ${backwards} went backwards (by up to ${worst} ms); ` +
      `final updatedAt ${final - newest} ms after the newest message`,
  );
  if (failures.length) {
    throw new ConformanceError(`${failures.length} saves failed, e.g. ${failures.slice(0, 3).join('; ')}`);
  }
  expectTrue(
    written === racers(ctx.init) * STAMPED_SAVES_PER_RACER && total === written,
    `${written} of ${racers(ctx.init) * STAMPED_SAVES_PER_RACER} saves acknowledged, ${total} messages stored`,
  );
  expectTrue(
    backwards === 0,
    `thread.updatedAt went backwards ${backwards} times in ${seen.length} reads (by up to ${worst} ms; ${how})`,
  );
  expectTrue(
    final >= newest,
    `the final thread.updatedAt ${iso(final)} is older than its newest message (${iso(newest)}; ${how})`,
  );
}

/** Each kind of write, one after another: none moves `updatedAt` back or below a message's date. */
async function stepByStep(ctx: CheckContext): Promise<void> {
  const store = await ctx.store();
  const now = Date.now();
  const resourceId = ctx.id('stamp-r');
  const t = thread(ctx.id('stamp-t'), resourceId, { updatedAt: new Date(now + DAY) });
  await store.saveThread(t);
  let previous = t.updatedAt.getTime();
  const expectKept = async (step: string) => {
    const value = await updatedAtOf(store, t.id, step);
    const newest = await newestMessage(store, t.id);
    expectTrue(
      value >= previous,
      `after ${step}, thread.updatedAt ${iso(value)} is older than before (${iso(previous)})`,
    );
    expectTrue(
      value >= newest,
      `after ${step}, thread.updatedAt ${iso(value)} is older than its newest message (${iso(newest)})`,
    );
    previous = value;
  };
  const old = message(ctx.id('old'), t, new Date(now - DAY));
  await store.saveMessages([old]);
  await expectKept('saving a message dated before the stored updatedAt');
  const future = message(ctx.id('future'), t, new Date(now + 2 * DAY));
  await store.saveMessages([future]);
  await expectKept('saving a message dated after the stored updatedAt');
  await store.updateThread({ id: t.id, title: 'renamed' });
  await expectKept('updateThread');
  await store.updateThread({ id: t.id, metadata: { workingMemory: 'memory' } });
  await expectKept('updateThread of metadata.workingMemory');
  if (capabilitiesOf(store).atomicWorkingMemory && store.updateWorkingMemoryAtomically) {
    await store.updateWorkingMemoryAtomically({ scope: 'thread', threadId: t.id, update: () => 'atomic' });
    await expectKept('updateWorkingMemoryAtomically (thread scope)');
  }
  await store.updateMessages([{ id: future.id, createdAt: new Date(now + 3 * DAY) }]);
  await expectKept('updateMessages dating a message later still');
  await store.deleteMessages([future.id]);
  await expectKept('deleteMessages of the newest message');
  const other = thread(ctx.id('stamp-t2'), resourceId);
  await store.saveThread(other);
  await store.saveMessages([{ ...old, threadId: other.id }]);
  await expectKept('saveMessages moving a message out to another thread');
}

/** The `updatedAt` checks, registered in the concurrency area. */
export const updatedAtChecks = [
  check(
    (init) =>
      `thread.updatedAt never goes backwards and ends no older than the newest message under racing saves (${racers(init)} racers × ${STAMPED_SAVES_PER_RACER} saves)`,
    racingSaves,
  ),
  check(
    'thread.updatedAt never moves back (an earlier-dated write keeps it) and follows a message dated in the future',
    stepByStep,
  ),
];
