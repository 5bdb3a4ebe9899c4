import { invalid } from '../storage/arguments.ts';
import { describe } from '../storage/validate.ts';

/**
 * `signal`, when given, must be an `AbortSignal` (recognised by its members, so one of another
 * realm passes); an aborted one rejects with its reason.
 */
export function assertSignal(signal: unknown): asserts signal is AbortSignal | undefined {
  if (signal === undefined) return;
  const like = signal as Partial<AbortSignal> | null;
  if (typeof like?.aborted !== 'boolean' || typeof like.addEventListener !== 'function')
    throw invalid(`signal must be an AbortSignal, got ${describe(signal)}`);
  throwIfAborted(like as AbortSignal);
}

/** Rejects with the signal's reason once it is aborted (an `AbortError` when it gave none). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
