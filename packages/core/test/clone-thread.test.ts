import { describe, expect, it } from 'vitest';
import {
  CLONE_PAGE,
  createLexicalEmbedder,
  InMemoryStore,
  isMemoryError,
  Memory,
  type Message,
} from '../src/index.ts';
import { caught } from './support.ts';

const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i));

async function seeded(count: number, memory = new Memory({ storage: new InMemoryStore() })) {
  const source = await memory.createThread({
    resourceId: 'r',
    threadId: 'src',
    title: 'Trip',
    metadata: { workingMemory: '# plan', tag: 'x' },
  });
  const messages: Message[] = [];
  for (let start = 0; start < count; start += 100) {
    const batch = Array.from({ length: Math.min(100, count - start) }, (_, j) => {
      const i = start + j;
      return {
        id: `m${String(i).padStart(4, '0')}`,
        threadId: 'src',
        resourceId: 'r',
        role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: i % 3 === 0 ? { format: 2, parts: [{ type: 'text', text: `part ${i}` }] } : `text ${i}`,
        // Pairs share a createdAt: ties are ordered by id, and the copies keep that order.
        createdAt: at(Math.floor(i / 2)),
      };
    });
    messages.push(...(await memory.saveMessages({ messages: batch })));
  }
  return { memory, source, messages };
}

