import { performance } from 'node:perf_hooks';

/** Medians and percentiles of a list of durations in milliseconds. */
export interface Stats {
  samples: number;
  median: number;
  p99: number;
}

export function stats(durations: number[]): Stats {
  const sorted = [...durations].sort((a, b) => a - b);
  return { samples: sorted.length, median: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
}

export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[at]!;
}

export async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** One engram-vs-raw comparison. `ratio` is engram's median over raw's median. */
export interface Comparison {
  operation: string;
  engram: Stats;
  raw: Stats;
  ratio: number;
}

/** Fewest timed rounds a comparison keeps, whatever its time budget. */
export const MIN_ROUNDS = 6;

/**
 * Times `engram` and `raw` alternately (A/B, then B/A) for `iterations` rounds after `warmup`
 * untimed rounds, so drift on the machine hits both sides alike. `i` is the round number.
 * Stops early, after at least `MIN_ROUNDS` rounds, once `budgetMs` is spent (slow backends).
 */
export async function compare(
  operation: string,
  iterations: number,
  engram: (i: number) => Promise<unknown>,
  raw: (i: number) => Promise<unknown>,
  budgetMs = Number.POSITIVE_INFINITY,
  warmup = Math.min(20, Math.ceil(iterations / 5)),
): Promise<Comparison> {
  const started = performance.now();
  for (let i = 0; i < warmup; i++) {
    if (i > 0 && performance.now() - started > budgetMs / 5) break;
    await engram(-1 - i);
    await raw(-1 - i);
  }
  const a: number[] = [];
  const b: number[] = [];
  const timedFrom = performance.now();
  for (let i = 0; i < iterations; i++) {
    if (i >= MIN_ROUNDS && performance.now() - timedFrom > budgetMs) break;
    if (i % 2 === 0) {
      a.push(await time(() => engram(i)));
      b.push(await time(() => raw(i)));
    } else {
      b.push(await time(() => raw(i)));
      a.push(await time(() => engram(i)));
    }
  }
  console.error(`  ${operation}: ${a.length} rounds, ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const engramStats = stats(a);
  const rawStats = stats(b);
  return { operation, engram: engramStats, raw: rawStats, ratio: engramStats.median / rawStats.median };
}
