import { defineConfig, mergeConfig } from 'vitest/config';
import { shared } from '../../vitest.shared.ts';

// The observational-memory tests use the AI SDK's mock models (`ai/test`); `eventsource-parser`
// (used by `ai`) publishes a `source` export condition pointing at TypeScript files: let vite
// transform it instead of handing it to Node.
export default mergeConfig(
  shared,
  defineConfig({ test: { server: { deps: { inline: ['ai', /@ai-sdk\//, 'eventsource-parser'] } } } }),
);
