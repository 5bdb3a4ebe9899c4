import type { ImportCounts, Memory, OnConflict } from '@engram/core';
import type { Progress } from './progress.ts';

/**
 * Copies every record of `from`'s store into `to`'s (`exportStore` piped into `importRecords` in
 * process: a page of records in memory at a time). With `'skip'`, running it again after it
 * stopped part-way completes the copy without duplicates.
 */
export function copyStore(
  from: Memory,
  to: Memory,
  onConflict: OnConflict,
  progress: Progress,
): Promise<ImportCounts> {
  return to.importRecords(progress.counted(from.exportStore()), { onConflict });
}
