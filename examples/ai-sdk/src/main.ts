/**
 * An assistant that remembers its user across conversations, with the Vercel AI SDK and engram
 * (the conversation is in src/agent.ts).
 *
 *   OPENAI_API_KEY=sk-... pnpm --filter @engram/example-ai-sdk start
 *   pnpm --filter @engram/example-ai-sdk start --mock     # no key: the AI SDK's mock model
 *
 * Optional: OPENAI_MODEL (default gpt-4o-mini), OPENAI_BASE_URL (any OpenAI-compatible server);
 * ENGRAM_DB_URL (e.g. file:./memory.db) stores the memory with libSQL instead of in memory.
 */
import type { MemoryStorage } from '@engram/core';
import type { LanguageModel } from 'ai';
import { converse } from './agent.ts';
import { mockModel } from './mock-model.ts';

async function pickModel(): Promise<LanguageModel | null> {
  if (process.argv.includes('--mock')) return mockModel();
  if (!process.env.OPENAI_API_KEY) return null;
  const { openai } = await import('@ai-sdk/openai');
  return openai.chat(process.env.OPENAI_MODEL ?? 'gpt-4o-mini');
}

const model = await pickModel();
if (!model) {
  console.log(
    [
      'This example talks to a real model and needs an OpenAI API key:',
      '',
      '  OPENAI_API_KEY=sk-... pnpm --filter @engram/example-ai-sdk start',
      '',
      'Optional: OPENAI_MODEL (default gpt-4o-mini) and OPENAI_BASE_URL for an OpenAI-compatible server.',
      'Without a key nothing was run. The same flow runs offline against the AI SDK mock model:',
      '',
      '  pnpm --filter @engram/example-ai-sdk start --mock',
    ].join('\n'),
  );
  process.exit(0);
}
async function pickStorage(): Promise<MemoryStorage | undefined> {
  const url = process.env.ENGRAM_DB_URL;
  if (!url) return undefined;
  const { LibSQLStore } = await import('@engram/libsql');
  const storage = new LibSQLStore({ url });
  await storage.init();
  return storage;
}

const storage = await pickStorage();
try {
  await converse(model, { storage });
} finally {
  await storage?.close();
}
