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
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
