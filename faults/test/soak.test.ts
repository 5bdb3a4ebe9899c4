import { expect, it } from 'vitest';
import { provision } from '../src/services.ts';
import { runSoak } from '../src/soak.ts';
import { forEachAdapter, seconds } from './support.ts';

/** Per adapter; `pnpm --filter @engram/faults soak --long` runs 600. */
const BUDGET = seconds('ENGRAM_SOAK_SECONDS', 15);

forEachAdapter('soak', (adapter) => {
  it(
    `runs mixed operations from 4 processes for ${BUDGET} s with every invariant holding`,
    async () => {
      const space = await provision(adapter.name, 'soak');
      try {
        const result = await runSoak({ target: space.target, seconds: BUDGET });
        console.log(
          `soak ${adapter.name}: ${result.processes} processes, ${BUDGET} s, ${result.operations} operations (${result.acks} acknowledged writes), ${result.invariants} invariants checked, ${result.violations.length} violations; errors ${JSON.stringify(result.errors)}`,
        );
        expect(result.failedProcesses).toEqual([]);
        expect(result.violations).toEqual([]);
        expect(result.errors).toEqual({});
        expect(result.verdict.verifiedKeys + result.verdict.verifiedBatches).toBe(result.facts);
        expect(result.operations).toBeGreaterThan(0);
      } finally {
        await space.cleanup();
      }
    },
    (BUDGET + 120) * 1000,
  );
});
