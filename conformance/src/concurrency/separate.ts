import { capabilitiesOf, type MemoryStorage } from '@engram/core';
import { racers } from '../areas/concurrency.ts';
import { ConformanceError, expectEqual } from '../assert.ts';
import type { CheckContext } from '../types.ts';
import { raceProcesses } from './harness.ts';
import { type RacerReport, type RaceTask, runRacer } from './tasks.ts';

/**
 * Runs `task` with every racer at once, each with a store of its own: OS processes when a
 * worker is supplied, else separate store instances in this process (one shared instance when
 * the store is process-local, since separate instances would not share data).
 */
export async function raceSeparately(
  ctx: CheckContext,
  store: MemoryStorage,
  task: RaceTask,
): Promise<{ reports: RacerReport[]; how: string }> {
  const n = racers(ctx.init);
  if (ctx.init.worker && !capabilitiesOf(store).processLocal) {
    return { reports: await raceProcesses(ctx.init.worker, task, n), how: `${n} OS processes` };
  }
  const stores = capabilitiesOf(store).processLocal
    ? Array.from({ length: n }, () => store)
    : [store, ...(await Promise.all(Array.from({ length: n - 1 }, () => ctx.store())))];
  const reports = await Promise.all(stores.map((s, racer) => runRacer(s, task, racer)));
  const how = capabilitiesOf(store).processLocal
    ? `${n} concurrent callers on one process-local store`
    : `${n} store instances in one process (no worker supplied)`;
  return { reports, how };
}

/**
 * Checks a race where each of `ids` may be won by one racer only (keys `<id>/p<racer>`): no
 * call failed other than with `CONFLICT`, each id has exactly one winner, and every loser got
 * `CONFLICT`. Returns the winning racer of each id, in order.
 */
export function oneWinnerEach(
  ctx: CheckContext,
  label: string,
  ids: string[],
  { reports, how }: { reports: RacerReport[]; how: string },
): number[] {
  const failures = reports.flatMap((r) => r.failures);
  const conflicts = reports.reduce((sum, r) => sum + r.conflicts, 0);
  const succeeded = reports.reduce((sum, r) => sum + r.written.length, 0);
  ctx.log(
    `${label}: ${how}, ${ids.length} ids; ${succeeded} succeeded, ${conflicts} CONFLICT, ${failures.length} failed`,
  );
  if (failures.length) {
    throw new ConformanceError(`${label}: ${failures.length} calls failed, e.g. ${failures[0]}`);
  }
  const winners = ids.map((id) => {
    const won = reports.flatMap((r, racer) => (r.written.includes(`${id}/p${racer}`) ? [racer] : []));
    expectEqual(won.length, 1, `${label}: racers told that they won ${id} (p${won.join(', p')})`);
    return won[0]!;
  });
  expectEqual(conflicts, ids.length * (reports.length - 1), `${label}: CONFLICT answers of the losers`);
  return winners;
}
