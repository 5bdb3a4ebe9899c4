import { expect, it } from 'vitest';
import { runCrash } from '../src/crash.ts';
import { provision } from '../src/services.ts';
import { lockTimeoutMs } from '../src/targets.ts';
import { count, forEachAdapter } from './support.ts';

/** The work each run does: writers killed mid-write, and writes acknowledged. */
const UNTIL = { kills: count('ENGRAM_CRASH_KILLS', 6), acks: count('ENGRAM_CRASH_ACKS', 60) };

forEachAdapter('writer crash (SIGKILL)', (adapter) => {
  it(`keeps every acknowledged key and batch through ${UNTIL.kills} random SIGKILLs mid-write and ${UNTIL.acks} acknowledged writes, leaves no batch half-saved and no lock held`, async () => {
    const space = await provision(adapter.name, 'crash');
    try {
      // On FerretDB a writer killed while holding a write lock stalls the others for the lock's
      // 10 s lease, so its writers live longer to get writes in between.
      const maxLifeMs = adapter.name === 'mongodb' ? 5_000 : undefined;
      const result = await runCrash({ target: space.target, until: UNTIL, maxLifeMs });
      const v = result.verdict;
      console.log(
        `crash ${adapter.name}: ${result.kills} kills, ${result.spawned} writers, ${result.acks} acks; verified ${v.verifiedKeys} keys + ${v.verifiedBatches} batches (${v.batchesSeen} batches in storage, whole); fresh merge ${result.freshMergeMs.toFixed(0)} ms; writer errors ${JSON.stringify(result.errors)}${result.partial > 0 ? `; ${result.partial} unacknowledged batch(es) half-saved (no transactions on this server, as documented), completed by saving again` : ''}`,
      );
      expect(v.problems).toEqual([]);
      expect(result.unexpectedExits).toEqual([]);
      expect(result.kills).toBeGreaterThanOrEqual(UNTIL.kills);
      expect(result.acks).toBeGreaterThanOrEqual(UNTIL.acks);
      expect(v.verifiedKeys).toBeGreaterThan(0);
      expect(v.verifiedBatches).toBeGreaterThan(0);
      expect(v.verifiedKeys + v.verifiedBatches).toBe(result.acks);
      expect(result.freshMergeMs).toBeLessThan(await lockTimeoutMs(space.target));
    } finally {
      await space.cleanup();
    }
    // Bounded by the work above; a run with no progress for 60 s fails inside runCrash.
  }, 900_000);
});

it('a crash run that stops making progress fails, saying so, instead of running on', async () => {
  // Writers on the in-process target, each killed at a random time within 10 minutes: seldom one
  // in the run's first seconds (a kill is progress, and the 3 s start again), so 1,000 kills
  // never get close; acknowledged writes do not count, none being asked for.
  const run = runCrash({
    target: { adapter: 'memory', url: 'memory:', options: {} },
    until: { kills: 1_000, acks: 0 },
    maxLifeMs: 600_000,
    stallMs: 3_000,
  });
  await expect(run).rejects.toThrow(
    /^crash run stalled: no progress towards 1000 kills and 0 acknowledged writes for 3 s \(\d\/1000 kills, \d+\/0 acks/,
  );
}, 120_000);
