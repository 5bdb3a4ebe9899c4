import { MemoryError } from '@engram/core';
import { Redis } from '@upstash/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { UpstashStore } from '../src/index.ts';
import { runPrefix, upstashSkip } from './env.ts';
import { dropPrefix, testClient } from './stores.ts';

const prefix = runPrefix('shape');

describe('UpstashStore with an injected client recognised by shape', () => {
  afterAll(async () => {
    if (!upstashSkip) await dropPrefix(prefix);
  });

  it.skipIf(upstashSkip)(
    `accepts a client from another copy of @upstash/redis (same method, other class) and works against the server${upstashSkip ? ` (skipped: ${upstashSkip})` : ''}`,
    async () => {
      const real = testClient();
      // What a second copy of `@upstash/redis` in the tree hands over: a different object, same method.
      const foreign = { createScript: (source: string) => real.createScript(source) };
      expect(foreign instanceof Redis).toBe(false);
      const store = new UpstashStore({ client: foreign as unknown as Redis, prefix });
      const at = new Date();
      const thread = {
        id: 't-shape',
        resourceId: 'r-shape',
        title: 'A',
        metadata: {},
        createdAt: at,
        updatedAt: at,
      };
      await store.saveThread(thread);
      await store.saveMessages([
        {
          id: 'm-shape',
          threadId: thread.id,
          resourceId: thread.resourceId,
          role: 'user',
          content: 'hi',
          type: 'text',
          createdAt: at,
        },
      ]);
      expect((await store.listMessages({ threadId: thread.id })).messages.map((m) => m.id)).toEqual([
        'm-shape',
      ]);
      expect(
        await new UpstashStore({ client: real, prefix }).getThreadById({ threadId: 't-shape' }),
      ).toMatchObject({
        title: 'A',
      });
    },
  );

  it.each([
    ['a REST URL', 'https://example.upstash.io', 'got string'],
    ['client options instead of a client', { url: 'https://x', token: 't' }, 'lacks createScript()'],
    ['null', null, 'got null'],
  ])('refuses %s as client, naming what is missing', (_name, client, text) => {
    const create = () => new UpstashStore({ client: client as unknown as Redis });
    expect(create).toThrow(MemoryError);
    expect(create).toThrow('upstash: client must be a Redis client of @upstash/redis');
    expect(create).toThrow(text);
    expect(create).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
