import { expectObservedOrInTail, observedIds, observingMemory } from '@engram/conformance';
import { runId } from './services.ts';
import { type Child, sleep, spawnChild } from './spawn.ts';
import { openScene, openStore, type Target } from './targets.ts';

/** Options of `runObserveCrash`. */
export interface ObserveCrashOptions {
  target: Target;
  /** Keep killing writers until this many were killed mid-turn and this many messages were acknowledged. */
  until: { kills: number; saved: number };
  /** Writer processes alive at once. Default 3. */
  writers?: number;
  /** Longest a writer lives once it is writing, in ms. Default 1500. */
  maxLifeMs?: number;
  /** Fail when no count short of its goal moved for this long. Default 60 s. */
  stallMs?: number;
}

/** What an observation crash run did and found. */
export interface ObserveCrashResult {
  kills: number;
  spawned: number;
  saved: number;
  errors: Record<string, number>;
  /** Acknowledged messages missing from storage afterwards (must be none). */
  missing: string[];
  /** The invariant after the kills, before any further turn (`null` when it held). */
  invariantAfterKills: string | null;
  /** The invariant after one more turn and its background work (`null` when it held). */
  invariantAfterTurn: string | null;
  /** Messages covered by the log at the end. */
  observed: number;
}

/**
 * Writers run turns of observational memory on one thread (thread scope, a slow mock Observer,
 * tiny thresholds, background buffering) while the parent SIGKILLs each at a random moment —
 * inside a save, a buffering Observer call, a chunk swap or an activation — and starts another.
 * Afterwards a fresh process checks that every acknowledged message is stored and that each is
 * observed or in the raw tail (none lost, none observed twice), then runs one more turn and
 * checks again: a kill never leaves a state the next turn cannot complete.
 */
export async function runObserveCrash(options: ObserveCrashOptions): Promise<ObserveCrashResult> {
  const writers = options.writers ?? 3;
  const maxLife = options.maxLifeMs ?? 1_500;
  const stallMs = options.stallMs ?? 60_000;
  const scene = await openScene(options.target, 'observe', 'observe', runId());
  const saved = new Set<string>();
  const errors: Record<string, number> = {};
  const killed = new Set<Child>();
  const slots: Array<Child | undefined> = [];
  const exits: Array<Promise<unknown>> = [];
  let spawned = 0;
  let kills = 0;
  let stopping = false;

  const kill = (child: Child): void => {
    if (killed.has(child)) return;
    killed.add(child);
    if (child.ready) kills += 1;
    child.process.kill('SIGKILL');
  };
  const start = (slot: number): void => {
    const writer = `w${slot}g${spawned}`;
    spawned += 1;
    const child = spawnChild(options.target, { mode: 'observe', writer, scene }, (message) => {
      if (message.type === 'ready') setTimeout(() => stopping || kill(child), 100 + Math.random() * maxLife);
      else if (message.type === 'saved') saved.add(message.id);
      else if (message.type === 'error') errors[message.code] = (errors[message.code] ?? 0) + 1;
    });
    slots[slot] = child;
    exits.push(
      child.exited.then(() => {
        if (!stopping && slots[slot] === child) start(slot);
      }),
    );
  };

  for (let slot = 0; slot < writers; slot += 1) start(slot);
  let progress = { kills, saved: saved.size, at: Date.now() };
  while (kills < options.until.kills || saved.size < options.until.saved) {
    await sleep(100);
    if (kills !== progress.kills || saved.size !== progress.saved) {
      progress = { kills, saved: saved.size, at: Date.now() };
    } else if (Date.now() - progress.at > stallMs) {
      stopping = true;
      for (const child of slots) if (child) kill(child);
      throw new Error(
        `observation crash run stalled for ${stallMs / 1000} s (${kills} kills, ${saved.size} saved, errors ${JSON.stringify(errors)})`,
      );
    }
  }
  stopping = true;
  for (let seen = 0; seen < exits.length; seen = exits.length) {
    for (const child of slots) if (child) kill(child);
    await Promise.all(exits);
  }

  const store = await openStore(options.target);
  try {
    await store.init();
    const memory = observingMemory(store, 'thread');
    const stored = await store.listMessagesById({ ids: [...saved] });
    const found = new Set(stored.map((m) => m.id));
    const missing = [...saved].filter((id) => !found.has(id));
    const check = () =>
      expectObservedOrInTail(memory, scene).then(
        () => null,
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
    const invariantAfterKills = await check();
    await memory.observations?.prepare(scene);
    await memory.observations?.idle();
    const invariantAfterTurn = await check();
    const snapshot = await memory.observations?.inspect(scene);
    const observed = snapshot ? observedIds(snapshot.state).length : 0;
    return {
      kills,
      spawned,
      saved: saved.size,
      errors,
      missing,
      invariantAfterKills,
      invariantAfterTurn,
      observed,
    };
  } finally {
    await store.close();
  }
}
