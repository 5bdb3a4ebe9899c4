import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts', 'src/adapter.ts'],
  format: 'esm',
  dts: true,
  clean: true,
});
