import { defineConfig, mergeConfig } from 'vitest/config';
import { shared } from '../../vitest.shared.ts';

// The tests run against `ai` 6 (the `ai` devDependency) by default, and against `ai` 7 (the
// `ai-v7` npm alias) with ENGRAM_AI_MAJOR=7, which needs Node 22 or newer.
const major = process.env.ENGRAM_AI_MAJOR ?? '6';
if (major !== '6' && major !== '7') throw new Error(`ENGRAM_AI_MAJOR must be 6 or 7, not ${major}`);
if (major === '7' && Number(process.versions.node.split('.')[0]) < 22) {
  throw new Error(`ai 7 needs Node 22 or newer; this is Node ${process.versions.node}`);
}
const alias = major === '7' ? [{ find: /^ai(?=$|\/)/, replacement: 'ai-v7' }] : [];

// `eventsource-parser` (used by `ai`) publishes a `source` export condition pointing at
// TypeScript files; let vite transform it instead of handing it to Node.
export default mergeConfig(
  shared,
  defineConfig({
    resolve: { alias },
    test: {
      server: { deps: { inline: ['ai', /@ai-sdk\//, 'eventsource-parser'] } },
      // The type tests check against the same major as the run.
      typecheck: { tsconfig: major === '7' ? 'tsconfig.ai7.json' : 'tsconfig.json' },
    },
  }),
);
