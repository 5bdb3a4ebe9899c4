import { setTimeout as sleep } from 'node:timers/promises';
import type { MemoryStorage } from '@engram/core';
import { ConformanceError } from './assert.ts';
import { thread } from './fixtures.ts';

/** Rounds of a race of domain writes against `deleteThread` (or `deleteResource`). */
export const DELETE_RACE_ROUNDS = 20;

/** A race of writes into one thread against `deleteThread` of it, or `deleteResource` of its resource. */
export interface DeleteRace {
  /** The store that saves and deletes the threads. */
  store: MemoryStorage;
  resourceId: string;
  /** A fresh thread id per round. */
  threadId: () => string;
  /**
   * Whether each round erases the thread's resource (`deleteResource`, which the store must
   * have) rather than deleting the thread.
   */
  erase?: boolean;
  /**
   * The writes of one round into thread `threadId`, run one after another (from another store
   * instance): each resolves `true` when it wrote, `false` when it lost (the round's writes stop),
   * or rejects `NOT_FOUND` when the thread is gone (they stop too).
   */
  writes: (threadId: string) => (() => Promise<boolean>)[];
  /** Whether anything the writes wrote for the thread is still stored after the round. */
  left: (threadId: string) => Promise<boolean>;
  /** What is left behind, for the failure ("turn rows", "a log"). */
  what: string;
}

/**
 * Runs `DELETE_RACE_ROUNDS` rounds: a thread is saved, its writes start 0–18 ms in and the delete
 * at 10 ms, so either may come first, or both at once. Fails when a write that started after the
 * delete returned succeeded (a reply may arrive after the delete's although the write came first:
 * only the start is compared), or when a round left something of the deleted thread. Returns how
 * many writes returned before the delete did.
 */
export async function raceDelete(race: DeleteRace): Promise<number> {
  const { store, resourceId } = race;
  const erase = race.erase ? store.deleteResource?.bind(store) : undefined;
  if (race.erase && !erase) throw new ConformanceError(`${store.name} has no deleteResource to race`);
  const deletion = erase ? 'deleteResource of its resource' : 'deleteThread of its thread';
  let orphaned = 0;
  let first = 0;
  for (let round = 0; round < DELETE_RACE_ROUNDS; round++) {
    const t = race.threadId();
    await store.saveThread(thread(t, resourceId));
    let deletedAt = 0;
    const landed: { start: number; end: number }[] = [];
    await Promise.all([
      sleep((round % 10) * 2).then(async () => {
        for (const write of race.writes(t)) {
          const start = performance.now();
          try {
            if (!(await write())) return;
          } catch (error) {
            if ((error as { code?: unknown }).code !== 'NOT_FOUND') throw error;
            return;
          }
          landed.push({ start, end: performance.now() });
        }
      }),
      sleep(10).then(async () => {
        await (erase ? erase({ resourceId }) : store.deleteThread({ threadId: t }));
        deletedAt = performance.now();
      }),
    ]);
    first += landed.filter((write) => write.end < deletedAt).length;
    if (landed.some((write) => write.start > deletedAt)) {
      throw new ConformanceError(`round ${round}: a write started after ${deletion} had returned succeeded`);
    }
    if (await race.left(t)) orphaned++;
  }
  if (orphaned > 0) {
    throw new ConformanceError(
      `${orphaned} of ${DELETE_RACE_ROUNDS} rounds left ${race.what} written while ${deletion} ran (what is written for a thread must go with it, or be refused NOT_FOUND)`,
    );
  }
  return first;
}
