import { expect, it } from 'vitest';
import { provision } from '../src/services.ts';
import { runStopped } from '../src/stopped.ts';
import type { Target } from '../src/targets.ts';
import { forEachAdapter } from './support.ts';

/** Stores whose locks are leases (FerretDB's write locks) get a 1 s one here, so a stop outlasts it in 2 s. */
const LEASE_MS = 1_000;

function withShortLease(target: Target): Target {
  return { ...target, options: { ...target.options, leaseMs: LEASE_MS } };
}

forEachAdapter('stopped writer (SIGSTOP past its lease)', (adapter) => {
  it('a writer stopped 5× past any lease while it merges, then resumed, erases no acknowledged key of the others', async () => {
    const space = await provision(adapter.name, 'stopped');
    try {
      const result = await runStopped({ target: withShortLease(space.target) });
      const v = result.verdict;
      console.log(
        `stopped ${adapter.name}: ${result.stops} stops of ${result.stopMs} ms; ${result.acks.stopped} acks by the stopped writer, ${result.acks.others} by the others; verified ${v.verifiedKeys} keys; writer errors ${JSON.stringify(result.errors)}${v.lost.length ? `; lost ${v.lost.length}, e.g. ${v.lost[0]}` : ''}`,
      );
      expect(v.problems).toEqual([]);
      expect(result.unexpectedExits).toEqual([]);
      expect(result.acks.stopped).toBeGreaterThan(0);
      expect(result.acks.others).toBeGreaterThan(0);
      expect(v.verifiedKeys).toBe(result.acks.stopped + result.acks.others);
      // Only lock waits that gave up may fail.
      expect(Object.keys(result.errors).filter((code) => code !== 'CONFLICT')).toEqual([]);
    } finally {
      await space.cleanup();
    }
  });
});
