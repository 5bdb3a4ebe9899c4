import type { ImportCounts, RecordKind } from '@engram/core';

/** Where progress goes: stderr, or any stream in tests. */
export interface ProgressOutput {
  write(text: string): unknown;
  /** True on a terminal: one line updated in place. */
  isTTY?: boolean;
}

/** Records between two plain progress lines when the output is not a terminal. */
export const DEFAULT_EVERY = 10_000;

/** Redraws of the terminal line at most this often, in ms. */
const REDRAW_MS = 100;

const KINDS: readonly RecordKind[] = ['resource', 'thread', 'message', 'observation', 'vector', 'turn'];
const PLURAL: Record<RecordKind, string> = {
  resource: 'resources',
  thread: 'threads',
  message: 'messages',
  observation: 'observations',
  vector: 'vectors',
  turn: 'turns',
};

/** `1 resource, 2 threads, 0 messages, 0 observations, 0 vectors, 0 turns`. */
export function formatCounts(counts: Record<RecordKind, number>): string {
  return KINDS.map((k) => `${counts[k]} ${counts[k] === 1 ? k : PLURAL[k]}`).join(', ');
}

const records = (n: number) => `${n} ${n === 1 ? 'record' : 'records'}`;

/**
 * Counts the records going by, per kind, and reports them: on a terminal as one line redrawn in
 * place, otherwise as a plain line every `every` records; `finish` prints the totals.
 */
export class Progress {
  readonly seen: Record<RecordKind, number> = {
    resource: 0,
    thread: 0,
    message: 0,
    observation: 0,
    vector: 0,
    turn: 0,
  };
  private total = 0;
  private drawnAt = 0;
  private readonly started = Date.now();

  constructor(
    private readonly out: ProgressOutput,
    /** `engram export`, … : the start of every line. */
    private readonly label: string,
    private readonly every: number = DEFAULT_EVERY,
  ) {}

  /** Counts one record (of a kind read from the record itself: anything else is not counted by kind). */
  tick(kind: unknown): void {
    if (typeof kind === 'string' && Object.hasOwn(this.seen, kind)) this.seen[kind as RecordKind] += 1;
    this.total += 1;
    if (this.out.isTTY) {
      const now = Date.now();
      if (now - this.drawnAt < REDRAW_MS) return;
      this.drawnAt = now;
      this.out.write(`\r\x1b[K${this.line()}`);
    } else if (this.total % this.every === 0) {
      this.out.write(`${this.line()}\n`);
    }
  }

  /** The records of `source`, counted as they go by. */
  async *counted<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
    for await (const record of source) {
      this.tick((record as { kind?: unknown } | null)?.kind);
      yield record;
    }
  }

  /** Ends the progress line and prints the totals (`counts` of an import, else what was seen). */
  finish(counts?: ImportCounts): void {
    if (this.out.isTTY && this.drawnAt > 0) this.out.write('\r\x1b[K');
    const seconds = ((Date.now() - this.started) / 1000).toFixed(1);
    if (counts) {
      this.out.write(`${this.label}: written ${formatCounts(counts.written)} in ${seconds}s\n`);
      this.out.write(`${this.label}: skipped (already there) ${formatCounts(counts.skipped)}\n`);
      if (counts.unembedded.length > 0) {
        this.out.write(
          `${this.label}: vectors of ${counts.unembedded.length} resource(s) are in another embedding space than the target's (or it keeps none): run memory.reindex() with your embedder\n`,
        );
      }
    } else {
      this.out.write(`${this.label}: ${formatCounts(this.seen)} in ${seconds}s\n`);
    }
  }

  /** Ends the progress line, leaving the totals so far, before an error is printed. */
  abort(): void {
    if (this.out.isTTY && this.drawnAt > 0) this.out.write('\r\x1b[K');
    if (this.total === 0) return;
    this.out.write(
      `${this.label}: stopped after reading ${records(this.total)} (${formatCounts(this.seen)})\n`,
    );
  }

  private line(): string {
    const seconds = (Date.now() - this.started) / 1000;
    const rate = seconds > 0 ? Math.round(this.total / seconds) : 0;
    return `${this.label}: ${records(this.total)} (${formatCounts(this.seen)}), ${rate} records/s`;
  }
}
