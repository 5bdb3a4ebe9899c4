import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { capabilitiesOf, type MemoryStorage } from '@engram/core';
import { ConformanceError } from '../assert.ts';
import { at, thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import type { CheckContext, ConformanceInit } from '../types.ts';
import { raceProcesses } from './harness.ts';
import { MESSAGE_CONTENT, mergeOf, parseObject, type RacerReport, type STOPPED_MERGES } from './tasks.ts';

/** How many times the stopped racer is stopped in one check. */
export const STOPS = 5;
/** Parallel merge loops per racer: enough that the stopped one almost always holds a lock. */
const CHAINS = 6;
/** How long racer 0 writes alone before each stop, and the others go on after it resumed. */
const BETWEEN_MS = 250;
/** How long to wait for every racer's first acknowledged merge. */
const READY_MS = 60_000;

/** How long one stop lasts: twice the declared lease, at least 1 s. */
export function stopMs(init: ConformanceInit): number {
  return Math.max(1_000, 2 * (init.leaseMs ?? 0));
}

/** What `tally` of the concurrency area does with the reports. */
export type Tally = (reports: RacerReport[], how: string, present: (key: string) => boolean) => void;

/**
 * One racing process merges into one thread and one resource in parallel loops, so that it
 * almost always holds whatever the store locks or leases, and is stopped with SIGSTOP `STOPS`
 * times, each time for longer than any lease. Only while it stands still do the other racers
 * merge too; then it is resumed with SIGCONT. A store whose lock is a lease that fences nothing
 * lets the resumed process write what it computed before the stop over what the others wrote
 * meanwhile; every acknowledged merge, of every racer, must survive. A store that blocks the
 * others until the stopped process resumes (a row lock held by the server) passes too; their
 * waits may end in `CONFLICT`.
 *
 * The stopped process also patches the content of one message (of a thread of its own, whose
 * lock the patches hold nearly all the time), in a loop of its own; during each stop
 * this process patches its type (`stop-<n>`), which no racer writes. A resumed patch that writes
 * back the whole message it read before the stop (a read-modify-write without a fence or a
 * compare-and-set) puts the older type back: the type must still be `stop-<n>` a moment after
 * the resume, and the content one the stopped process was told it wrote.
 */
export async function stoppedWriter(ctx: CheckContext, racers: number, tally: Tally): Promise<void> {
  const store = await ctx.store();
  if (capabilitiesOf(store).processLocal) {
    skipCheck('the store is processLocal: no other process can write inside its updates');
  }
  if (!ctx.init.worker) skipCheck('no `worker` supplied, so no writer process can be stopped');
  const t = thread(ctx.id('stop-t'), ctx.id('stop-r'));
  await store.saveThread(t);
  await store.updateResource({ resourceId: t.resourceId, metadata: {} });
  const messageId = ctx.id('stop-m');
  const messageThread = thread(ctx.id('stop-mt'), t.resourceId);
  await store.saveThread(messageThread);
  await store.saveMessages([
    {
      id: messageId,
      threadId: messageThread.id,
      resourceId: t.resourceId,
      role: 'user',
      content: 'initial',
      type: 'text',
      createdAt: at(0),
    },
  ]);
  /** Stops whose type patch was acknowledged, and so checked after the resume. */
  let patched = 0;
  const dir = mkdtempSync(join(tmpdir(), 'engram-stopped-'));
  const files = { ready: join(dir, 'ready'), window: join(dir, 'window'), stop: join(dir, 'stop') };
  const pause = stopMs(ctx.init);
  let pid: number | undefined;
  const reap = () => {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  try {
    const running = raceProcesses(
      ctx.init.worker,
      {
        kind: 'merge-until-stopped',
        threadId: t.id,
        resourceId: t.resourceId,
        messageId,
        chains: CHAINS,
        ...files,
      },
      racers,
    );
    pid = await waitForPid(files.ready, running);
    // Should this process exit mid-check (a killed test run), the racer must not stay stopped
    // with its locks and connections held: it is killed on the way out.
    process.on('exit', reap);
    for (let n = 0; n < STOPS; n++) {
      await sleep(BETWEEN_MS);
      process.kill(pid, 'SIGSTOP');
      writeFileSync(files.window, '');
      // Waits for the stopped process where its lock is held by the server: awaited after the resume.
      const type = `stop-${n}`;
      const patch = settled(store.updateMessages([{ id: messageId, type }]));
      await sleep(pause);
      process.kill(pid, 'SIGCONT');
      // The others go on a little: the resumed writer's first writes meet theirs.
      await sleep(BETWEEN_MS);
      rmSync(files.window, { force: true });
      const outcome = await patch;
      if (outcome.failed) {
        // A lock wait that gave up is allowed; the type is then not checked.
        if ((outcome.failed as { code?: unknown } | null)?.code === 'CONFLICT') continue;
        throw outcome.failed;
      }
      patched++;
      const [stored] = await store.listMessagesById({ ids: [messageId] });
      if (stored?.type !== type) {
        throw new ConformanceError(
          `the message's type, patched to ${type} during stop ${n + 1} (acknowledged), is ${JSON.stringify(stored?.type)} ` +
            'after the resume: the resumed writer wrote back the message it had read before the stop',
        );
      }
    }
    writeFileSync(files.stop, '');
    const all = await running;
    const isPatch = (key: string) => mergeOf(key) === MESSAGE_CONTENT;
    const patches = new Set(all.flatMap((r) => r.written.filter(isPatch)));
    const [message] = await store.listMessagesById({ ids: [messageId] });
    if (patches.size > 0 && !patches.has(String(message?.content))) {
      throw new ConformanceError(
        `the message's content is ${JSON.stringify(message?.content)}, which no acknowledged patch of the stopped writer gave it`,
      );
    }
    const reports = all.map((r) => ({ ...r, written: r.written.filter((key) => !isPatch(key)) }));
    const keys = await storedKeys(store, t.id, t.resourceId);
    const others = reports.slice(1).reduce((sum, r) => sum + r.written.length, 0);
    const how =
      `${racers} OS processes, one stopped ${STOPS}× for ${pause} ms while merging and patching a message ` +
      `(${reports[0]?.written.length ?? 0} merges and ${patches.size} patches by it, ${others} merges by the others; ` +
      `the message's type kept after ${patched} of ${STOPS} stops)`;
    tally(reports, how, (key) => keys[mergeOf(key) as (typeof STOPPED_MERGES)[number]]?.has(key) ?? false);
  } finally {
    process.off('exit', reap);
    if (pid !== undefined) process.kill(pid, 'SIGCONT');
    writeFileSync(files.stop, '');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function storedKeys(
  store: MemoryStorage,
  threadId: string,
  resourceId: string,
): Promise<Record<string, Set<string>>> {
  const saved = await store.getThreadById({ threadId });
  const resource = await store.getResourceById({ resourceId });
  return {
    'thread-metadata': new Set(Object.keys(saved?.metadata ?? {})),
    'resource-metadata': new Set(Object.keys(resource?.metadata ?? {})),
    'thread-memory': new Set(Object.keys(parseObject(saved?.metadata.workingMemory))),
    'resource-memory': new Set(Object.keys(parseObject(resource?.workingMemory))),
  };
}

/** `write`'s outcome, never rejected: it is awaited only after a stop, so it must not fail unhandled meanwhile. */
function settled(write: Promise<unknown>): Promise<{ failed?: unknown }> {
  return write.then(
    () => ({}),
    (failed: unknown) => ({ failed: failed ?? new Error('rejected without a reason') }),
  );
}

/** The pid of racer 0, once it has had a merge acknowledged (or a racer has failed). */
async function waitForPid(ready: string, running: Promise<unknown>): Promise<number> {
  let failed: unknown;
  let settled = false;
  running.then(
    () => {
      settled = true;
    },
    (error: unknown) => {
      settled = true;
      failed = error;
    },
  );
  const deadline = Date.now() + READY_MS;
  while (!existsSync(ready)) {
    if (failed !== undefined) throw failed;
    if (settled) throw new ConformanceError('the racers finished before the first merge was acknowledged');
    if (Date.now() > deadline) {
      throw new ConformanceError(
        `no merge of the racer to stop was acknowledged within ${READY_MS / 1000} s`,
      );
    }
    await sleep(10);
  }
  const pid = Number(readFileSync(ready, 'utf8'));
  // Never 0 or 1: kill(0) would stop this process's own group.
  if (!Number.isSafeInteger(pid) || pid <= 1)
    throw new ConformanceError(`the racer reported no valid pid (${pid})`);
  return pid;
}
