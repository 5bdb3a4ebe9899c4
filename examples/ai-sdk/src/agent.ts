/**
 * The example's conversation, for any AI SDK model: turn 1 (thread A) the user introduces
 * themselves and the model stores what it learns with `updateWorkingMemory`; turn 2 (thread B,
 * same user, no history) the model answers from the working memory alone.
 */
import { memoryStep } from '@engram/ai-sdk';
import { InMemoryStore, Memory, type MemoryStorage } from '@engram/core';
import { generateText, type LanguageModel, stepCountIs } from 'ai';

export const TEMPLATE = `# User Profile
- **Name**:
- **Location**:
- **Interests**:
- **Preferences**:
`;

const resourceId = 'user-sam';
const instructions = 'You are a friendly personal assistant. Keep answers to two sentences.';

/**
 * Runs both turns against `model` on `storage` (default: in memory), printing each answer, the
 * tool calls and the stored working memory.
 */
export async function converse(
  model: LanguageModel,
  {
    storage = new InMemoryStore(),
    log = console.log,
  }: { storage?: MemoryStorage; log?: (line: string) => void } = {},
) {
  const memory = new Memory({
    storage,
    options: { lastMessages: 20, workingMemory: { enabled: true, scope: 'resource', template: TEMPLATE } },
  });

  async function turn(threadId: string, input: string): Promise<string> {
    const step = await memoryStep({ memory, threadId, resourceId, instructions, input });
    const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(5) });
    await step.save(result);
    const calls = result.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName));
    log(`\n[${threadId}] user: ${input}`);
    log(`[${threadId}] assistant: ${result.text}`);
    log(`[${threadId}] tool calls: ${calls.length > 0 ? calls.join(', ') : 'none'}`);
    const notes = await memory.getWorkingMemory({ resourceId });
    log(`--- working memory of ${resourceId} ---\n${notes ?? '(empty)'}`);
    return result.text;
  }

  const first = await turn('thread-a', "Hi! I'm Sam, I live in Lisbon and I spend my weekends bouldering.");
  const second = await turn('thread-b', 'Where do I live, and what could I do this weekend?');
  return { first, second, memory: await memory.getWorkingMemory({ resourceId }) };
}
