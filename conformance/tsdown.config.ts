import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts', 'src/concurrency/worker-runner.ts'],
  format: 'esm',
  dts: true,
  clean: true,
});
