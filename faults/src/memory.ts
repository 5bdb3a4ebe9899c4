import { runId } from './services.ts';
import { spawnChild } from './spawn.ts';
import type { Target } from './targets.ts';

/** Options of `runMemorySoak`. */
export interface MemorySoakOptions {
  target: Target;
  /** Operations in all. Default 100,000. */
  operations?: number;
  /** Operations before the first RSS sample. Default 10,000. */
  warmup?: number;
}

/** What a memory soak measured. */
export interface MemorySoakResult {
  operations: number;
  /** RSS in MB after the warm-up and at the end, each after a full GC. */
  rssAfterWarmupMb: number;
  rssAtEndMb: number;
  /** RSS growth from the first sample to the last, in MB. */
  rssGrowthMb: number;
  /** Growth of the memory JavaScript holds (V8's heap in use plus external buffers), in MB. */
  heapGrowthMb: number;
  /** Operations per second after the warm-up. */
  opsPerSecond: number;
  /** How the child ended when it did not report (an error, a crash). */
  failure?: string;
}

const MB = 1024 * 1024;

/**
 * Memory soak: one child process (`node --expose-gc`, its own store) runs `operations` mixed
 * operations on a bounded amount of data (see `memory-worker.ts`) and reports its RSS after the
 * warm-up and at the end. A store whose driver keeps memory per statement, connection or
 * transaction grows with the operation count; a healthy one stays within its caches.
 */
export async function runMemorySoak(options: MemorySoakOptions): Promise<MemorySoakResult> {
  const operations = options.operations ?? 100_000;
  const warmup = options.warmup ?? 10_000;
  let measured: MemorySoakResult | undefined;
  let failure: string | undefined;
  const child = spawnChild(
    options.target,
    { mode: 'memory', writer: runId(), operations, warmup },
    (message) => {
      if (message.type === 'error') failure = `${message.code}: ${message.message}`;
      if (message.type !== 'memory') return;
      measured = {
        operations: message.operations,
        rssAfterWarmupMb: message.rssAfterWarmup / MB,
        rssAtEndMb: message.rssAtEnd / MB,
        rssGrowthMb: (message.rssAtEnd - message.rssAfterWarmup) / MB,
        heapGrowthMb: (message.heapAtEnd - message.heapAfterWarmup) / MB,
        opsPerSecond: (message.operations - warmup) / message.seconds,
      };
    },
    ['--expose-gc'],
  );
  const exit = await child.exited;
  if (measured && exit.code === 0) return measured;
  return {
    operations: 0,
    rssAfterWarmupMb: 0,
    rssAtEndMb: 0,
    rssGrowthMb: 0,
    heapGrowthMb: 0,
    opsPerSecond: 0,
    failure: failure ?? `the child exited with ${exit.code ?? exit.signal}`,
  };
}
