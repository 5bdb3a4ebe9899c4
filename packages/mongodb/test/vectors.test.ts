import { createLexicalEmbedder, Memory } from '@engram/core';
import { type Binary, MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';

describeMongo('MongoDB vectors, read back with a separate client', (url) => {
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

  it('stores one float32 binary per message; re-saving keeps it; message and thread deletes drop it', async () => {
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder({ dimensions: 20 }),
      options: { semanticRecall: { mode: 'vector' } },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const saved = await memory.saveMessages({
      messages: ['one fish', 'two fish', 'red fish'].map((content) => ({
        threadId: 't',
        resourceId: 'u',
        role: 'user' as const,
        content,
      })),
    });
    const vectors = raw.db(dbName).collection<{ _id: string; space: string; vec: Binary }>('engram_vectors');
    const docs = await vectors.find({}).toArray();
    expect(docs.map((d) => [d._id, d.space, d.vec.length()]).sort()).toEqual(
      saved.map((m) => [m.id, 'engram:lexical-20', 80]).sort(),
    );
    await memory.saveMessages({ messages: [saved[0]!] });
    expect(await vectors.countDocuments({ _id: saved[0]!.id })).toBe(1);
    await store.deleteMessages([saved[0]!.id]);
    expect(await vectors.countDocuments({})).toBe(2);
    await memory.deleteThread('t');
    expect(await vectors.countDocuments({})).toBe(0);
  });
});
