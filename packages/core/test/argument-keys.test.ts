import { describe, expect, it } from 'vitest';
import { InMemoryStore, isMemoryError, Memory } from '../src/index.ts';
import { caught } from './support.ts';

/** Alice's and Bob's threads, each with a message, Bob's with thread-scoped working memory. */
async function twoTenants() {
  const storage = new InMemoryStore();
  const memory = new Memory({
    storage,
    options: { workingMemory: { enabled: true, scope: 'thread' }, semanticRecall: { mode: 'keyword' } },
  });
  await memory.createThread({ resourceId: 'alice', threadId: 'ta' });
  await memory.createThread({
    resourceId: 'bob',
    threadId: 'tb',
    metadata: { workingMemory: "bob's notes" },
  });
  await memory.saveMessages({
    messages: [
      { threadId: 'ta', resourceId: 'alice', role: 'user', content: 'alice likes tea' },
      { threadId: 'tb', resourceId: 'bob', role: 'user', content: 'bob likes tea' },
    ],
  });
  return { storage, memory };
}

/** The `INVALID_ARGUMENT` a call throws, with its message. */
async function refused(call: () => Promise<unknown>): Promise<string> {
  const error = await caught(call);
  if (!isMemoryError(error)) throw new Error(`expected a MemoryError, got ${String(error)}`);
  expect(error.code).toBe('INVALID_ARGUMENT');
  return error.message;
}

describe('argument keys', () => {
  it('a misspelt resourceId is refused, naming the key meant, where ignoring it would read another resource', async () => {
    const { memory } = await twoTenants();
    const wrong = { resourceID: 'alice' } as never;
    const calls: [string, () => Promise<unknown>][] = [
      ['listThreads', () => memory.listThreads(wrong)],
      ['getThreadById', () => memory.getThreadById({ threadId: 'tb', ...(wrong as object) } as never)],
      ['recall', () => memory.recall({ threadId: 'tb', ...(wrong as object) } as never)],
      ['getMessages', () => memory.getMessages({ threadId: 'tb', ...(wrong as object) } as never)],
      ['getWorkingMemory', () => memory.getWorkingMemory({ threadId: 'tb', ...(wrong as object) } as never)],
      ['generateTitle', () => memory.generateTitle({ threadId: 'tb', ...(wrong as object) } as never)],
      ['cloneThread', () => memory.cloneThread({ threadId: 'tb', ...(wrong as object) } as never)],
    ];
    for (const [operation, call] of calls) {
      const message = await refused(call);
      expect(message, operation).toContain(
        `unknown ${operation === 'getMessages' ? 'recall' : operation} argument resourceID`,
      );
      expect(message, operation).toContain('did you mean resourceId?');
    }
    // Nothing was written: still two threads, and no clone.
    expect((await memory.listThreads({ perPage: false })).threads.map((t) => t.id).sort()).toStrictEqual([
      'ta',
      'tb',
    ]);
  });

  it('a refused write leaves storage unchanged', async () => {
    const { memory } = await twoTenants();
    await refused(() => memory.createThread({ resourceId: 'alice', threadId: 'tc', titel: 'x' } as never));
    expect(await memory.getThreadById({ threadId: 'tc' })).toBeNull();
    await refused(() =>
      memory.updateWorkingMemory({ threadId: 'tb', resourceID: 'alice', workingMemory: 'mine' } as never),
    );
    expect(await memory.getWorkingMemory({ threadId: 'tb' })).toBe("bob's notes");
    await refused(() => memory.updateThread({ id: 'ta', tilte: 'x' } as never));
    expect((await memory.getThreadById({ threadId: 'ta' }))?.title).toBe('');
    const message = await refused(() => memory.importRecords([], { resourceID: 'alice' } as never));
    expect(message).toContain('unknown option options.resourceID; did you mean options.resourceId?');
  });

  it('a misspelt query is refused instead of answering with the history; query: undefined is the history', async () => {
    const { memory } = await twoTenants();
    const message = await refused(() =>
      memory.recall({ threadId: 'ta', resourceId: 'alice', qeury: 'tea' } as never),
    );
    expect(message).toContain('did you mean query?');
    const history = await memory.recall({ threadId: 'ta', resourceId: 'alice', query: undefined } as never);
    expect((history as unknown as { content: unknown }[]).map((m) => m.content)).toStrictEqual([
      'alice likes tea',
    ]);
    await refused(() =>
      memory.recall({ threadId: 'ta', resourceId: 'alice', query: undefined, topk: 2 } as never),
    );
    const { hits } = await memory.recall({ threadId: 'ta', resourceId: 'alice', query: 'tea', last: 0 });
    expect(hits.map((h) => h.message.content)).toStrictEqual(['alice likes tea']);
  });

  it('the storage refuses misspelt keys too, whoever calls it', async () => {
    const { storage } = await twoTenants();
    const message = await refused(() => storage.listThreads({ resourceID: 'alice' } as never));
    expect(message).toBe(
      'unknown listThreads argument resourceID; did you mean resourceId? (known: resourceId, metadata, dateRange, page, perPage, orderBy, direction)',
    );
    await refused(() =>
      storage.keywords!.search({ query: 'tea', topK: 3, resourceId: 'bob', threadID: 'tb' } as never),
    );
  });

  it("a date range's exclusive flags are booleans", async () => {
    const { storage } = await twoTenants();
    const start = new Date(0);
    expect(
      await refused(() => storage.listThreads({ dateRange: { start, startExclusive: 'yes' as never } })),
    ).toBe('dateRange.startExclusive must be a boolean, got the string "yes"');
    expect(
      await refused(() =>
        storage.listMessages({ threadId: 'ta', dateRange: { start, endExclusive: 0 as never } }),
      ),
    ).toBe('dateRange.endExclusive must be a boolean, got number 0');
    expect((await storage.listThreads({ dateRange: { start, startExclusive: false } })).total).toBe(2);
  });
});
