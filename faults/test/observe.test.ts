import { capabilitiesOf } from '@engram/core';
import { expect, it } from 'vitest';
import { runObserveCrash } from '../src/observe.ts';
import { provision } from '../src/services.ts';
import { openStore } from '../src/targets.ts';
import { count, forEachAdapter } from './support.ts';

const UNTIL = { kills: count('ENGRAM_OBSERVE_KILLS', 4), saved: count('ENGRAM_OBSERVE_SAVED', 40) };

forEachAdapter('observational memory crash (SIGKILL)', (adapter) => {
  it(`${UNTIL.kills} writers killed mid-turn (buffering, activation, saves): every acknowledged message stays observed or in the raw tail, and the next turn completes`, async () => {
    const space = await provision(adapter.name, 'observe');
    try {
      const probe = await openStore(space.target);
      const declares = capabilitiesOf(probe).observations;
      await probe.close();
      // Every adapter stores observation logs (the issue of observational memory asks for all).
      expect(declares, `${adapter.name} declares the observations domain`).toBe(true);
      // FerretDB writes are slow: its writers live longer, so that kills do not outrun the saves.
      const maxLifeMs = adapter.name === 'mongodb' ? 5_000 : undefined;
      const result = await runObserveCrash({ target: space.target, until: UNTIL, maxLifeMs });
      console.log(
        `observe ${adapter.name}: ${result.kills} kills, ${result.spawned} writers, ${result.saved} messages acknowledged, ${result.observed} observed at the end; writer errors ${JSON.stringify(result.errors)}`,
      );
      expect(result.missing).toEqual([]);
      expect(result.invariantAfterKills).toBeNull();
      expect(result.invariantAfterTurn).toBeNull();
      expect(result.kills).toBeGreaterThanOrEqual(UNTIL.kills);
      expect(result.observed).toBeGreaterThan(0);
    } finally {
      await space.cleanup();
    }
  }, 600_000);
});
