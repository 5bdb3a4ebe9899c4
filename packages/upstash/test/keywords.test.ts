import type { Message, Thread } from '@engram/core';
import { afterAll, describe, expect, it } from 'vitest';
import { UpstashStore } from '../src/index.ts';
import { runPrefix, upstashSkip } from './env.ts';
import { dropPrefix, keysMatching, testClient } from './stores.ts';

const prefix = runPrefix('keywords');
afterAll(async () => {
  if (!upstashSkip) await dropPrefix(prefix);
});

const day = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n));
const thread = (id: string, resourceId: string): Thread => ({
  id,
  resourceId,
  title: '',
  metadata: {},
  createdAt: day(0),
  updatedAt: day(0),
});
const message = (id: string, t: Thread, content: string, n: number): Message => ({
  id,
  threadId: t.id,
  resourceId: t.resourceId,
  role: 'user',
  type: 'v2',
  content,
  createdAt: day(n),
});

/** A hash read raw (the test client keeps HGETALL's flat list) as an object. */
async function hash(key: string): Promise<Record<string, string>> {
  const flat = ((await testClient().hgetall(key)) ?? []) as unknown as string[];
  return Object.fromEntries(flat.flatMap((v, i) => (i % 2 === 0 ? [[v, flat[i + 1] ?? '']] : [])));
}

async function open(sub: string, onBackfillProgress?: (progress: unknown) => void) {
  const store = new UpstashStore({ client: testClient(), prefix: `${prefix}:${sub}`, onBackfillProgress });
  await store.init();
  return store;
}

async function seed(store: UpstashStore, resourceId: string, texts: readonly string[]) {
  const t = thread(`${resourceId}-t`, resourceId);
  await store.saveThread(t);
  const messages = texts.map((text, i) => message(`${resourceId}-m${i}`, t, text, i));
  await store.saveMessages(messages);
  return messages;
}

const TEXTS = [
  'the garden needs water every day',
  'my locker code is 80417 at the gym',
  'the dog likes the park more than the garden',
  'garden garden garden and a gym',
];

describe.skipIf(upstashSkip)(
  `upstash keyword index${upstashSkip ? ` (skipped: ${upstashSkip})` : ''}`,
  () => {
    it('keeps the postings, documents and statistics in step and leaves no key behind', async () => {
      const store = await open('layout');
      const raw = testClient();
      const p = `${prefix}:layout`;
      const [first] = await seed(store, 'r', ['zebra zebra quartz', 'quartz']);
      expect(await hash(`${p}:keywords:r:zebra`)).toEqual({ 'r-m0': '2' });
      expect(await hash(`${p}:keyword-stats:r`)).toEqual({ docs: '2', terms: '4' });
      expect(await raw.hget(`${p}:keyword-doc:r-m0`, ':length')).toBe('3');
      await store.updateMessages([{ id: 'r-m0', role: 'system' }]);
      expect(await raw.exists(`${p}:keyword-doc:r-m0`, `${p}:keywords:r:zebra`)).toBe(0);
      await store.updateMessages([{ id: 'r-m0', role: 'assistant' }]);
      expect(await store.keywords!.search({ query: 'zebra', topK: 5, resourceId: 'r' })).toHaveLength(1);
      await store.saveMessages([{ ...(first as Message), content: 'lion' }]);
      expect(await raw.exists(`${p}:keywords:r:zebra`)).toBe(0);
      await store.deleteMessages(['r-m1']);
      expect(await hash(`${p}:keyword-stats:r`)).toEqual({ docs: '1', terms: '1' });
      await store.deleteThread({ threadId: 'r-t' });
      const keys = await keysMatching(`${p}:keyword*`);
      expect(keys).toEqual([]);
    });

    it('backfills messages stored before the index existed, when the layout is upgraded', async () => {
      const store = await open('backfill');
      const raw = testClient();
      const p = `${prefix}:backfill`;
      for (const r of ['x', 'y', 'z']) await seed(store, r, TEXTS);
      // The layout of version 1: no keyword keys at all.
      const keys = await keysMatching(`${p}:keyword*`);
      await raw.del(...keys);
      await raw.set(`${p}:schema`, '1');
      const reports: unknown[] = [];
      const upgraded = await open('backfill', (progress) => {
        reports.push(progress);
        throw new Error('a listener that throws does not stop the upgrade');
      });
      const total = 3 * TEXTS.length;
      expect(reports.at(-1)).toEqual({ backfill: 'keyword index', done: total, total });
      expect(await raw.exists(`${p}:keyword-backfill`)).toBe(0);
      const hits = await upgraded.keywords!.search({ query: 'locker 80417', topK: 5, resourceId: 'y' });
      expect(hits.map((h) => h.messageId)).toEqual(['y-m1']);
      expect(await hash(`${p}:keyword-stats:z`)).toMatchObject({ docs: String(TEXTS.length) });
      expect(() => new UpstashStore({ client: raw, onBackfillProgress: [] as never })).toThrow(
        /onBackfillProgress must be a function/,
      );
    });
  },
);
