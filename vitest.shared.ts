import type { SerializedError } from 'vitest';
import { defineConfig } from 'vitest/config';
import type { TestModule } from 'vitest/node';
import { JsonReporter } from 'vitest/reporters';

/**
 * vitest's JSON report plus the run's unhandled errors (`unhandledErrors`: an error thrown or a
 * promise rejected outside any test, after which vitest exits with 1 although every test
 * passed). `scripts/test-summary.mjs` counts each as a failure, so the closing line agrees with
 * the exit code.
 */
class ReportWithUnhandledErrors extends JsonReporter {
  private unhandled: readonly SerializedError[] = [];

  override onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: readonly SerializedError[] = []) {
    this.unhandled = unhandled;
    return super.onTestRunEnd(modules);
  }

  override writeReport(report: string) {
    const unhandledErrors = this.unhandled.map((e) => String(e.stack || e.message || e.name));
    return super.writeReport(JSON.stringify({ ...JSON.parse(report), unhandledErrors }));
  }
}

/**
 * Shared vitest settings for every package: resolve workspace packages from their sources
 * (the `source` export condition), and write a JSON report that `.ci/run` sums up.
 */
export const shared = defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Type tests (*.test-d.ts) lock the public API; they run through tsc and count as tests.
    // ENGRAM_TYPE_TESTS=0 leaves them out: the second runtime's pass (scripts/test.sh --node=24)
    // would only repeat the same tsc run.
    typecheck: {
      enabled: process.env.ENGRAM_TYPE_TESTS !== '0',
      include: ['test/**/*.test-d.ts'],
      tsconfig: 'tsconfig.json',
    },
    reporters: ['default', new ReportWithUnhandledErrors({ outputFile: '.vitest-report.json' })],
  },
});
