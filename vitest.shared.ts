import { defineConfig } from 'vitest/config';

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
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
