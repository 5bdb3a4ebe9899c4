import { describe, expect, it } from 'vitest';
import { InMemoryStore, isMemoryError, Memory, type MessageInput } from '../src/index.ts';
import { caught, uid } from './support.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function fresh(lastMessages?: number | false) {
  return new Memory({
    storage: new InMemoryStore(),
    options: lastMessages === undefined ? {} : { lastMessages },
  });
}

describe('Memory threads', () => {
  it('createThread fills in a UUID, an empty title and metadata, and dates', async () => {
    const memory = fresh();
    const thread = await memory.createThread({ resourceId: 'r' });
    expect(thread.id).toMatch(UUID);
    expect(thread).toMatchObject({ resourceId: 'r', title: '', metadata: {} });
    expect(thread.createdAt).toBeInstanceOf(Date);
    expect(await memory.getThreadById({ threadId: thread.id })).toStrictEqual(thread);
    expect(await memory.getThreadById({ threadId: thread.id, resourceId: 'other' })).toBeNull();
  });

  it('createThread keeps a given id, title and metadata', async () => {
    const memory = fresh();
    const thread = await memory.createThread({
      resourceId: 'r',
      threadId: 't-1',
      title: 'Hi',
      metadata: { a: [1] },
    });
    expect(thread).toMatchObject({ id: 't-1', title: 'Hi', metadata: { a: [1] } });
  });

  it.each([
    ['the same resource', 'alice'],
    ['another resource', 'mallory'],
  ])(
    'createThread refuses an existing id (%s) with CONFLICT, changing nothing',
    async (_name, resourceId) => {
      const memory = fresh();
      const original = await memory.createThread({
        resourceId: 'alice',
        threadId: 't',
        metadata: { workingMemory: 'secret' },
      });
      const error = await caught(() => memory.createThread({ resourceId, threadId: 't', title: 'again' }));
      expect(isMemoryError(error, 'CONFLICT')).toBe(true);
      expect((error as Error).message).not.toMatch(/alice/);
      expect(await memory.getThreadById({ threadId: 't' })).toStrictEqual(original);
    },
  );

  it.each([
    ['a missing resourceId', { resourceId: undefined }],
    ['an operator object as threadId', { resourceId: 'r', threadId: { $gt: '' } }],
    ['a numeric title', { resourceId: 'r', title: 3 }],
    ['non-JSON metadata', { resourceId: 'r', metadata: { d: new Date() } }],
    ['a non-string metadata.workingMemory', { resourceId: 'r', metadata: { workingMemory: { a: 1 } } }],
  ])('createThread refuses %s with INVALID_ARGUMENT', async (_name, args) => {
    const memory = fresh();
    const error = await caught(() => memory.createThread(args as unknown as { resourceId: string }));
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((await memory.listThreads()).total).toBe(0);
  });

  it('updateThread shallow-merges metadata, keeps the title, and is NOT_FOUND for absent threads', async () => {
    const memory = fresh();
    const thread = await memory.createThread({ resourceId: 'r', title: 'T', metadata: { a: 1, b: 2 } });
    const updated = await memory.updateThread({ id: thread.id, metadata: { b: 3, c: 4 } });
    expect(updated).toMatchObject({ title: 'T', metadata: { a: 1, b: 3, c: 4 } });
    expect(
      isMemoryError(await caught(() => memory.updateThread({ id: 'missing', title: 'x' })), 'NOT_FOUND'),
    ).toBe(true);
  });

  it('listThreads and deleteThread pass through; deleting removes the messages', async () => {
    const memory = fresh();
    const a = await memory.createThread({ resourceId: 'r' });
    await memory.createThread({ resourceId: 'r' });
    await memory.createThread({ resourceId: 'other' });
    await memory.saveMessages({
      messages: [{ threadId: a.id, resourceId: 'r', role: 'user', content: 'hi' }],
    });
    expect((await memory.listThreads({ resourceId: 'r' })).total).toBe(2);
    await memory.deleteThread(a.id);
    expect(await memory.getThreadById({ threadId: a.id })).toBeNull();
    expect(await memory.recall({ threadId: a.id })).toStrictEqual([]);
    expect((await memory.listThreads({ resourceId: 'r' })).total).toBe(1);
  });
});

