import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: { index: 'src/index.ts', cli: 'src/cli.ts', engram: 'src/engram.ts' },
  format: 'esm',
  dts: true,
  clean: true,
});
