import { Readable } from 'node:stream';
import { isMemoryError, MemoryError } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { JsonLines } from '../src/transfer/jsonl.ts';
import { Progress } from '../src/transfer/progress.ts';

/** A stand-in for stderr that keeps what was written. */
function output(isTTY: boolean): { text: string; isTTY: boolean; write(s: string): boolean } {
  return {
    text: '',
    isTTY,
    write(s: string) {
      this.text += s;
      return true;
    },
  };
}

async function read(dump: JsonLines): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const record of dump.records()) out.push(record);
  return out;
}

describe('Progress', () => {
  it('piped: a plain line every N records, then the totals; nothing that moves a cursor', () => {
    const out = output(false);
    const progress = new Progress(out, 'engram export', 2);
    for (const kind of ['resource', 'thread', 'message', 'message', 'message']) progress.tick(kind);
    progress.finish();
    const lines = out.text.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^engram export: 2 records \(1 resource, 1 thread, 0 messages, 0 observations, 0 vectors, 0 turns\), \d+ records\/s$/,
    );
    expect(lines[1]).toMatch(
      /^engram export: 4 records \(1 resource, 1 thread, 2 messages, 0 observations, 0 vectors, 0 turns\)/,
    );
    expect(lines[2]).toMatch(
      /^engram export: 1 resource, 1 thread, 3 messages, 0 observations, 0 vectors, 0 turns in \d+\.\ds$/,
    );
    expect(lines).toHaveLength(3);
    expect(out.text).not.toContain('\r');
  });

  it('on a terminal: one line redrawn in place, cleared before the totals', () => {
    const out = output(true);
    const progress = new Progress(out, 'engram import', 1);
    progress.tick('message');
    progress.tick('message'); // within the redraw interval: not drawn
    progress.finish({
      written: { resource: 0, thread: 0, message: 1, observation: 0, vector: 0, turn: 0 },
      skipped: { resource: 0, thread: 0, message: 1, observation: 0, vector: 0, turn: 0 },
      unembedded: [],
    });
    expect(out.text.startsWith('\r\u001b[Kengram import: 1 record (0 resources, 0 threads, 1 message')).toBe(
      true,
    );
    expect(out.text).toContain(
      '\r\u001b[Kengram import: written 0 resources, 0 threads, 1 message, 0 observations, 0 vectors, 0 turns in ',
    );
    expect(out.text).toMatch(
      /\nengram import: skipped \(already there\) 0 resources, 0 threads, 1 message, 0 observations, 0 vectors, 0 turns\n$/,
    );
    expect(out.text.split('\n')).toHaveLength(3);
  });
});

describe('JsonLines', () => {
  it('skips blank lines and maps a record back to its line', async () => {
    const dump = new JsonLines(Readable.from(['{"a":1}\n\n', '\n{"a":2}\r\n{"a"', ':3}\n   \n{"a":4}']));
    expect(await read(dump)).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }]);
    expect([1, 2, 3, 4].map((r) => dump.lineOf(r))).toEqual([1, 4, 5, 7]);
    const named = dump.atLine(
      new MemoryError('VALIDATION', 'record 3 (message "m"): bad', { details: { record: 3 } }),
    );
    expect(named).toMatchObject({
      code: 'VALIDATION',
      message: 'line 5 (message "m"): bad',
      details: { line: 5 },
    });
  });

  it('a line that is not JSON (a dump cut short): VALIDATION naming it', async () => {
    const dump = new JsonLines(Readable.from(['{"a":1}\n{"a":']));
    const error = await read(dump).catch((e: unknown) => e);
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    expect((error as Error).message).toMatch(
      /^line 2 is not JSON \(.*\); a dump cut short ends this way: export it again$/,
    );
  });
});
