import { createLexicalEmbedder, Memory } from '@engram/core';
import { afterAll, describe, expect, it } from 'vitest';
import { UpstashStore } from '../src/index.ts';
import { runPrefix, upstashSkip } from './env.ts';
import { dropPrefix, testClient } from './stores.ts';

const prefix = runPrefix('vectors');
afterAll(async () => {
  if (!upstashSkip) await dropPrefix(prefix);
});

describe.skipIf(upstashSkip)(`upstash vectors${upstashSkip ? ` (skipped: ${upstashSkip})` : ''}`, () => {
  async function setup(vectorScanLimit?: number, sub = 'a') {
    const client = testClient();
    const store = new UpstashStore({ client, prefix: `${prefix}:${sub}`, vectorScanLimit });
    await store.init();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder({ dimensions: 32 }),
      options: { lastMessages: 0, semanticRecall: { mode: 'vector', topK: 10, messageRange: 0 } },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const saved = await memory.saveMessages({
      messages: ['apple pie', 'apple tart', 'apple cake', 'apple jam', 'apple juice'].map((content) => ({
        threadId: 't',
        resourceId: 'u',
        role: 'user' as const,
        content,
      })),
    });
    return { client, store, memory, saved };
  }

  it('keeps the packed float32 vector in its own hash; re-saving the message keeps it, deleting drops it', async () => {
    const { client, store, memory, saved } = await setup(undefined, 'layout');
    const key = `${prefix}:layout:vector:${saved[0]?.id}`;
    expect(await client.hget(key, 'space')).toBe('engram:lexical-32');
    expect(await client.hget(key, 'hash')).toMatch(/^[0-9a-f]{64}$/);
    expect(await client.hstrlen(key, 'vec')).toBe(32 * 4);
    await memory.saveMessages({ messages: [saved[0]!] });
    expect(await client.exists(key)).toBe(1);
    await store.deleteMessages([saved[0]!.id]);
    expect(await client.exists(key)).toBe(0);
    await memory.deleteThread('t');
    expect(await client.exists(`${prefix}:layout:vector:${saved[1]?.id}`)).toBe(0);
  });

  it('vectorScanLimit bounds a search to the newest messages of the scope', async () => {
    const { memory, saved } = await setup(3, 'bound');
    const { hits } = await memory.recall({ threadId: 'other', resourceId: 'u', query: 'apple' });
    expect(hits.map((h) => h.message.id).sort()).toEqual(
      saved
        .slice(2)
        .map((m) => m.id)
        .sort(),
    );
    const wide = await setup(undefined, 'wide');
    const all = await wide.memory.recall({ threadId: 'other', resourceId: 'u', query: 'apple' });
    expect(all.hits).toHaveLength(5);
  });

  it('stores the squared norm of each vector; one without it (an older write) scores the same', async () => {
    const { client, memory, saved } = await setup(undefined, 'norm');
    const key = `${prefix}:norm:vector:${saved[0]?.id}`;
    // Core stores unit vectors: the norm kept is 1 up to float32 rounding.
    expect(Math.abs(Number(await client.hget(key, 'xx')) - 1)).toBeLessThan(1e-5);
    const before = await memory.recall({ threadId: 'other', resourceId: 'u', query: 'apple pie' });
    for (const m of saved) await client.hdel(`${prefix}:norm:vector:${m.id}`, 'xx');
    const after = await memory.recall({ threadId: 'other', resourceId: 'u', query: 'apple pie' });
    expect(after.hits.map((h) => [h.message.id, h.score])).toEqual(
      before.hits.map((h) => [h.message.id, h.score]),
    );
    expect(after.hits).toHaveLength(5);
  });

  it("a layout upgrade indexes the threads holding each resource's messages, so a thread moved away before it is still searched", async () => {
    const { client, store, memory, saved } = await setup(undefined, 'moved');
    const p = `${prefix}:moved`;
    await store.saveThread({ ...(await store.getThreadById({ threadId: 't' }))!, resourceId: 'elsewhere' });
    const before = await memory.recall({ threadId: 'other', resourceId: 'u', query: 'apple' });
    expect(before.hits).toHaveLength(5);
    expect(await client.smembers(`${p}:resource-message-threads:u`)).toEqual(['t']);
    // The layout of version 3: no such set.
    await client.del(`${p}:resource-message-threads:u`);
    await client.set(`${p}:schema`, '3');
    const upgraded = new UpstashStore({ client, prefix: p });
    await upgraded.init();
    expect(await client.smembers(`${p}:resource-message-threads:u`)).toEqual(['t']);
    const vectors = upgraded.vectors!;
    const space = (await vectors.getSpace())!;
    const vector = new Float32Array(32).fill(1 / Math.sqrt(32));
    const hits = await vectors.searchVectors({ space, vector, topK: 10, resourceId: 'u' });
    expect(hits.map((h) => h.messageId).sort()).toEqual(saved.map((m) => m.id).sort());
    await upgraded.deleteThread({ threadId: 't' });
    expect(await client.exists(`${p}:resource-message-threads:u`)).toBe(0);
  });

  it('vectorScanLimit must be a positive integer', () => {
    expect(() => new UpstashStore({ client: testClient(), vectorScanLimit: 0 })).toThrow(/vectorScanLimit/);
  });
});
