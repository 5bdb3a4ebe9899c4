import { Ledger, type Verdict, verify } from './checker.ts';
import { runId } from './services.ts';
import { spawnChild } from './spawn.ts';
import { openStore, type Target } from './targets.ts';
import type { Scene } from './workload.ts';

/** Options of `runSoak`. */
export interface SoakOptions {
  target: Target;
  seconds: number;
  /** Processes running at once. Default 4. */
  processes?: number;
}

/** What a soak run did and found. */
export interface SoakResult {
  processes: number;
  /** Operations the processes completed (reads and writes). */
  operations: number;
  acks: number;
  /** Distinct acknowledged facts (a batch saved and then deleted counts once). */
  facts: number;
  /** Invariants the processes checked while running plus those the final check did. */
  invariants: number;
  /** Broken invariants, from the processes and from the final check. */
  violations: string[];
  errors: Record<string, number>;
  verdict: Verdict;
  /** Processes that did not finish cleanly. */
  failedProcesses: string[];
}

/**
 * Soak: `processes` child processes each own a resource and a thread and share one more
 * resource; for `seconds` they run a random mix of writes and checking reads (see
 * `soak-worker.ts`). At the end every acknowledged write is checked, each thread's contents
 * must be exactly its acknowledged, not-deleted batches in order, every message must carry its
 * thread's resource, and each resource must list exactly its own thread.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const count = options.processes ?? 4;
  const id = runId();
  const shared: Scene = { resourceId: `soak-shared-${id}`, threadId: `soak-shared-t-${id}` };
  const scenes: Scene[] = Array.from({ length: count }, (_, i) => ({
    resourceId: `soak-r${i}-${id}`,
    threadId: `soak-t${i}-${id}`,
  }));
  const store = await openStore(options.target);
  await store.init();
  const now = new Date();
  for (const scene of scenes) {
    await store.saveThread({
      id: scene.threadId,
      resourceId: scene.resourceId,
      title: 'soak',
      metadata: {},
      createdAt: now,
      updatedAt: now,
    });
  }

  const ledger = new Ledger();
  const errors: Record<string, number> = {};
  const violations: string[] = [];
  const failedProcesses: string[] = [];
  let operations = 0;
  let invariants = 0;
  const children = scenes.map((own, i) => {
    const writer = `p${i}`;
    let done = false;
    const child = spawnChild(
      options.target,
      {
        mode: 'soak',
        writer,
        seconds: options.seconds,
        own,
        shared,
        others: scenes.filter((s) => s !== own),
      },
      (message) => {
        if (message.type === 'ack') ledger.add(message.ack);
        else if (message.type === 'error') errors[message.code] = (errors[message.code] ?? 0) + 1;
        else if (message.type === 'done') {
          done = true;
          operations += message.operations;
          invariants += message.invariants;
          violations.push(...message.violations);
        }
      },
    );
    return child.exited.then(({ code, signal }) => {
      if (!done || code !== 0)
        failedProcesses.push(`${writer} exited with ${signal ?? code} (done: ${done})`);
    });
  });
  await Promise.all(children);

  try {
    const owners = new Map(scenes.map((s) => [s.threadId, s.resourceId]));
    const exact = Object.keys(errors).length === 0;
    const verdict = await verify(store, ledger, { exact, owners });
    for (const scene of scenes) {
      const threads = await store.listThreads({ resourceId: scene.resourceId, perPage: false });
      verdict.invariants += 1;
      if (threads.total !== 1 || threads.threads[0]?.id !== scene.threadId) {
        verdict.problems.push(
          `resource ${scene.resourceId} lists ${threads.threads.map((t) => t.id).join(',')}`,
        );
      }
    }
    return {
      processes: count,
      operations,
      acks: ledger.count,
      facts: ledger.facts(),
      invariants: invariants + verdict.invariants,
      violations: [...violations, ...verdict.problems],
      errors,
      verdict,
      failedProcesses,
    };
  } finally {
    await store.close();
  }
}
