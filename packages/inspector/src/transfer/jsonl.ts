import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { isMemoryError, MemoryError } from '@engram/core';

/**
 * The records of a JSON Lines dump, read line by line (a line at a time in memory): blank lines
 * are skipped, any other line must be one JSON value. `lineOf` turns the position of a record
 * (what `importRecords` names in its errors) back into its line.
 */
export class JsonLines {
  /** Where the line numbers move ahead of the record numbers: `[first record, lines skipped]`. */
  private readonly gaps: [number, number][] = [];

  constructor(private readonly input: Readable) {}

  /** The values, one per non-blank line; `VALIDATION` naming the line that is not JSON. */
  async *records(): AsyncGenerator<unknown> {
    const lines = createInterface({ input: this.input, crlfDelay: Number.POSITIVE_INFINITY });
    let line = 0;
    let record = 0;
    try {
      for await (const text of lines) {
        line += 1;
        if (text.trim() === '') continue;
        record += 1;
        if (line - record !== (this.gaps.at(-1)?.[1] ?? 0)) this.gaps.push([record, line - record]);
        yield parseLine(text, line);
      }
    } finally {
      lines.close();
    }
  }

  /** The line of the `record`-th record read. */
  lineOf(record: number): number {
    let offset = 0;
    for (const [first, skipped] of this.gaps) {
      if (first > record) break;
      offset = skipped;
    }
    return record + offset;
  }

  /**
   * The error with the record it names (`record N …`, from `importRecords`) named by its line
   * instead; any other error as it is.
   */
  atLine(error: unknown): unknown {
    if (!isMemoryError(error) || typeof error.details.record !== 'number') return error;
    const line = this.lineOf(error.details.record);
    return new MemoryError(error.code, error.message.replace(/^record \d+/, `line ${line}`), {
      adapter: error.adapter,
      details: { ...error.details, line },
      cause: error.cause,
    });
  }
}

function parseLine(text: string, line: number): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new MemoryError(
      'VALIDATION',
      `line ${line} is not JSON (${why}); a dump cut short ends this way: export it again`,
      { details: { line } },
    );
  }
}
