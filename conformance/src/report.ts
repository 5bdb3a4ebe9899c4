import { describeError } from './assert.ts';
import { AREA_TITLES, AREAS, type AreaName, type CheckResult } from './types.ts';

/** The results of one area, counted. */
export interface AreaResult {
  area: AreaName;
  pass: number;
  fail: number;
  skip: number;
  /** Distinct skip reasons, each with the checks it skipped. */
  skipReasons: string[];
  failed: CheckResult[];
}

/** Groups results by area, in suite order (areas without results are left out). */
export function summarize(results: readonly CheckResult[]): AreaResult[] {
  return AREAS.flatMap((area) => {
    const mine = results.filter((r) => r.area === area);
    if (mine.length === 0) return [];
    const reasons = new Map<string, number>();
    for (const r of mine)
      if (r.status === 'skip' && r.reason) reasons.set(r.reason, (reasons.get(r.reason) ?? 0) + 1);
    return [
      {
        area,
        pass: mine.filter((r) => r.status === 'pass').length,
        fail: mine.filter((r) => r.status === 'fail').length,
        skip: mine.filter((r) => r.status === 'skip').length,
        skipReasons: [...reasons].map(([reason, n]) => `${reason} (${n})`),
        failed: mine.filter((r) => r.status === 'fail'),
      },
    ];
  });
}

/** A plain-text pass/fail/skip table by area, with skip reasons, then the failures in full. */
export function formatTable(name: string, results: readonly CheckResult[]): string {
  const rows = summarize(results);
  const width = Math.max(...rows.map((r) => AREA_TITLES[r.area].length), 'area'.length);
  const line = (area: string, pass: string, fail: string, skip: string, note: string) =>
    `${area.padEnd(width)}  ${pass.padStart(4)}  ${fail.padStart(4)}  ${skip.padStart(4)}  ${note}`.trimEnd();
  const header = line('area', 'pass', 'fail', 'skip', 'skipped because');
  const rule = '-'.repeat(header.length);
  const out = [`engram conformance: ${name}`, '', header, rule];
  for (const r of rows) {
    out.push(
      line(AREA_TITLES[r.area], String(r.pass), String(r.fail), String(r.skip), r.skipReasons.join('; ')),
    );
  }
  const total = (key: 'pass' | 'fail' | 'skip') => rows.reduce((sum, r) => sum + r[key], 0);
  out.push(rule);
  out.push(line('total', String(total('pass')), String(total('fail')), String(total('skip')), ''));
  const failures = rows.flatMap((r) => r.failed);
  if (failures.length) {
    out.push('', 'failures:');
    for (const f of failures) {
      const message = f.error instanceof Error ? f.error.message : describeError(f.error);
      out.push(`✗ [${AREA_TITLES[f.area]}] ${f.name}`, ...message.split('\n').map((l) => `    ${l}`));
    }
  }
  out.push('', `${total('pass')} passed, ${total('fail')} failed, ${total('skip')} skipped`);
  return out.join('\n');
}
