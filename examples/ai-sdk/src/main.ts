/**
 * An assistant that remembers its user across conversations, with the Vercel AI SDK and engram.
 *
 * Turn 1 (thread A): the user introduces themselves; the model stores what it learns through the
 * `updateWorkingMemory` tool. Turn 2 (thread B, same user): the model answers from the working
 * memory alone, since thread B has no history. Semantic recall is on too: each turn's input is
 * embedded with OpenAI's `text-embedding-3-small`, and similar messages from the user's other
 * threads are added to the system prompt, labelled by thread.
 *
 *   OPENAI_API_KEY=sk-... pnpm --filter @engram/example-ai-sdk start
 *
 * Optional: OPENAI_MODEL (default gpt-4o-mini), OPENAI_BASE_URL (any OpenAI-compatible server).
 */
import { openai } from '@ai-sdk/openai';
import { memoryStep } from '@engram/ai-sdk';
import { InMemoryStore, Memory } from '@engram/core';
import { generateText, stepCountIs } from 'ai';

if (!process.env.OPENAI_API_KEY) {
  console.log(
    [
      'This example talks to a real model and needs an OpenAI API key:',
      '',
      '  OPENAI_API_KEY=sk-... pnpm --filter @engram/example-ai-sdk start',
      '',
      'Optional: OPENAI_MODEL (default gpt-4o-mini) and OPENAI_BASE_URL for an OpenAI-compatible server.',
      'Without a key nothing was run. The same flow runs offline, against the AI SDK mock model, in',
      'packages/ai-sdk/test/generate-text.test.ts (pnpm --filter @engram/ai-sdk test).',
    ].join('\n'),
  );
  process.exit(0);
}

const model = openai.chat(process.env.OPENAI_MODEL ?? 'gpt-4o-mini');

const memory = new Memory({
  storage: new InMemoryStore(), // or LibSQLStore / PostgresStore: both declare vectors
  // Any AI SDK embedding model; createLexicalEmbedder() from @engram/core works offline.
  embedder: openai.embedding('text-embedding-3-small'),
  options: {
    lastMessages: 20,
    semanticRecall: { topK: 3, messageRange: 1, scope: 'resource' },
    workingMemory: {
      enabled: true,
      scope: 'resource',
      template: `# User Profile
- **Name**:
- **Location**:
- **Interests**:
- **Preferences**:
`,
    },
  },
});

const resourceId = 'user-sam';
const instructions = 'You are a friendly personal assistant. Keep answers to two sentences.';

async function turn(threadId: string, input: string): Promise<void> {
  const step = await memoryStep({ memory, threadId, resourceId, instructions, input });
  const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(5) });
  await step.save(result);
  const calls = result.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName));
  console.log(`\n[${threadId}] user: ${input}`);
  console.log(`[${threadId}] assistant: ${result.text}`);
  console.log(`[${threadId}] tool calls: ${calls.length > 0 ? calls.join(', ') : 'none'}`);
  for (const hit of step.recall?.hits ?? []) {
    console.log(
      `[${threadId}] recalled from ${hit.threadId} (score ${hit.score.toFixed(2)}): ${JSON.stringify(hit.message.content)}`,
    );
  }
  console.log(
    `--- working memory of ${resourceId} ---\n${(await memory.getWorkingMemory({ resourceId })) ?? '(empty)'}`,
  );
}

await turn('thread-a', "Hi! I'm Sam, I live in Lisbon and I spend my weekends bouldering.");
await turn('thread-b', 'Where do I live, and what could I do this weekend?');
