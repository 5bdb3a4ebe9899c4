import type { Readable } from 'node:stream';
import type { ImportCounts, Memory, OnConflict } from '@engram/core';
import { JsonLines } from './jsonl.ts';
import type { Progress } from './progress.ts';

/**
 * Reads a JSON Lines dump from `input` line by line and writes its records into `memory`'s store
 * (`importRecords`, batched; never the whole dump in memory). An error names the line it is
 * about; every record before that line has been written, none from it on.
 */
export async function readDump(
  memory: Memory,
  input: Readable,
  onConflict: OnConflict,
  progress: Progress,
): Promise<ImportCounts> {
  const dump = new JsonLines(input);
  try {
    return await memory.importRecords(progress.counted(dump.records()), { onConflict });
  } catch (error) {
    throw dump.atLine(error);
  }
}