describe('Memory messages', () => {
  async function withThread(memory: Memory) {
    const resourceId = uid('r');
    const thread = await memory.createThread({ resourceId });
    const msg = (content: string, extra: Partial<MessageInput> = {}): MessageInput => ({
      threadId: thread.id,
      resourceId,
      role: 'user',
      content,
      ...extra,
    });
    return { resourceId, threadId: thread.id, msg };
  }

  it('fills in ids, type and strictly increasing createdAt within a batch', async () => {
    const memory = fresh();
    const { msg } = await withThread(memory);
    const saved = await memory.saveMessages({ messages: Array.from({ length: 50 }, (_, i) => msg(`m${i}`)) });
    expect(saved).toHaveLength(50);
    for (const m of saved) {
      expect(m.id).toMatch(UUID);
      expect(m.type).toBe('text');
    }
    for (let i = 1; i < saved.length; i++) {
      expect(saved[i]!.createdAt.getTime()).toBeGreaterThan(saved[i - 1]!.createdAt.getTime());
    }
  });

  it('saves only the message fields', async () => {
    const memory = fresh();
    const { msg } = await withThread(memory);
    const input = { ...msg('x'), extra: 'dropped' } as MessageInput;
    const [saved] = await memory.saveMessages({ messages: [input] });
    expect(Object.keys(saved!).sort()).toStrictEqual([
      'content',
      'createdAt',
      'id',
      'resourceId',
      'role',
      'threadId',
      'type',
    ]);
  });

  it('keeps given ids, types and dates; later batches sort after earlier ones', async () => {
    const memory = fresh(false);
    const { threadId, msg } = await withThread(memory);
    const fixed = new Date('2020-01-01T00:00:00.000Z');
    const [given] = await memory.saveMessages({
      messages: [msg('old', { id: 'm-old', type: 'v2', createdAt: fixed })],
    });
    expect(given).toMatchObject({ id: 'm-old', type: 'v2', createdAt: fixed });
    await memory.saveMessages({ messages: [msg('a'), msg('b')] });
    await memory.saveMessages({ messages: [msg('c')] });
    expect((await memory.recall({ threadId })).map((m) => m.content)).toStrictEqual(['old', 'a', 'b', 'c']);
  });

  it('recall returns the newest `last` messages in chronological order (default lastMessages)', async () => {
    const memory = fresh(3);
    const { threadId, resourceId, msg } = await withThread(memory);
    await memory.saveMessages({ messages: ['1', '2', '3', '4', '5'].map((c) => msg(c)) });
    expect((await memory.recall({ threadId })).map((m) => m.content)).toStrictEqual(['3', '4', '5']);
    expect((await memory.recall({ threadId, last: 2 })).map((m) => m.content)).toStrictEqual(['4', '5']);
    expect(
      (await memory.getMessages({ threadId, resourceId, last: 10 })).map((m) => m.content),
    ).toStrictEqual(['1', '2', '3', '4', '5']);
    expect((await memory.recall({ threadId, last: false })).map((m) => m.content)).toHaveLength(5);
    expect(await memory.recall({ threadId, last: 0 })).toStrictEqual([]);
    await expect(memory.recall({ threadId, resourceId: 'someone-else' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('the default lastMessages is 10', async () => {
    const memory = fresh();
    const { threadId, msg } = await withThread(memory);
    await memory.saveMessages({ messages: Array.from({ length: 15 }, (_, i) => msg(String(i))) });
    const recent = await memory.recall({ threadId });
    expect(recent.map((m) => m.content)).toStrictEqual([
      '5',
      '6',
      '7',
      '8',
      '9',
      '10',
      '11',
      '12',
      '13',
      '14',
    ]);
  });

  it('is all-or-nothing: an unknown thread is NOT_FOUND and nothing is saved', async () => {
    const memory = fresh();
    const { threadId, resourceId, msg } = await withThread(memory);
    const error = await caught(() =>
      memory.saveMessages({
        messages: [msg('ok'), { threadId: 'missing', resourceId, role: 'user', content: 'x' }],
      }),
    );
    expect(isMemoryError(error, 'NOT_FOUND')).toBe(true);
    expect(await memory.recall({ threadId })).toStrictEqual([]);
  });

  it.each([
    ['not an array', { messages: 'x' }],
    ['a non-object message', { messages: [1] }],
    ['a bad role', { messages: [{ threadId: 't', resourceId: 'r', role: 'bot', content: 'x' }] }],
    [
      'a bad createdAt',
      { messages: [{ threadId: 't', resourceId: 'r', role: 'user', content: 'x', createdAt: 'now' }] },
    ],
  ])('refuses %s with INVALID_ARGUMENT', async (_name, args) => {
    const memory = fresh();
    const error = await caught(() => memory.saveMessages(args as unknown as { messages: MessageInput[] }));
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('recall refuses a bad last', async () => {
    const memory = fresh();
    expect(
      isMemoryError(await caught(() => memory.recall({ threadId: 't', last: -1 })), 'INVALID_ARGUMENT'),
    ).toBe(true);
  });
});
