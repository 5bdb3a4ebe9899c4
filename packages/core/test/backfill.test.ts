import { describe, expect, it } from 'vitest';
import { type BackfillProgress, backfillListener, runBackfill } from '../src/driver.ts';
import { MemoryError } from '../src/index.ts';

/** Runs a backfill over `records` (`total` counted by the first batch), collecting the reports. */
async function run(records: number, batchSize: number, countedTotal = records) {
  const reports: BackfillProgress[] = [];
  let left = records;
  let batches = 0;
  await runBackfill(
    'index',
    batchSize,
    (p) => reports.push(p),
    async () => {
      batches += 1;
      const read = Math.min(batchSize, left);
      left -= read;
      return { read, total: countedTotal };
    },
  );
  return { reports, batches };
}

describe('runBackfill', () => {
  it('reports after each batch and stops at the first short one', async () => {
    const { reports, batches } = await run(1201, 500);
    expect(batches).toBe(3);
    expect(reports.map((r) => [r.done, r.total])).toEqual([
      [500, 1201],
      [1000, 1201],
      [1201, 1201],
    ]);
    expect(reports.every((r) => r.backfill === 'index')).toBe(true);
  });

  it('runs one more, empty, batch when the records fill the last batch exactly, without reporting it', async () => {
    const { reports, batches } = await run(1000, 500);
    expect(batches).toBe(3);
    expect(reports.map((r) => r.done)).toEqual([500, 1000]);
  });

  it('reports once with done 0 when there is nothing to do', async () => {
    const { reports, batches } = await run(0, 500);
    expect(batches).toBe(1);
    expect(reports).toEqual([{ backfill: 'index', done: 0, total: 0 }]);
  });

  it('never reports a total below what was done (records written meanwhile)', async () => {
    const { reports } = await run(700, 500, 600);
    expect(reports.map((r) => [r.done, r.total])).toEqual([
      [500, 600],
      [700, 700],
    ]);
  });

  it('stops at the error of a batch, having reported the batches before it', async () => {
    const reports: BackfillProgress[] = [];
    let batches = 0;
    const failing = runBackfill(
      'index',
      2,
      (p) => reports.push(p),
      async () => {
        batches += 1;
        if (batches === 2) throw new Error('connection lost');
        return { read: 2, total: 10 };
      },
    );
    await expect(failing).rejects.toThrow('connection lost');
    expect(reports.map((r) => r.done)).toEqual([2]);
  });
});

describe('backfillListener', () => {
  it('refuses a listener that is not a function, naming the adapter', () => {
    expect(() => backfillListener(42, 'pg')).toThrow(MemoryError);
    expect(() => backfillListener('log', 'pg')).toThrow(/pg: onBackfillProgress must be a function/);
  });

  it('drops the errors a listener throws, so reporting cannot fail an upgrade', async () => {
    const seen: number[] = [];
    const listener = backfillListener((p: BackfillProgress) => {
      seen.push(p.done);
      throw new Error('logger down');
    }, 'libsql');
    await runBackfill('index', 2, listener, async () => ({ read: 1, total: 1 }));
    expect(seen).toEqual([1]);
  });
});
