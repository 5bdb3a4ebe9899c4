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

/**
 * The keyword index's backfill, run by a schema upgrade that adds the index to stored messages:
 * its name in progress reports and in an adapter's record of a backfill under way.
 */
export const KEYWORD_BACKFILL = 'keyword index';

/** Messages a keyword backfill indexes per batch, on every adapter. */
export const KEYWORD_BACKFILL_BATCH = 500;

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

/** What one batch of a backfill did. */
export interface BackfillStep {
  /** Records the batch read; fewer than the batch size (0 included) ends the backfill. */
  readonly read: number;
  /** Records to do in all, once the batch has counted them. */
  readonly total?: number;
}

/**
 * Runs a backfill a batch at a time: `step` until one reads fewer than `batchSize` records.
 * Reports to `progress` after each batch that read something, and once with `done` 0 when there
 * was nothing to do; `total` is the highest a batch counted, never less than `done`. Where each
 * batch runs (a transaction of its own, resumable, or the caller's) is the adapter's `step`.
 */
export async function runBackfill(
  backfill: string,
  batchSize: number,
  progress: BackfillListener,
  step: () => Promise<BackfillStep>,
): Promise<void> {
  let done = 0;
  let total = 0;
  for (;;) {
    const batch = await step();
    done += batch.read;
    total = Math.max(total, batch.total ?? 0, done);
    if (batch.read > 0 || done === 0) progress({ backfill, done, total });
    if (batch.read < batchSize) return;
  }
}
