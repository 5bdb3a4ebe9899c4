import fc from 'fast-check';
import { ConformanceError } from './assert.ts';

/** Default time budget of one property check; runs stop (passing) when it is spent. */
const TIME_LIMIT_MS = 60_000;

/**
 * Runs a fast-check property and, on failure, throws the shrunk counterexample's own error
 * message (the readable listing the property produced) followed by the seed and path that
 * replay it.
 */
export async function assertProperty<T>(
  property: fc.IAsyncPropertyWithHooks<T>,
  numRuns: number,
  timeLimitMs = TIME_LIMIT_MS,
): Promise<void> {
  const details = await fc.check(property, {
    numRuns,
    interruptAfterTimeLimit: timeLimitMs,
    markInterruptAsFailure: false,
  });
  if (!details.failed) return;
  const cause = details.errorInstance;
  const message = cause instanceof Error ? cause.message : String(cause);
  throw new ConformanceError(
    `${message}\n  (fast-check: failed after ${details.numRuns} runs, shrunk ${details.numShrinks} times; ` +
      `replay with { seed: ${details.seed}, path: ${JSON.stringify(details.counterexamplePath)} })`,
    { cause },
  );
}
