import { defineConfig } from 'tsdown';

export default defineConfig({
  // Flat names: the race harness finds `worker-runner.mjs` next to itself in dist/.
  entry: { index: 'src/index.ts', cli: 'src/cli.ts', 'worker-runner': 'src/concurrency/worker-runner.ts' },
  format: 'esm',
  dts: true,
  clean: true,
});
