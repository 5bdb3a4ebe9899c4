import { InMemoryStore, Memory } from '@engram/core';
import { generateText } from 'ai';
import type { MockLanguageModelV3 } from 'ai/test';
import * as aiTest from 'ai/test';
import { describe, expect, it } from 'vitest';
import { memoryStep } from '../src/index.ts';

// As in generate-text.test.ts: MockLanguageModelV4 on `ai` 7, V3 on `ai` 6.
const aiTestExports: Record<string, unknown> = aiTest;
const MockModel = (aiTestExports.MockLanguageModelV4 ??
  aiTest.MockLanguageModelV3) as typeof MockLanguageModelV3;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function answering(text: string): MockLanguageModelV3 {
  return new MockModel({
    doGenerate: async () => ({
      content: [{ type: 'text', text }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    }),
  });
}

describe('options.threadTitle through memoryStep', () => {
  it('the first turn saved by step.save titles the new thread; a title given to memoryStep is kept', async () => {
    const titler = answering('Rye bread basics');
    const memory = new Memory({ storage: new InMemoryStore(), options: { threadTitle: { model: titler } } });
    const step = await memoryStep({ memory, threadId: 't1', resourceId: 'r', input: 'How do I bake rye?' });
    const result = await generateText({ model: answering('Use a sourdough starter.'), ...step.call });
    await step.save(result);
    expect((await memory.getThreadById({ threadId: 't1' }))?.title).toBe('Rye bread basics');
    const prompt = JSON.stringify(titler.doGenerateCalls[0]?.prompt);
    expect(prompt).toContain('How do I bake rye?');
    expect(prompt).toContain('Use a sourdough starter.');

    const named = await memoryStep({
      memory,
      threadId: 't2',
      resourceId: 'r',
      input: 'Hello',
      threadTitle: 'Chosen by the user',
    });
    await named.save(await generateText({ model: answering('Hi!'), ...named.call }));
    expect((await memory.getThreadById({ threadId: 't2' }))?.title).toBe('Chosen by the user');
    expect(titler.doGenerateCalls).toHaveLength(1);
  });
});
