import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { benchRecall, DIMENSIONS, type RecallAdapterResult } from './recall.ts';
import { type RecallRun, recallChart, recallMarkdown } from './recall-report.ts';
import { loadTarget } from './targets.ts';

/**
 * `--recall`: semantic recall latency at 1k, 10k and 100k messages in one resource (`--quick`:
 * 1k and 10k) on each adapter, engram against the raw driver's exact scan. Writes
 * `<date>[-quick]-recall.json` and `.md` to `out`.
 */
export async function runRecall(adapters: string[], quick: boolean, out: string): Promise<void> {
  const fx = quick
    ? { sizes: [1_000, 10_000], iterations: 100, budgetMs: 3_000 }
    : { sizes: [1_000, 10_000, 100_000], iterations: 150, budgetMs: 6_000 };
  const run: RecallRun = {
    date: new Date().toISOString(),
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
    quick,
    dimensions: DIMENSIONS,
    results: [],
  };
  for (const name of adapters) {
    const target = await loadTarget(name);
    const reason = target.unavailable() ?? (target.openRecall ? null : 'no recall target');
    if (reason) {
      console.log(`${name}: skipped — ${reason}`);
      run.results.push({ adapter: name, skipped: reason, rows: [], setup: [] });
      continue;
    }
    const started = performance.now();
    let result: RecallAdapterResult;
    try {
      const opened = await (target.openRecall as NonNullable<typeof target.openRecall>)();
      try {
        result = await benchRecall(name, opened, fx);
      } finally {
        await opened.close();
      }
    } catch (error) {
      // One adapter's failure is recorded; the others still run and the results are written.
      console.error(error);
      result = { adapter: name, skipped: `failed: ${(error as Error).message}`, rows: [], setup: [] };
    } finally {
      await target.dispose?.();
    }
    run.results.push(result);
    console.log(`${name}: recall done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  mkdirSync(out, { recursive: true });
  const stamp = `${run.date.slice(0, 10)}${quick ? '-quick' : ''}-recall`;
  const markdown = recallMarkdown(run);
  writeFileSync(`${out}/${stamp}.json`, `${JSON.stringify(run, null, 2)}\n`);
  writeFileSync(`${out}/${stamp}.md`, markdown);
  writeFileSync(`${out}/${stamp}.svg`, recallChart(run));
  console.log(`\n${markdown}`);
}
