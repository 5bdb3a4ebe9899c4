import { randomUUID } from 'node:crypto';
import type { MemoryStorage } from '@engram/core';
import { CHECKS } from './areas/index.ts';
import { nameOf } from './define.ts';
import { SkipCheck } from './skip.ts';
import type { AreaName, Check, CheckContext, CheckResult, ConformanceInit } from './types.ts';

/** Options for running checks outside vitest. */
export interface RunOptions {
  /** Only these areas. Default: all. */
  areas?: readonly AreaName[];
  /** Receives each line a check logs, as it is logged. */
  onLog?: (line: string, check: Check) => void;
  /** Receives each result as soon as its check ends. */
  onResult?: (result: CheckResult) => void;
}

/** The checks of the given areas (all areas when omitted), in suite order. */
export function checksOf(areas?: readonly AreaName[]): Check[] {
  return areas ? CHECKS.filter((check) => areas.includes(check.area)) : [...CHECKS];
}

/**
 * Runs one check against the initializer's store and reports pass, fail or skip; never throws.
 * Every store the check created is destroyed afterwards.
 */
export async function runCheck(
  init: ConformanceInit,
  check: Check,
  onLog?: (line: string) => void,
): Promise<CheckResult> {
  const started = Date.now();
  const output: string[] = [];
  const result = (status: CheckResult['status'], extra: Partial<CheckResult> = {}): CheckResult => ({
    area: check.area,
    name: nameOf(check, init),
    status,
    output,
    durationMs: Date.now() - started,
    ...extra,
  });
  const reason = suiteSkipReason(init) ?? check.skipReason?.(init);
  if (reason) return result('skip', { reason });

  const stores: MemoryStorage[] = [];
  const ctx: CheckContext = {
    init,
    async store() {
      const store = await ctx.storeWithoutInit();
      await store.init();
      return store;
    },
    async storeWithoutInit() {
      const store = await init.create();
      stores.push(store);
      return store;
    },
    id: (prefix = 'x') => `${prefix}-${randomUUID()}`,
    log(line) {
      output.push(line);
      onLog?.(line);
    },
  };
  let outcome: CheckResult;
  try {
    await check.run(ctx);
    outcome = result('pass');
  } catch (error) {
    outcome =
      error instanceof SkipCheck ? result('skip', { reason: error.message }) : result('fail', { error });
  }
  for (const store of stores) {
    try {
      await (init.destroy ? init.destroy(store) : store.close());
    } catch (error) {
      if (outcome.status !== 'fail') {
        outcome = result('fail', { error: new Error(`destroying the store failed: ${String(error)}`) });
      }
    }
  }
  return { ...outcome, durationMs: Date.now() - started };
}

/** Runs the checks of the given areas one after another and returns every result. */
export async function runChecks(init: ConformanceInit, options: RunOptions = {}): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of checksOf(options.areas)) {
    const result = await runCheck(init, check, (line) => options.onLog?.(line, check));
    options.onResult?.(result);
    results.push(result);
  }
  return results;
}

/** The reason the whole suite is skipped, if the initializer asks for it. */
export function suiteSkipReason(init: ConformanceInit): string | undefined {
  if (init.skip === true) return 'skipped by the initializer';
  if (typeof init.skip === 'string' && init.skip !== '') return init.skip;
  return undefined;
}
