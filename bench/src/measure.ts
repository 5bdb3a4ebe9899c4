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

/**
 * One engram-vs-raw comparison. `ratio` is engram's median over raw's median; with a peer,
 * `peerRatio` is engram's median over the peer's.
 */
export interface Comparison {
  operation: string;
  engram: Stats;
  raw: Stats;
  ratio: number;
  peer?: Stats;
  peerRatio?: number;
}

/** Fewest timed rounds a comparison keeps, whatever its time budget. */
export const MIN_ROUNDS = 6;

/**
 * Times `engram` and `raw` (and `peer`, when given) alternately for `iterations` rounds after
 * `warmup` untimed rounds: each round runs every side once, in an order that rotates from round
 * to round (A/B, B/A; with a peer A/B/C, B/C/A, C/A/B), so drift on the machine hits every side
 * alike. `i` is the round number. Stops early, after at least `MIN_ROUNDS` rounds, once
 * `budgetMs` is spent (slow backends).
 */
export async function compare(
  operation: string,
  iterations: number,
  engram: (i: number) => Promise<unknown>,
  raw: (i: number) => Promise<unknown>,
  budgetMs = Number.POSITIVE_INFINITY,
  warmup = Math.min(20, Math.ceil(iterations / 5)),
  peer?: (i: number) => Promise<unknown>,
): Promise<Comparison> {
  const sides = peer ? [engram, raw, peer] : [engram, raw];
  const samples: number[][] = sides.map(() => []);
  const started = performance.now();
  for (let i = 0; i < warmup; i++) {
    if (i > 0 && performance.now() - started > budgetMs / 5) break;
    for (const side of sides) await side(-1 - i);
  }
  const timedFrom = performance.now();
  for (let i = 0; i < iterations; i++) {
    if (i >= MIN_ROUNDS && performance.now() - timedFrom > budgetMs) break;
    for (let k = 0; k < sides.length; k++) {
      const at = (i + k) % sides.length;
      samples[at]!.push(await time(() => sides[at]!(i)));
    }
  }
  console.error(
    `  ${operation}: ${samples[0]!.length} rounds, ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const engramStats = stats(samples[0]!);
  const rawStats = stats(samples[1]!);
  const result: Comparison = {
    operation,
    engram: engramStats,
    raw: rawStats,
    ratio: engramStats.median / rawStats.median,
  };
  if (peer) {
    result.peer = stats(samples[2]!);
    result.peerRatio = engramStats.median / result.peer.median;
  }
  return result;
}
