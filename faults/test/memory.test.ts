import { expect, it } from 'vitest';
import { runMemorySoak } from '../src/memory.ts';
import { provision } from '../src/services.ts';
import { forEachAdapter } from './support.ts';

const OPERATIONS = 100_000;
const WARMUP = 10_000;
/**
 * FerretDB answers about 120 memory operations a second here (libSQL about 4,000, pg 1,500,
 * Upstash 800): 100,000 of them would take 14 minutes of every CI run. It runs a tenth of the
 * soak, with the same ratio of warm-up to measured operations, unless ENGRAM_SOAK_FULL=1.
 */
const SCALE: Record<string, number> = process.env.ENGRAM_SOAK_FULL === '1' ? {} : { mongodb: 0.1 };
/** How much RSS may grow from the first sample to the last. */
const MAX_GROWTH_MB = 20;

forEachAdapter('memory soak', (adapter) => {
  const scale = SCALE[adapter.name] ?? 1;
  const operations = OPERATIONS * scale;
  const warmup = WARMUP * scale;
  it(
    `holds RSS within ${MAX_GROWTH_MB} MB from operation ${warmup} to ${operations}`,
    async () => {
      const space = await provision(adapter.name, 'memory');
      // What is measured is memory, not durability: an embedded store (libSQL) skips the fsync
      // of every commit (`synchronous: 'normal'`), which would otherwise be most of its run time.
      const target = { ...space.target, options: { ...space.target.options, synchronous: 'normal' } };
      try {
        const result = await runMemorySoak({ target, operations, warmup });
        console.log(
          `memory soak ${adapter.name}: ${result.operations} operations, RSS ${result.rssAfterWarmupMb.toFixed(1)} MB after ${warmup} -> ${result.rssAtEndMb.toFixed(1)} MB (${result.growthMb >= 0 ? '+' : ''}${result.growthMb.toFixed(1)} MB), ${Math.round(result.opsPerSecond)} ops/s`,
        );
        expect(result.failure).toBeUndefined();
        expect(result.operations).toBe(operations);
        expect(result.growthMb).toBeLessThanOrEqual(MAX_GROWTH_MB);
      } finally {
        await space.cleanup();
      }
    },
    // Bounded by work done (the operation count); the timeout only catches a hung child.
    30 * 60_000,
  );
});
