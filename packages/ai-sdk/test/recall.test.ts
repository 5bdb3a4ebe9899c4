import { createLexicalEmbedder, InMemoryStore, Memory } from '@engram/core';
import { embedMany, generateText } from 'ai';
import { describe, expect, it } from 'vitest';
import { memoryStep } from '../src/index.ts';
import { textModel } from './text-model.ts';

describe('memoryStep with semantic recall', () => {
  it("adds a hit from the user's other thread to the model's system prompt, labelled by thread", async () => {
    const memory = new Memory({
      storage: new InMemoryStore(),
      embedder: createLexicalEmbedder(),
      options: { lastMessages: 4, semanticRecall: { topK: 2, messageRange: 1 } },
    });
    const first = await memoryStep({
      memory,
      threadId: 'trip',
      resourceId: 'sam',
      input: 'My dog Biscuit hates the car',
    });
    await first.save(
      await generateText({ model: textModel('Noted: Biscuit dislikes car rides.'), ...first.call }),
    );
    const other = await memoryStep({
      memory,
      threadId: 'chores',
      resourceId: 'sam',
      input: 'Remind me to buy milk',
    });
    await other.save(await generateText({ model: textModel('Will do.'), ...other.call }));

    const step = await memoryStep({
      memory,
      threadId: 'today',
      resourceId: 'sam',
      input: 'Can Biscuit come in the car?',
    });
    const llm = textModel('Maybe not.');
    await generateText({ model: llm, ...step.call });
    const system = llm.doGenerateCalls[0]?.prompt.find((m) => m.role === 'system')?.content as string;
    expect(system).toMatch(/From another conversation \(thread "trip"\):/);
    expect(system).toMatch(/user: "My dog Biscuit hates the car/);
    expect(system).not.toMatch(/buy milk/);
    expect(step.recall?.hits[0]?.threadId).toBe('trip');
    expect(step.recall?.usage.tokens).toBeGreaterThan(0);
  });

  it('the lexical embedder works with the AI SDK embedMany', async () => {
    const { embeddings } = await embedMany({
      model: createLexicalEmbedder({ dimensions: 16 }),
      values: ['a b', 'c'],
    });
    expect(embeddings).toHaveLength(2);
    expect(embeddings[0]).toHaveLength(16);
  });
});
