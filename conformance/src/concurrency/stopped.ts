import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { capabilitiesOf, type MemoryStorage } from '@engram/core';
import { ConformanceError } from '../assert.ts';
import { thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import type { CheckContext, ConformanceInit } from '../types.ts';
import { raceProcesses } from './harness.ts';
import { mergeOf, parseObject, type RacerReport } from './tasks.ts';

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
      { kind: 'merge-until-stopped', threadId: t.id, resourceId: t.resourceId, chains: CHAINS, ...files },
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
      await sleep(pause);
      process.kill(pid, 'SIGCONT');
      // The others go on a little: the resumed writer's first writes meet theirs.
      await sleep(BETWEEN_MS);
      rmSync(files.window, { force: true });
    }
    writeFileSync(files.stop, '');
    const reports = await running;
    const keys = await storedKeys(store, t.id, t.resourceId);
    const others = reports.slice(1).reduce((sum, r) => sum + r.written.length, 0);
    const how =
      `${racers} OS processes, one stopped ${STOPS}× for ${pause} ms while merging ` +
      `(${reports[0]?.written.length ?? 0} merges by it, ${others} by the others)`;
    tally(reports, how, (key) => keys[mergeOf(key)]?.has(key) ?? false);
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
