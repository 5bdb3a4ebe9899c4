import { createHash } from 'node:crypto';
import { InMemoryStore, Memory, MemoryError } from '@engram/core';
import { generateText } from 'ai';
import { describe, expect, it, vi } from 'vitest';
import { memoryStep } from '../src/index.ts';
import { textModel } from './text-model.ts';

async function turn(memory: Memory, threadId: string, input: string, answer: string) {
  const step = await memoryStep({ memory, threadId, resourceId: 'sam', input });
  const saved = await step.save(await generateText({ model: textModel(answer), ...step.call }));
  return { step, saved };
}

describe('turn records (options.turnRecords)', () => {
  it('keep, per saved turn, the history window, recall hits with scores, the memory shown and token counts', async () => {
    const memory = new Memory({
      storage: new InMemoryStore(),
      options: {
        lastMessages: 2,
        semanticRecall: { mode: 'keyword', topK: 2, messageRange: 0 },
        workingMemory: { template: '# Sam\n- Dog:' },
        turnRecords: true,
      },
    });
    await turn(memory, 'trip', 'My dog Biscuit hates the car', 'Noted.');
    await memory.updateWorkingMemory({
      threadId: 'trip',
      resourceId: 'sam',
      workingMemory: '# Sam\n- Dog: Biscuit',
    });
    const second = await turn(memory, 'today', 'Hello there', 'Hi!');
    const third = await turn(memory, 'today', 'Can Biscuit come in the car?', 'Maybe not.');

    const records = await memory.listTurns({ threadId: 'today' });
    expect(records.map((r) => r.id)).toEqual([third.saved[0]!.id, second.saved[0]!.id]);
    const [record] = records;
    expect(record!.messageIds).toEqual(third.saved.map((m) => m.id));
    // The window the model got: the two messages of the turn before, not this turn's input.
    expect(record!.history).toEqual(second.saved.map((m) => m.id));
    expect(record!.recall?.mode).toBe('keyword');
    const hits = third.step.recall!.hits;
    expect(hits.length).toBeGreaterThan(0);
    expect(record!.recall?.hits).toEqual(
      hits.map((hit) => ({
        messageId: hit.message.id,
        threadId: hit.threadId,
        score: hit.score,
        scores: hit.scores,
        window: hit.window.map((m) => m.id),
      })),
    );
    expect(record!.recall?.hits[0]?.threadId).toBe('trip');
    expect(record!.workingMemory).toEqual({
      scope: 'resource',
      sha256: createHash('sha256').update('# Sam\n- Dog: Biscuit').digest('hex'),
      chars: '# Sam\n- Dog: Biscuit'.length,
    });
    expect(record!.observations).toBeNull();
    expect(record!.tokens.system).toBeGreaterThan(record!.tokens.input);
    expect(record!.tokens.history).toBeGreaterThan(0);
    expect(record!.tokens.input).toBeGreaterThan(0);
    // No content is copied into a record.
    expect(JSON.stringify(records)).not.toMatch(/Biscuit/);

    expect(await memory.getTurn({ turnId: record!.id, resourceId: 'sam' })).toEqual(record);
    expect(await memory.getTurn({ turnId: record!.id, resourceId: 'someone-else' })).toBeNull();
    expect(await memory.listTurns({ threadId: 'today', limit: 1, before: record })).toEqual([records[1]]);

    // A record goes with its thread.
    await memory.deleteThread('today');
    expect(await memory.listTurns({ threadId: 'today' })).toEqual([]);
    expect(await memory.listTurns({ threadId: 'trip' })).toHaveLength(1);
  });

  it('are not kept unless asked for', async () => {
    const storage = new InMemoryStore();
    const memory = new Memory({ storage, options: { lastMessages: 2 } });
    await turn(memory, 't', 'Hello', 'Hi');
    expect(await memory.listTurns({ threadId: 't' })).toEqual([]);
  });

  it('need a storage with the turns domain, and a failed record leaves the turn saved', async () => {
    expect(
      () => new Memory({ storage: new InMemoryStore({ turns: false }), options: { turnRecords: true } }),
    ).toThrow(/options\.turnRecords needs a storage with turn records/);
    expect(
      () => new Memory({ storage: new InMemoryStore(), options: { turnRecords: 'yes' as never } }),
    ).toThrow(MemoryError);

    const storage = new InMemoryStore();
    const memory = new Memory({ storage, options: { turnRecords: true } });
    vi.spyOn(storage.turns!, 'put').mockRejectedValueOnce(new Error('disk full'));
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const { saved } = await turn(memory, 't', 'Hello', 'Hi');
      expect(saved).toHaveLength(2);
      expect(warn).toHaveBeenCalledWith(
        'engram: the turn record was not written; the turn is saved',
        expect.any(Error),
      );
      expect((await memory.getMessages({ threadId: 't' })).map((m) => m.id)).toEqual(saved.map((m) => m.id));
    } finally {
      warn.mockRestore();
    }
  });
});
