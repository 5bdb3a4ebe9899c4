import { describe, expect, it } from 'vitest';
import { InMemoryStore, Memory } from '../src/index.ts';
import { uid } from './support.ts';

describe('Memory.addMessage', () => {
  it('saves one message with the resource of its thread; getMessages returns it', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    const threadId = uid('t');
    await memory.createThread({ threadId, resourceId: 'alice' });
    const first = await memory.addMessage({ threadId, role: 'user', content: 'Hi' });
    const second = await memory.addMessage({ threadId, role: 'assistant', content: 'Hello', type: 'text' });
    expect(first).toMatchObject({ threadId, resourceId: 'alice', role: 'user', content: 'Hi', type: 'text' });
    expect(first.createdAt.getTime()).toBeLessThan(second.createdAt.getTime());
    const last = await memory.getMessages({ threadId, last: 1 });
    expect(last).toStrictEqual([second]);
    expect(await memory.getMessages({ threadId, last: 10 })).toStrictEqual([first, second]);
  });

  it('refuses a missing thread (NOT_FOUND) and another resource (INVALID_ARGUMENT), saving nothing', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    const threadId = uid('t');
    await expect(memory.addMessage({ threadId, role: 'user', content: 'x' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await memory.createThread({ threadId, resourceId: 'alice' });
    await expect(
      memory.addMessage({ threadId, resourceId: 'mallory', role: 'user', content: 'x' }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(memory.addMessage({ threadId: '', role: 'user', content: 'x' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(memory.addMessage(null as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await memory.getMessages({ threadId })).toEqual([]);
    const same = await memory.addMessage({ threadId, resourceId: 'alice', role: 'user', content: 'ok' });
    expect(same.resourceId).toBe('alice');
  });
});
