import { expect, it } from 'vitest';
import { runMemorySoak } from '../src/memory.ts';
import { provision } from '../src/services.ts';
import { forEachAdapter } from './support.ts';

const OPERATIONS = 100_000;
const WARMUP = 10_000;
/** How much RSS may grow from the first sample to the last. */
const MAX_GROWTH_MB = 20;

forEachAdapter('memory soak', (adapter) => {
  it(
    `holds RSS within ${MAX_GROWTH_MB} MB from operation ${WARMUP} to ${OPERATIONS}`,
    async () => {
      const space = await provision(adapter.name, 'memory');
      // What is measured is memory, not durability: libSQL skips the fsync of every commit
      // (`synchronous: 'normal'`), which would otherwise be most of its run time.
      const target =
        space.target.adapter === 'libsql'
          ? { ...space.target, synchronous: 'normal' as const }
          : space.target;
      try {
        const result = await runMemorySoak({ target, operations: OPERATIONS, warmup: WARMUP });
        console.log(
          `memory soak ${adapter.name}: ${result.operations} operations, RSS ${result.rssAfterWarmupMb.toFixed(1)} MB after ${WARMUP} -> ${result.rssAtEndMb.toFixed(1)} MB (${result.growthMb >= 0 ? '+' : ''}${result.growthMb.toFixed(1)} MB), ${Math.round(result.opsPerSecond)} ops/s`,
        );
        expect(result.failure).toBeUndefined();
        expect(result.operations).toBe(OPERATIONS);
        expect(result.growthMb).toBeLessThanOrEqual(MAX_GROWTH_MB);
      } finally {
        await space.cleanup();
      }
    },
    // Bounded by work done (the operation count); the timeout only catches a hung child.
    30 * 60_000,
  );
});