describe('Memory.cloneThread', () => {
  it('copies every message exactly (new ids, same order, dates and content) with the working memory', async () => {
    const { memory, source, messages } = await seeded(7);
    const { thread, clonedMessageIds, messageIdMap } = await memory.cloneThread({
      threadId: 'src',
      newThreadId: 'copy',
    });
    expect(thread).toMatchObject({
      id: 'copy',
      resourceId: 'r',
      title: 'Trip',
      metadata: { workingMemory: '# plan', tag: 'x', clonedFrom: { threadId: 'src', messageId: 'm0006' } },
    });
    const copies = await memory.getMessages({ threadId: 'copy', last: false });
    expect(copies.map((m) => m.id)).toStrictEqual(clonedMessageIds);
    expect(copies.map(({ id: _i, threadId: _t, ...rest }) => rest)).toStrictEqual(
      messages.map(({ id: _i, threadId: _t, ...rest }) => rest),
    );
    expect(new Set(clonedMessageIds).size).toBe(7);
    for (const m of messages) expect(messageIdMap[m.id]).not.toBe(m.id);
    expect(await memory.getThreadById({ threadId: 'src' })).toStrictEqual({
      ...source,
      updatedAt: expect.any(Date),
    });
    expect(await memory.getMessages({ threadId: 'src', last: false })).toStrictEqual(messages);
  });

  it('stops at upToMessageId, inclusive, and records it; title and metadata can be set', async () => {
    const { memory } = await seeded(6);
    const { thread, clonedMessageIds } = await memory.cloneThread({
      threadId: 'src',
      resourceId: 'r',
      upToMessageId: 'm0002',
      title: 'Branch',
      metadata: { tag: 'y' },
    });
    expect(thread.title).toBe('Branch');
    expect(thread.metadata).toStrictEqual({
      workingMemory: '# plan',
      tag: 'y',
      clonedFrom: { threadId: 'src', messageId: 'm0002' },
    });
    const copies = await memory.getMessages({ threadId: thread.id, last: false });
    expect(copies.map((m) => m.content)).toStrictEqual([
      { format: 2, parts: [{ type: 'text', text: 'part 0' }] },
      'text 1',
      'text 2',
    ]);
    expect(clonedMessageIds).toHaveLength(3);
  });

  it('copies a thread longer than a page, page by page', async () => {
    const count = CLONE_PAGE * 2 + 3;
    const { memory, messages } = await seeded(count);
    const upTo = messages[CLONE_PAGE + 1] as Message;
    const all = await memory.cloneThread({ threadId: 'src' });
    expect(all.clonedMessageIds).toHaveLength(count);
    const part = await memory.cloneThread({ threadId: 'src', upToMessageId: upTo.id });
    expect(part.clonedMessageIds).toHaveLength(CLONE_PAGE + 2);
    const copies = await memory.getMessages({ threadId: part.thread.id, last: false });
    expect(copies.at(-1)?.content).toStrictEqual(upTo.content);
  });

  it('copies every message stored all along while others of the source are deleted', async () => {
    const count = CLONE_PAGE * 2 + 3;
    const { memory, messages } = await seeded(count);
    const storage = memory.storage;
    const save = storage.saveMessages;
    const deleted = [messages[5]?.id, messages[CLONE_PAGE + 1]?.id] as string[];
    let batches = 0;
    storage.saveMessages = async (batch) => {
      const saved = await save.call(storage, batch);
      // After the first page's copies: one source message already copied, one not yet read.
      if (++batches === 1) await storage.deleteMessages(deleted);
      return saved;
    };
    const clone = await memory.cloneThread({ threadId: 'src' });
    // Before: the second page began past the message that came after the first page.
    expect(Object.keys(clone.messageIdMap)).toEqual(
      messages.map((m) => m.id).filter((id) => id !== deleted[1]),
    );
  });

  it('clones an empty thread with messageId null', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    await memory.createThread({ resourceId: 'r', threadId: 'empty' });
    const { thread, clonedMessageIds } = await memory.cloneThread({ threadId: 'empty' });
    expect(thread.metadata.clonedFrom).toStrictEqual({ threadId: 'empty', messageId: null });
    expect(clonedMessageIds).toStrictEqual([]);
  });

  it('refuses with NOT_FOUND, INVALID_ARGUMENT or CONFLICT and writes nothing', async () => {
    const { memory } = await seeded(3);
    await memory.createThread({ resourceId: 'r', threadId: 'other' });
    await memory.saveMessages({
      messages: [{ id: 'o1', threadId: 'other', resourceId: 'r', role: 'user', content: 'x' }],
    });
    const before = await memory.listThreads({ perPage: false });
    const cases: [unknown, string][] = [
      [{ threadId: 'nope' }, 'NOT_FOUND'],
      [{ threadId: 'src', upToMessageId: 'o1' }, 'INVALID_ARGUMENT'],
      [{ threadId: 'src', upToMessageId: 'missing' }, 'INVALID_ARGUMENT'],
      [{ threadId: 'src', resourceId: 'mallory' }, 'INVALID_ARGUMENT'],
      [{ threadId: 'src', newThreadId: 'other' }, 'CONFLICT'],
      [{ threadId: 'src', newThreadId: 'src' }, 'CONFLICT'],
      [{ threadId: { $gt: '' } }, 'INVALID_ARGUMENT'],
      [{ threadId: 'src', newThreadId: '' }, 'INVALID_ARGUMENT'],
      [{ threadId: 'src', title: 3 }, 'INVALID_ARGUMENT'],
      [{ threadId: 'src', metadata: [] }, 'INVALID_ARGUMENT'],
      [null, 'INVALID_ARGUMENT'],
    ];
    for (const [args, code] of cases) {
      const error = await caught(() => memory.cloneThread(args as never));
      expect(isMemoryError(error, code as never), `${JSON.stringify(args)} → ${String(error)}`).toBe(true);
    }
    expect(await memory.listThreads({ perPage: false })).toStrictEqual(before);
    expect(await memory.getMessages({ threadId: 'other', last: false })).toHaveLength(1);
  });

  it('indexes the copies, so semantic recall finds them in the clone', async () => {
    const memory = new Memory({
      storage: new InMemoryStore(),
      embedder: createLexicalEmbedder(),
      options: {
        lastMessages: 1,
        semanticRecall: { mode: 'vector', topK: 1, messageRange: 0, scope: 'thread' },
      },
    });
    await seeded(5, memory);
    await memory.saveMessages({
      messages: [{ threadId: 'src', resourceId: 'r', role: 'user', content: 'the zebra crossing in Lisbon' }],
    });
    const { thread } = await memory.cloneThread({ threadId: 'src' });
    await memory.saveMessages({
      messages: [{ threadId: thread.id, resourceId: 'r', role: 'user', content: 'latest' }],
    });
    const found = await memory.recall({ threadId: thread.id, resourceId: 'r', query: 'zebra Lisbon' });
    expect(found.hits.map((h) => [h.threadId, h.message.content])).toContainEqual([
      thread.id,
      'the zebra crossing in Lisbon',
    ]);
  });

  it("gives the copies the sources' stored vectors instead of embedding their text again", async () => {
    const embedder = createLexicalEmbedder();
    const memory = new Memory({
      storage: new InMemoryStore(),
      embedder,
      options: { semanticRecall: { mode: 'vector', topK: 3, messageRange: 0, scope: 'thread' } },
    });
    const { messages } = await seeded(CLONE_PAGE + 5, memory);
    const before = memory.embeddingUsage();
    const { thread, messageIdMap } = await memory.cloneThread({ threadId: 'src' });
    expect(memory.embeddingUsage()).toEqual(before);
    const vectors = memory.storage.vectors!;
    const space = (await vectors.getSpace())!;
    const copied = await vectors.readVectors!(space, Object.values(messageIdMap));
    const sources = await vectors.readVectors!(
      space,
      messages.map((m) => m.id),
    );
    expect(copied).toHaveLength(messages.length);
    const byId = new Map(sources.map((v) => [v.messageId, v]));
    for (const [from, to] of Object.entries(messageIdMap)) {
      const copy = copied.find((v) => v.messageId === to)!;
      expect(copy.hash).toBe(byId.get(from)!.hash);
      expect([...copy.vector]).toEqual([...byId.get(from)!.vector]);
    }
    const found = await memory.recall({ threadId: thread.id, resourceId: 'r', query: 'part 99' });
    expect(found.hits[0]?.message.content).toEqual({ format: 2, parts: [{ type: 'text', text: 'part 99' }] });
    expect(found.hits[0]?.threadId).toBe(thread.id);
  });

  it('refuses a metadata.workingMemory override under readOnly', async () => {
    const memory = new Memory({ storage: new InMemoryStore(), options: { readOnly: true } });
    await memory.createThread({ resourceId: 'r', threadId: 'src' });
    const error = await caught(() =>
      memory.cloneThread({ threadId: 'src', metadata: { workingMemory: 'x' } }),
    );
    expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
  });
});
