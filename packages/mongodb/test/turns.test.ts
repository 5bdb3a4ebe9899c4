import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';

describeMongo('MongoDB turn records, read back with a separate client', (url) => {
  const dbName = randomDbName();
  let raw: MongoClient;
  let store: MongoDBStore;

  beforeAll(async () => {
    raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    await raw.connect();
    store = new MongoDBStore({ url, dbName });
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
    await raw?.close();
    await dropDatabase(url, dbName);
  });

  it('stores a turn as one document: the body a BSON string with its NUL, createdAt a date; indexed by thread', async () => {
    const row = {
      id: 'm1',
      threadId: 't1',
      resourceId: 'r',
      createdAt: new Date(1_700_000_000_123),
      body: '{"a":"nul \u0000 📅"}',
    };
    await store.saveThread({
      id: 't1',
      resourceId: 'r',
      title: '',
      metadata: {},
      createdAt: row.createdAt,
      updatedAt: row.createdAt,
    });
    await store.turns?.put(row);
    const turns = raw.db(dbName).collection('engram_turns');
    expect(await turns.findOne({ _id: 'm1' as never })).toEqual({
      _id: 'm1',
      threadId: 't1',
      resourceId: 'r',
      createdAt: row.createdAt,
      body: row.body,
    });
    const indexes = (await turns.listIndexes().toArray()).map((i) => [i.name, i.key]);
    expect(indexes).toContainEqual(['thread_created', { threadId: 1, createdAt: 1, _id: 1 }]);
  });
});
