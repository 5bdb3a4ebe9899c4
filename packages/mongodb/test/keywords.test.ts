import type { Message, Thread } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { MIGRATIONS } from '../src/migrations.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';

const day = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n));
const thread = (id: string, resourceId: string): Thread => ({
  id,
  resourceId,
  title: '',
  metadata: {},
  createdAt: day(0),
  updatedAt: day(0),
});

async function seed(store: MongoDBStore, resourceId: string, texts: readonly string[]) {
  const t = thread(`${resourceId}-t`, resourceId);
  await store.saveThread(t);
  const messages: Message[] = texts.map((content, i) => ({
    id: `${resourceId}-m${i}`,
    threadId: t.id,
    resourceId,
    role: 'user',
    type: 'v2',
    content,
    createdAt: day(i),
  }));
  await store.saveMessages(messages);
  return messages;
}

const TEXTS = [
  'the garden needs water every day',
  'my locker code is 80417 at the gym',
  'the dog likes the park more than the garden',
  'garden garden garden and a gym',
];

describeMongo('MongoDB keyword index, read back with a separate client', (url) => {
  const dbName = randomDbName();
  let raw: MongoClient;

  beforeAll(async () => {
    raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    await raw.connect();
  });
  afterAll(async () => {
    await raw?.close();
    await dropDatabase(url, dbName);
  });

  it('backfills messages stored before the index existed, when the schema is upgraded', async () => {
    const prefix = 'backfill_';
    const store = new MongoDBStore({ url, dbName, collectionPrefix: prefix });
    for (const r of ['x', 'y']) await seed(store, r, TEXTS);
    await store.close();
    // The schema before the index: no keyword documents, the keyword migration not recorded.
    const keywordVersion = MIGRATIONS.findIndex((m) => m.name.startsWith('keyword index')) + 1;
    expect(keywordVersion).toBeGreaterThan(0);
    const db = raw.db(dbName);
    await db.collection(`${prefix}keywords`).deleteMany({});
    await db.collection<{ _id: number }>(`${prefix}migrations`).deleteOne({ _id: keywordVersion });
    const reports: unknown[] = [];
    const onBackfillProgress = (progress: unknown) => {
      reports.push(progress);
      throw new Error('a listener that throws does not stop the upgrade');
    };
    const upgraded = new MongoDBStore({ url, dbName, collectionPrefix: prefix, onBackfillProgress });
    const hits = await upgraded.keywords!.search({ query: 'locker 80417', topK: 5, resourceId: 'y' });
    expect(hits.map((h) => h.messageId)).toEqual(['y-m1']);
    const total = 2 * TEXTS.length;
    expect(await db.collection(`${prefix}keywords`).countDocuments()).toBe(total);
    expect(reports).toEqual([{ backfill: 'keyword index', done: total, total }]);
    expect(await db.collection(`${prefix}locks`).countDocuments({ _id: 'keyword-backfill' as never })).toBe(
      0,
    );
    await upgraded.close();

    // A run that stopped after resource x's messages: the next one resumes after them.
    await db.collection(`${prefix}keywords`).deleteMany({});
    await db.collection<{ _id: number }>(`${prefix}migrations`).deleteOne({ _id: keywordVersion });
    const lastOfX = TEXTS.map((_, i) => `x-m${i}`)
      .sort()
      .at(-1) as string;
    await db
      .collection<{ _id: string; after: string }>(`${prefix}locks`)
      .insertOne({ _id: 'keyword-backfill', after: lastOfX });
    reports.length = 0;
    const resumed = new MongoDBStore({ url, dbName, collectionPrefix: prefix, onBackfillProgress });
    await resumed.init();
    // Counted as in every adapter: what was left (resource y's messages).
    expect(reports).toEqual([{ backfill: 'keyword index', done: TEXTS.length, total: TEXTS.length }]);
    const indexed = await db.collection(`${prefix}keywords`).find({}).toArray();
    expect(indexed.every((d) => String(d._id).startsWith('y-'))).toBe(true);
    expect(indexed).toHaveLength(TEXTS.length);
    await resumed.close();
    expect(() => new MongoDBStore({ url, dbName, onBackfillProgress: {} as never })).toThrow(
      /onBackfillProgress must be a function/,
    );
  });
});

describeMongo('MongoDB keyword index of new messages', (url) => {
  const dbName = randomDbName();
  afterAll(() => dropDatabase(url, dbName));

  it('replaces or deletes a keyword document left under a new message id', async () => {
    const prefix = 'stale_';
    const store = new MongoDBStore({ url, dbName, collectionPrefix: prefix });
    await store.saveThread(thread('s-t', 's'));
    // What a writer that stopped between deleting messages and their index documents leaves.
    const raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    try {
      const keywords = raw.db(dbName).collection<{ _id: string }>(`${prefix}keywords`);
      const left = (id: string) => ({
        _id: id,
        resourceId: 's',
        threadId: 's-t',
        createdAt: day(0),
        terms: ['zebra'],
        length: 1,
      });
      await keywords.insertMany([left('s-m1'), left('s-m3')]);
      const saved = ['fresh garden', 'garden water', 'the and a', 'a garden gym'].map(
        (content, i): Message => ({
          id: `s-m${i}`,
          threadId: 's-t',
          resourceId: 's',
          role: 'user',
          type: 'v2',
          content,
          createdAt: day(i),
        }),
      );
      await store.saveMessages(saved);
      const search = async (query: string) =>
        (await store.keywords!.search({ query, topK: 10, resourceId: 's' })).map((h) => h.messageId).sort();
      expect(await search('zebra')).toEqual([]);
      expect(await search('garden')).toEqual(['s-m0', 's-m1', 's-m3']);
      const stored = await keywords.find({}).sort({ _id: 1 }).toArray();
      expect(stored.map((d) => d._id)).toEqual(['s-m0', 's-m1', 's-m3']);
      // s-m2 has no terms: the document left under its id would have been deleted too.
      await keywords.insertOne(left('s-m2'));
      await store.saveMessages([{ ...(saved[2] as Message), content: 'a the' }]);
      expect(await keywords.countDocuments({ _id: 's-m2' })).toBe(0);
    } finally {
      await raw.close();
      await store.close();
    }
  });
});
