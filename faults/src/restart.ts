import { capabilitiesOf, isMemoryError, type MemoryStorage } from '@engram/core';
import { Ledger, type Verdict, verify } from './checker.ts';
import { runId } from './services.ts';
import { sleep } from './spawn.ts';
import { openStore, type Target } from './targets.ts';
import { completeBatches, type Scene, schemaMemory, writeStep } from './workload.ts';

/** One way to take the backend away and bring it back (the database, the bridge, …). */
export interface Outage {
  name: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** Options of `runRestart`. */
export interface RestartOptions {
  target: Target;
  outages: Outage[];
  /** Store instances writing concurrently (each in its own loop). Default 2. */
  stores?: number;
  /** How long the backend stays down. Default 2500 ms. */
  downMs?: number;
  /** How long a store may take to recover once the backend is back. Default 60 s. */
  recoverMs?: number;
}

/** One call of the load. */
export interface Call {
  store: number;
  start: number;
  end: number;
  /** The error code, or `undefined` when it succeeded; `NOT_A_MEMORY_ERROR` for anything else. */
  code?: string;
  message?: string;
}

/** One outage as it happened. */
export interface OutageReport {
  name: string;
  /** When the backend was down: from the start of `stop` to the end of `start`. */
  from: number;
  to: number;
  /** Calls that started while it was down. */
  calls: Call[];
  /** Time from the end of `start` to each store's first success, in ms. */
  recoveredAfterMs: number[];
}

/** What a restart run did and found. */
export interface RestartResult {
  outages: OutageReport[];
  calls: Call[];
  acks: number;
  /** Checked through the very store instances that lived through the outages. */
  verdict: Verdict;
  /** Checked again through a store opened afterwards (strict: no batch may be half-saved). */
  freshVerdict: Verdict;
  /**
   * Half-saved batches of failed calls found by the first check (only where batches are not
   * atomic: `transactionalBatches: false`); they were saved again before the fresh check.
   */
  partial: number;
}

/**
 * Server restart: `stores` store instances write (working-memory merges and message batches)
 * in loops while each outage stops the backend, keeps it down for `downMs`, and starts it
 * again. Every call is timed and its outcome kept; the run waits for every instance to succeed
 * again after each restart (the same instances, never recreated) and checks every acknowledged
 * write at the end.
 */
export async function runRestart(options: RestartOptions): Promise<RestartResult> {
  const count = options.stores ?? 2;
  const downMs = options.downMs ?? 2_500;
  const recoverMs = options.recoverMs ?? 60_000;
  const id = runId();
  const scene: Scene = { resourceId: `restart-r-${id}`, threadId: `restart-t-${id}` };
  const stores: MemoryStorage[] = [];
  for (let i = 0; i < count; i += 1) stores.push(await openStore(options.target));
  await stores[0]?.init();
  const now = new Date();
  await stores[0]?.saveThread({
    id: scene.threadId,
    resourceId: scene.resourceId,
    title: 'restart',
    metadata: {},
    createdAt: now,
    updatedAt: now,
  });

  const ledger = new Ledger();
  const calls: Call[] = [];
  let running = true;
  const loops = stores.map(async (store, i) => {
    await store.init();
    const memory = schemaMemory(store);
    for (let n = 0; running; n += 1) {
      const call: Call = { store: i, start: Date.now(), end: 0 };
      try {
        ledger.add(await writeStep(memory, scene, `s${i}`, n));
      } catch (error) {
        call.code = isMemoryError(error) ? error.code : 'NOT_A_MEMORY_ERROR';
        call.message = error instanceof Error ? error.message : String(error);
        await sleep(50);
      }
      call.end = Date.now();
      calls.push(call);
    }
  });

  const successesSince = (store: number, since: number) =>
    calls.filter((c) => c.store === store && c.start >= since && c.code === undefined);
  const waitForSuccess = async (since: number, label: string, needed: number): Promise<number[]> => {
    const deadline = Date.now() + recoverMs;
    const first: number[] = [];
    for (let i = 0; i < count; i += 1) {
      for (;;) {
        const ok = successesSince(i, since);
        if (ok.length >= needed) {
          first.push((ok[0]?.end ?? since) - since);
          break;
        }
        if (Date.now() > deadline)
          throw new Error(`store ${i} did not succeed within ${recoverMs} ms ${label}`);
        await sleep(50);
      }
    }
    return first;
  };

  const reports: OutageReport[] = [];
  try {
    await waitForSuccess(0, 'before the first outage', 10);
    for (const outage of options.outages) {
      const from = Date.now();
      await outage.stop();
      await sleep(downMs);
      await outage.start();
      const to = Date.now();
      const recoveredAfterMs = await waitForSuccess(to, `after ${outage.name} came back`, 5);
      reports.push({
        name: outage.name,
        from,
        to,
        calls: calls.filter((c) => c.start >= from && c.start < to),
        recoveredAfterMs,
      });
    }
  } finally {
    running = false;
    await Promise.all(loops);
  }

  try {
    const same = stores[0] as MemoryStorage;
    const allowPartialUnacknowledged = !capabilitiesOf(same).transactionalBatches;
    let verdict = await verify(same, ledger, { allowPartialUnacknowledged });
    const partial = verdict.partial.length;
    if (partial > 0) {
      await completeBatches(schemaMemory(same), scene, verdict.partial);
      verdict = await verify(same, ledger, { allowPartialUnacknowledged });
    }
    const fresh = await openStore(options.target);
    try {
      const freshVerdict = await verify(fresh, ledger);
      return { outages: reports, calls, acks: ledger.count, verdict, freshVerdict, partial };
    } finally {
      await fresh.close();
    }
  } finally {
    for (const store of stores) await store.close();
  }
}
