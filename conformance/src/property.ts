import fc from 'fast-check';
import { ConformanceError } from './assert.ts';

/** Default time budget of one property check; runs stop (passing) when it is spent. */
const TIME_LIMIT_MS = 60_000;

/**
 * How long a failure's counterexample is shrunk at most. Each shrink step runs the property
 * against the store again: on a slow backend, or a defect that shows late in a long sequence,
 * an unbounded shrink took minutes before the check reported anything.
 */
export const SHRINK_LIMIT_MS = 30_000;

/**
 * Runs a fast-check property and, on failure, throws the shrunk counterexample's own error
 * message (the readable listing the property produced) followed by the seed and path that
 * replay it. The runs stop (passing) after `timeLimitMs`; the first failure ends them, and is
 * then shrunk for at most `shrinkLimitMs` (replayed from its seed and path): what the shrink
 * reached when the time is up is reported, or the failure as found if its replay passed.
 */
export async function assertProperty<T>(
  property: fc.IAsyncPropertyWithHooks<T>,
  {
    numRuns,
    timeLimitMs = TIME_LIMIT_MS,
    shrinkLimitMs = SHRINK_LIMIT_MS,
    seed,
  }: {
    numRuns: number;
    timeLimitMs?: number;
    shrinkLimitMs?: number;
    /** A fixed seed (the same runs every time); else fast-check draws one. */
    seed?: number;
  },
): Promise<void> {
  const found = await fc.check(property, {
    numRuns,
    ...(seed === undefined ? {} : { seed }),
    interruptAfterTimeLimit: timeLimitMs,
    markInterruptAsFailure: false,
    endOnFailure: true,
  });
  if (!found.failed) return;
  const shrunk = await fc.check(property, {
    seed: found.seed,
    path: found.counterexamplePath ?? undefined,
    interruptAfterTimeLimit: shrinkLimitMs,
    markInterruptAsFailure: false,
  });
  const details = shrunk.failed ? shrunk : found;
  const cause = details.errorInstance;
  const message = cause instanceof Error ? cause.message : String(cause);
  const shrinking = details.interrupted ? `, shrink stopped after ${shrinkLimitMs / 1000} s` : '';
  throw new ConformanceError(
    `${message}\n  (fast-check: failed after ${found.numRuns} runs, shrunk ${details.numShrinks} times${shrinking}; ` +
      `replay with { seed: ${details.seed}, path: ${JSON.stringify(details.counterexamplePath)} })`,
    { cause },
  );
}
