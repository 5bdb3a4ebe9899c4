import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    descriptor: 'src/descriptor.ts',
    bridge: 'src/bridge/index.ts',
    'bridge-cli': 'src/bridge/cli.ts',
  },
  format: 'esm',
  dts: true,
  clean: true,
});
