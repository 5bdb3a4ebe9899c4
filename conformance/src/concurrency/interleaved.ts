import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { capabilitiesOf, type MemoryStorage } from '@engram/core';
import { ConformanceError, expectTrue } from '../assert.ts';
import { thread } from '../fixtures.ts';
import { requireAtomic, skipCheck } from '../skip.ts';
import type { CheckContext } from '../types.ts';
import { raceProcesses } from './harness.ts';
import { waitForFileSync } from './signal.ts';

/**
 * How long the update function waits for the other process's write. A store that holds a lock
 * across the update keeps that write out: the wait runs out, the update commits, and the write
 * lands after it (or fails), which is just as correct.
 */
const WAIT_MS = 1_500;
const BEFORE = 'before';
const REPLACED = 'replaced by another process';
const merged = (current: string | null) => `${current} + merged`;

/**
 * Another process replaces the working memory (`updateThread` metadata / `updateResource`)
 * after an atomic update read it and before the update writes: the replace must not be
 * overwritten by a value computed from what was there before it. A compare-and-set store
 * whose plain writes do not change what it compares (a version `updateThread` forgot to bump)
 * fails here; a locking store keeps the replace out until its update commits.
 */
export async function interleavedReplace(
  ctx: CheckContext,
  scope: 'thread' | 'resource',
  needsWorker: string,
): Promise<void> {
  const store = await ctx.store();
  const atomic = requireAtomic(store);
  if (capabilitiesOf(store).processLocal) {
    skipCheck('the store is processLocal: no other process can write inside its updates');
  }
  if (!ctx.init.worker) throw new ConformanceError(needsWorker);
  const id = await seed(ctx, store, scope);
  const dir = mkdtempSync(join(tmpdir(), 'engram-interleave-'));
  const files = { ready: join(dir, 'ready'), trigger: join(dir, 'trigger'), done: join(dir, 'done') };
  try {
    const other = raceProcesses(
      ctx.init.worker,
      { kind: 'replace-on-signal', scope, id, value: REPLACED, ...files },
      1,
    );
    await waitForReady(files.ready, other);
    const seen: (string | null)[] = [];
    const update = (current: string | null) => {
      seen.push(current);
      if (seen.length === 1) {
        writeFileSync(files.trigger, '');
        waitForFileSync(files.done, WAIT_MS);
      }
      return merged(current);
    };
    const result = await atomic(
      scope === 'thread' ? { scope, threadId: id, update } : { scope, resourceId: id, update },
    );
    const [report] = await other;
    const stored = await read(store, scope, id);
    const outcome = readFileSync(files.done, 'utf8');
    ctx.log(
      `${scope} memory: the other process's replace ${outcome}; the update ran ${seen.length}× ` +
        `(saw ${seen.map((s) => JSON.stringify(s)).join(', ')}); stored ${JSON.stringify(stored)}`,
    );
    if (report?.written.length === 1) {
      expectTrue(
        stored === REPLACED || stored === merged(REPLACED),
        `${scope} working memory: a replace by another process, acknowledged, was overwritten by an ` +
          `atomic update computed from the value before it (stored ${JSON.stringify(stored)}, expected ` +
          `${JSON.stringify(REPLACED)} or ${JSON.stringify(merged(REPLACED))})`,
      );
      if (stored === merged(REPLACED)) {
        expectTrue(result === stored, `the update returned ${JSON.stringify(result)}, not what it stored`);
      }
    } else {
      // The replace failed (e.g. it timed out on the update's lock): only the update may show.
      expectTrue(
        stored === merged(BEFORE),
        `${scope} working memory: the replace failed, yet stored is ${JSON.stringify(stored)}, ` +
          `not ${JSON.stringify(merged(BEFORE))}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function seed(ctx: CheckContext, store: MemoryStorage, scope: 'thread' | 'resource'): Promise<string> {
  if (scope === 'resource') {
    const resourceId = ctx.id('interleave-r');
    await store.updateResource({ resourceId, workingMemory: BEFORE });
    return resourceId;
  }
  const t = thread(ctx.id('interleave-t'), ctx.id('interleave-r'), { metadata: { workingMemory: BEFORE } });
  await store.saveThread(t);
  return t.id;
}

async function read(store: MemoryStorage, scope: 'thread' | 'resource', id: string): Promise<unknown> {
  if (scope === 'resource') return (await store.getResourceById({ resourceId: id }))?.workingMemory;
  return (await store.getThreadById({ threadId: id }))?.metadata.workingMemory;
}

/** Waits until the other process is waiting for its trigger (or has failed before that). */
async function waitForReady(ready: string, other: Promise<unknown>): Promise<void> {
  let failed: unknown;
  let settled = false;
  other.then(
    () => {
      settled = true;
    },
    (error: unknown) => {
      settled = true;
      failed = error;
    },
  );
  const deadline = Date.now() + 90_000;
  while (!existsSync(ready)) {
    if (failed !== undefined) throw failed;
    if (settled) throw new ConformanceError('the other process finished without waiting for its trigger');
    if (Date.now() > deadline) throw new ConformanceError('the other process did not start within 90 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
