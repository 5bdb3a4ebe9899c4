import { createLexicalEmbedder, InMemoryStore, Memory } from '@engram/core';
import { generateText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { memoryStep } from '../src/index.ts';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A model that answers every call with `reply`, and counts its calls. */
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

/** One whole turn as an application runs it: prepare, call the model, save. */
async function turn(memory: Memory, threadId: string, resourceId: string, llm: MockLanguageModelV3) {
  const step = await memoryStep({ memory, threadId, resourceId, input: `hi from ${resourceId}` });
  const result = await generateText({ model: llm, ...step.call });
  return step.save(result);
}

const random = () => Math.random().toString(36).slice(2);

describe('memoryStep: who owns a thread', () => {
  it('six resources starting one new thread id at once: one turn completes, the others get CONFLICT before their model call (5 rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const memory = new Memory({ storage: new InMemoryStore() });
      const threadId = `t-${random()}`;
      const tenants = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'].map((name) => `${name}-${random()}`);
      const models = tenants.map((tenant) => model(`hello ${tenant}`));
      const results = await Promise.allSettled(
        tenants.map((tenant, i) => turn(memory, threadId, tenant, models[i]!)),
      );
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      expect(won, `round ${round}: turns that completed`).toHaveLength(1);
      const winner = won[0]!;
      for (const [i, r] of results.entries()) {
        if (i === winner) continue;
        expect(r.status === 'rejected' && r.reason).toMatchObject({ name: 'MemoryError', code: 'CONFLICT' });
        expect(models[i]!.doGenerateCalls, `the model of ${tenants[i]} was never called`).toHaveLength(0);
      }
      expect((await memory.getThreadById({ threadId }))?.resourceId).toBe(tenants[winner]);
      const saved = await memory.recall({ threadId, last: false });
      expect(saved.map((m) => [m.resourceId, m.role])).toEqual([
        [tenants[winner], 'user'],
        [tenants[winner], 'assistant'],
      ]);
    }
  });

  it('two turns of one resource starting one new thread id at once both complete', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    const threadId = `t-${random()}`;
    const resourceId = `r-${random()}`;
    const results = await Promise.all([
      turn(memory, threadId, resourceId, model('one')),
      turn(memory, threadId, resourceId, model('two')),
    ]);
    expect(results.map((saved) => saved.length)).toEqual([2, 2]);
    expect((await memory.getThreadById({ threadId }))?.resourceId).toBe(resourceId);
    expect(await memory.recall({ threadId, last: false })).toHaveLength(4);
  });

  it("a thread of another resource is refused before the model is called, and the owner's thread is untouched", async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    const threadId = `t-${random()}`;
    await turn(memory, threadId, 'alice', model('hi alice'));
    const bobModel = model('hi bob');
    await expect(turn(memory, threadId, 'bob', bobModel)).rejects.toMatchObject({
      name: 'MemoryError',
      code: 'INVALID_ARGUMENT',
    });
    expect(bobModel.doGenerateCalls).toHaveLength(0);
    expect((await memory.getThreadById({ threadId }))?.resourceId).toBe('alice');
    expect((await memory.recall({ threadId, last: false })).map((m) => m.resourceId)).toEqual([
      'alice',
      'alice',
    ]);
  });

  it("refuses a thread of another resource with core's one ownership error, for look-alike resource ids", async () => {
    const memory = new Memory({
      storage: new InMemoryStore(),
      embedder: createLexicalEmbedder(),
      options: { semanticRecall: true, workingMemory: { enabled: true } },
    });
    const threadId = `t-${random()}`;
    await turn(memory, threadId, 'r1', model('hi r1'));
    for (const eve of ['r10', 'r', 'r1:', 'r1*', '%', "r1'", 'r1"']) {
      await memory.updateWorkingMemory({ resourceId: eve, workingMemory: `# ${eve}` });
      const eveModel = model(`hi ${eve}`);
      const error = await turn(memory, threadId, eve, eveModel).catch((e: unknown) => e);
      const core = await memory.getWorkingMemory({ threadId, resourceId: eve }).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'MemoryError', code: 'INVALID_ARGUMENT' });
      expect(core).toMatchObject({ name: 'MemoryError', code: 'INVALID_ARGUMENT' });
      const rule = `thread ${JSON.stringify(threadId)} does not belong to resource ${JSON.stringify(eve)}`;
      expect((error as Error).message).toBe(`memoryStep: ${rule}; nothing was returned or written`);
      expect((core as Error).message).toBe(`getWorkingMemory: ${rule}; nothing was returned or written`);
      expect(eveModel.doGenerateCalls).toHaveLength(0);
    }
    expect((await memory.recall({ threadId, last: false })).map((m) => m.resourceId)).toEqual(['r1', 'r1']);
  });
});
