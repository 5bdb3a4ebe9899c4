import { MemoryError } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';
import { message, thread } from './fixtures.ts';

describeMongo('MongoDBStore with an injected client recognised by shape', (url) => {
  const dbName = randomDbName();
  const real = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });

  afterAll(async () => {
    await real.close();
    await dropDatabase(url, dbName);
  });

  it('accepts a client from another copy of the driver (same methods, other class) and works against the server', async () => {
    // What a second copy of `mongodb` in the tree hands over: not an instance of this copy's class.
    const foreign = {
      connect: () => real.connect(),
      db: (name: string) => real.db(name),
      startSession: (...args: Parameters<MongoClient['startSession']>) => real.startSession(...args),
      close: () => real.close(),
    };
    expect(foreign instanceof MongoClient).toBe(false);
    const store = new MongoDBStore({ client: foreign as unknown as MongoClient, dbName });
    const t = await store.saveThread(thread());
    await store.saveMessages([message(t, 0)]);
    const page = await store.listMessages({ threadId: t.id });
    expect(page.messages).toHaveLength(1);
    await store.close();
    // close() leaves an injected client open for its owner.
    expect(
      await real
        .db(dbName)
        .collection('engram_threads')
        .countDocuments({ _id: t.id as never }),
    ).toBe(1);
  });

  it.each([
    ['a connection string', 'mongodb://localhost', 'got string'],
    [
      'an object without the client methods',
      { db: () => undefined },
      'lacks connect(), startSession(), close()',
    ],
    ['null', null, 'got null'],
    ['a Db instead of its client', real.db('x'), 'lacks connect(), db(), startSession(), close()'],
  ])('refuses %s as client, naming what is missing', (_name, client, text) => {
    const create = () => new MongoDBStore({ client: client as unknown as MongoClient, dbName });
    expect(create).toThrow(MemoryError);
    expect(create).toThrow(`mongodb: client must be a MongoClient of the mongodb driver`);
    expect(create).toThrow(text);
    try {
      create();
    } catch (error) {
      expect((error as MemoryError).code).toBe('INVALID_ARGUMENT');
    }
  });
});
