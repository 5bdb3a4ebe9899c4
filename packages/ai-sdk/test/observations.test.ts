import { InMemoryStore, Memory } from '@engram/core';
import { generateText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { memoryStep } from '../src/index.ts';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function model(reply: string): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async () => ({
      content: [{ type: 'text', text: reply }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    }),
  });
}

const OBSERVED =
  '<observations>\nDate: 2026-12-01\n- 12:00 🔴 User stated their name is Sam.\n</observations>\n<working-memory>{"name":"Sam"}</working-memory>';

describe('memoryStep with observational memory', () => {
  it('puts the observations in system, shows the raw tail instead of the last messages, and lets the Observer keep working memory', async () => {
    const observer = model(OBSERVED);
    const memory = new Memory({
      storage: new InMemoryStore(),
      options: {
        lastMessages: 1,
        workingMemory: { schema: z.object({ name: z.string().optional() }) },
        observationalMemory: {
          model: observer,
          observation: { messageTokens: 60, bufferTokens: false, manageWorkingMemory: true },
        },
      },
    });
    const ids = { threadId: 't', resourceId: 'u' };
    const llm = model('noted');
    for (let i = 0; i < 3; i++) {
      const step = await memoryStep({
        memory,
        ...ids,
        input: `I am Sam, message ${i} ${'word '.repeat(30)}`,
      });
      expect(Object.keys(step.call.tools)).toEqual([]);
      await step.save(await generateText({ model: llm, ...step.call }));
    }
    const step = await memoryStep({ memory, ...ids, input: 'what is my name?' });
    expect(step.call.system).toContain('User stated their name is Sam.');
    expect(step.call.system).toContain('"name": "Sam"');
    expect(step.observations?.generation).toBe(1);
    expect(observer.doGenerateCalls.length).toBeGreaterThan(0);
    // everything not observed is shown, more than lastMessages would
    const tail = (await memory.observations?.inspect(ids))?.tail ?? [];
    expect(step.call.messages).toHaveLength(tail.length + 1);
    expect(step.call.messages.at(-1)).toEqual({ role: 'user', content: 'what is my name?' });
  });
});
