import { capabilitiesOf } from '@engram/core';
import { Ledger, type Verdict, verify } from './checker.ts';
import { runId } from './services.ts';
import { type Child, sleep, spawnChild } from './spawn.ts';
import { openScene, openStore, type Target } from './targets.ts';
import { completeBatches, schemaMemory } from './workload.ts';

/** Options of `runCrash`. */
export interface CrashOptions {
  target: Target;
  /**
   * The work to do: keep killing and respawning writers until this many were killed while
   * writing and this many writes were acknowledged. The run is bounded by the work done, not by
   * the clock, so a loaded machine takes longer instead of failing.
   */
  until: { kills: number; acks: number };
  /**
   * Fail (with the counts so far) when no count still short of its goal moved for this long: a
   * stalled run, not a slow one. Default 60 s.
   */
  stallMs?: number;
  /** Writer processes alive at once. Default 3. */
  writers?: number;
  /** Longest a writer lives once it is writing, in ms (each lifetime is random below it). Default 2000. */
  maxLifeMs?: number;
  /** Run the writers on `AckBeforeCommitStore` (the meta-test). */
  ackBeforeCommitMs?: number;
}

/** What a crash run did and found. */
export interface CrashResult {
  /** Writers killed while writing (killing one still starting up is not counted). */
  kills: number;
  spawned: number;
  acks: number;
  /** Error codes the writers saw (a killed peer can make a live writer's call fail). */
  errors: Record<string, number>;
  /** Children that exited on their own (they must not). */
  unexpectedExits: string[];
  /** After half-saved, unacknowledged batches (`transactionalBatches: false`) were saved again. */
  verdict: Verdict;
  /** Half-saved, unacknowledged batches found (only where batches are not atomic), then completed. */
  partial: number;
  /** How long a fresh writer's merge took after the last kill. */
  freshMergeMs: number;
}

/**
 * Writer crash: `writers` processes merge disjoint keys into one resource's working memory and
 * save 10-message batches into one thread, reporting each acknowledged write over IPC; the
 * parent SIGKILLs each at a random moment of its life and starts a new one in its place until
 * `until` kills and acknowledged writes happened, then kills the rest. Afterwards it checks every acknowledged write with a
 * fresh store and times a fresh writer's merge (a lock left held would stall it).
 */
export async function runCrash(options: CrashOptions): Promise<CrashResult> {
  const writers = options.writers ?? 3;
  const maxLife = options.maxLifeMs ?? 2_000;
  const id = runId();
  const scene = await openScene(options.target, 'crash', 'crash', id);

  const ledger = new Ledger();
  const errors: Record<string, number> = {};
  const unexpectedExits: string[] = [];
  const slots: Array<Child | undefined> = [];
  const exits: Array<Promise<unknown>> = [];
  const killed = new Set<Child>();
  let spawned = 0;
  let kills = 0;
  let stopping = false;

  const start = (slot: number): void => {
    const writer = `w${slot}g${spawned}`;
    spawned += 1;
    const child = spawnChild(
      options.target,
      { mode: 'crash', writer, scene, ackBeforeCommitMs: options.ackBeforeCommitMs },
      (message) => {
        // Once writing, the writer is killed at a random moment of its life.
        if (message.type === 'ready') setTimeout(() => stopping || kill(child), 50 + Math.random() * maxLife);
        if (message.type === 'ack') ledger.add(message.ack);
        else if (message.type === 'error') errors[message.code] = (errors[message.code] ?? 0) + 1;
      },
    );
    slots[slot] = child;
    const exit = child.exited.then(({ code, signal }) => {
      if (!killed.has(child)) unexpectedExits.push(`${writer} exited with ${signal ?? code}`);
      if (!stopping && slots[slot] === child) start(slot);
    });
    exits.push(exit);
  };
  const kill = (child: Child): void => {
    if (killed.has(child)) return;
    killed.add(child);
    if (child.ready) kills += 1;
    child.process.kill('SIGKILL');
  };

  for (let slot = 0; slot < writers; slot += 1) start(slot);
  const { until } = options;
  const stallMs = options.stallMs ?? 60_000;
  let progress = { kills, acks: ledger.count, at: Date.now() };
  let stalled: string | undefined;
  while (kills < until.kills || ledger.count < until.acks) {
    await sleep(100);
    // Progress is a count that is still short of its goal moving: writers killed while no write
    // is acknowledged any more (a blocked backend) are not progress.
    const killing = progress.kills < until.kills && kills !== progress.kills;
    const acking = progress.acks < until.acks && ledger.count !== progress.acks;
    if (killing || acking) {
      progress = { kills, acks: ledger.count, at: Date.now() };
    } else if (Date.now() - progress.at > stallMs) {
      stalled = `crash run stalled: no progress towards ${until.kills} kills and ${until.acks} acknowledged writes for ${stallMs / 1000} s (${kills}/${until.kills} kills, ${ledger.count}/${until.acks} acks, ${spawned} writers spawned, writer errors ${JSON.stringify(errors)})`;
      break;
    }
  }
  stopping = true;
  for (const child of slots) if (child && !killed.has(child)) kill(child);
  // Exits of killed children may respawn once more before `stopping` is seen; drain until quiet.
  for (let seen = 0; seen < exits.length; seen = exits.length) {
    await Promise.all(exits);
    for (const child of slots) if (child && !killed.has(child)) kill(child);
  }

  if (stalled) throw new Error(stalled);

  const checker = await openStore(options.target);
  try {
    await checker.init();
    // A store without transactional batches (learnt as it opened) may leave half a batch written.
    const allowPartialUnacknowledged = !capabilitiesOf(checker).transactionalBatches;
    let verdict = await verify(checker, ledger, { allowPartialUnacknowledged });
    const partial = verdict.partial.length;
    if (partial > 0) {
      await completeBatches(schemaMemory(checker), scene, verdict.partial);
      verdict = await verify(checker, ledger, { allowPartialUnacknowledged });
    }
    const mergeStart = performance.now();
    await schemaMemory(checker).mergeWorkingMemory({
      resourceId: scene.resourceId,
      workingMemory: { fresh: id },
    });
    const freshMergeMs = performance.now() - mergeStart;
    return { kills, spawned, acks: ledger.count, errors, unexpectedExits, verdict, partial, freshMergeMs };
  } finally {
    await checker.close();
  }
}
