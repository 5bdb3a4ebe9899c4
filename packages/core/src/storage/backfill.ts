import { MemoryError } from '../errors.ts';
import { describe } from './validate.ts';

/** Progress of a backfill: a schema upgrade filling something in for the records already stored. */
export interface BackfillProgress {
  /** What is filled in, e.g. `'keyword index'`. */
  readonly backfill: string;
  /** Records done so far. */
  readonly done: number;
  /**
   * Records to do in all, counted when the backfill starts (records written meanwhile are not; a
   * resumed backfill counts what was left).
   */
  readonly total: number;
}

/** Called after each batch of a backfill (once, with `done` 0, when there was nothing to do). */
export type BackfillListener = (progress: BackfillProgress) => void;

/**
 * An adapter's `onBackfillProgress` option, checked (`INVALID_ARGUMENT` naming the adapter
 * unless a function or `undefined`), as a listener that never throws: a listener's error is
 * dropped, so that logging cannot fail a schema upgrade.
 */
export function backfillListener(option: unknown, adapter: string): BackfillListener {
  if (option === undefined) return () => {};
  if (typeof option !== 'function') {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${adapter}: onBackfillProgress must be a function (progress) => void, got ${describe(option)}`,
      { adapter },
    );
  }
  return (progress) => {
    try {
      option({ ...progress });
    } catch {
      // Reporting only: the upgrade goes on.
    }
  };
}
