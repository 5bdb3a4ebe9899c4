import { MemoryError } from '../errors.ts';

/**
 * The one retry policy of engram, for every loop that tries again after losing a race: a
 * compare-and-set that lost, a transaction the database aborted to break a deadlock, a lock or
 * lease held by another writer, a database file busy while another process creates it. Drivers
 * do not keep their own numbers: they call `retry`, and may ask for a longer `deadlineMs` where
 * a lease bounds the wait.
 */
export const RETRY_POLICY = Object.freeze({
  /** Attempts before giving up with `CONFLICT`. */
  attempts: 50,
  /** Upper bound of the random back-off before attempt n (n ms … this), in ms. */
  maxDelayMs: 20,
});

/** The value an attempt returns when it lost a race and should run again. */
export const RETRY = Symbol('engram.retry');

/** How one `retry` loop is bounded. */
export interface RetryOptions {
  /** The adapter name for the `CONFLICT` error. */
  adapter: string;
  /** What was tried, for the `CONFLICT` error (`'working-memory update'`, `'transaction'`). */
  what?: string;
  /**
   * Keep trying until this many ms have passed, whatever the attempt count: for waits bounded by
   * a lease (a holder that died frees its lease when it runs out).
   */
  deadlineMs?: number;
  /** True for a thrown error that means "lost a race, try again" (a deadlock, a busy file). */
  retryable?: (error: unknown) => boolean;
}

/**
 * Runs `attempt` until it returns something other than `RETRY` (or throws an error `retryable`
 * does not accept), with a short random back-off, at most `RETRY_POLICY.attempts` times (or until
 * `deadlineMs`); past that, throws `CONFLICT` — or the last retryable error, when there was one.
 */
export async function retry<T>(
  attempt: (n: number) => Promise<T | typeof RETRY>,
  options: RetryOptions,
): Promise<T> {
  const started = Date.now();
  let lastError: unknown;
  for (let n = 0; ; n++) {
    lastError = undefined;
    try {
      const result = await attempt(n);
      if (result !== RETRY) return result;
    } catch (error) {
      if (!options.retryable?.(error)) throw error;
      lastError = error;
    }
    const more =
      options.deadlineMs === undefined
        ? n + 1 < RETRY_POLICY.attempts
        : Date.now() - started < options.deadlineMs;
    if (!more) break;
    await backOff(n);
  }
  if (lastError !== undefined) throw lastError;
  const bound =
    options.deadlineMs === undefined ? `${RETRY_POLICY.attempts} attempts` : `${options.deadlineMs} ms`;
  throw new MemoryError(
    'CONFLICT',
    `${options.adapter}: ${options.what ?? 'write'} gave up after ${bound}: other writers kept changing the same record`,
    { adapter: options.adapter, details: { conflict: true } },
  );
}

/**
 * The policy's random pause after the `n`-th attempt that lost (from 0): what `retry` waits, for
 * a driver's wait that `retry` cannot bound alone (a lock whose holder changes while it waits).
 */
export function backOff(n: number): Promise<void> {
  const most = Math.min(RETRY_POLICY.maxDelayMs, 1 + n * 2);
  return new Promise((resolve) => setTimeout(resolve, Math.random() * most));
}
