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
/**
 * How much the memory JavaScript holds (V8's heap in use plus external buffers) may grow from
 * the first sample to the last: a leak of 250 bytes per operation passes it. RSS, which also
 * holds what native code (a driver's binding) keeps, may grow by `MAX_RSS_GROWTH_MB`: after a
 * full GC it still moved by ±30 MB between runs of the same healthy store here (the allocator
 * keeps or returns freed pages as it likes), so its bound catches a native leak of about 700
 * bytes per operation, not less.
 */
const MAX_HEAP_GROWTH_MB = 20;
const MAX_RSS_GROWTH_MB = 64;

forEachAdapter('memory soak', (adapter) => {
  const scale = SCALE[adapter.name] ?? 1;
  const operations = OPERATIONS * scale;
  const warmup = WARMUP * scale;
  it(
    `holds its JavaScript memory within ${MAX_HEAP_GROWTH_MB} MB and RSS within ${MAX_RSS_GROWTH_MB} MB from operation ${warmup} to ${operations}`,
    async () => {
      const space = await provision(adapter.name, 'memory');
      // What is measured is memory, not durability: an embedded store (libSQL) skips the fsync
      // of every commit (`synchronous: 'normal'`), which would otherwise be most of its run time.
      const target = { ...space.target, options: { ...space.target.options, synchronous: 'normal' } };
      try {
        const result = await runMemorySoak({ target, operations, warmup });
        console.log(
          `memory soak ${adapter.name}: ${result.operations} operations, RSS ${result.rssAfterWarmupMb.toFixed(1)} MB after ${warmup} -> ${result.rssAtEndMb.toFixed(1)} MB (${signed(result.rssGrowthMb)} MB), JavaScript memory ${signed(result.heapGrowthMb)} MB, ${Math.round(result.opsPerSecond)} ops/s`,
        );
        expect(result.failure).toBeUndefined();
        expect(result.operations).toBe(operations);
        expect(result.heapGrowthMb).toBeLessThanOrEqual(MAX_HEAP_GROWTH_MB);
        expect(result.rssGrowthMb).toBeLessThanOrEqual(MAX_RSS_GROWTH_MB);
      } finally {
        await space.cleanup();
      }
    },
    // Bounded by work done (the operation count); the timeout only catches a hung child.
    30 * 60_000,
  );
});

const signed = (mb: number) => `${mb >= 0 ? '+' : ''}${mb.toFixed(1)}`;
