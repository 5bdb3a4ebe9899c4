import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import { MongoDBStore } from '../src/index.ts';
import { describeMongo } from './env.ts';
import { thread } from './fixtures.ts';

describe('the MongoDB adapter descriptor', () => {
  it('names the adapter, its package, its schemes, its service and the lease of its write locks', () => {
    expect(descriptor).toMatchObject({
      name: 'mongodb',
      package: '@engram/mongodb',
      schemes: ['mongodb:', 'mongodb+srv:'],
    });
    expect(descriptor.service.envVar).toBe('ENGRAM_MONGODB_URL');
    expect(descriptor.leaseMs()).toBe(10_000);
    expect(descriptor.leaseMs({ leaseMs: 1_000 })).toBe(1_000);
    expect(descriptor.leaseMs({ lockLeaseMs: 2_000 })).toBe(2_000);
  });

  it('opens a store without connecting; the database from the options, else the URL path, else "engram"; the shared options mapped', async () => {
    const opened = await Promise.all([
      descriptor.open('mongodb://u:secret@h1:27017,h2:27017/app%2Dx?replicaSet=rs0'),
      descriptor.open('mongodb://127.0.0.1:1'),
      descriptor.open('mongodb://127.0.0.1:1/ignored', { database: 'chosen', prefix: 'p_', schema: 'x' }),
    ]);
    try {
      for (const store of opened) expect(store).toBeInstanceOf(MongoDBStore);
      const [fromPath, byDefault, chosen] = opened as unknown as MongoDBStore[];
      expect(fromPath?.dbName).toBe('app-x');
      expect(byDefault?.dbName).toBe('engram');
      expect([chosen?.dbName, chosen?.collectionPrefix]).toEqual(['chosen', 'p_']);
    } finally {
      await Promise.all(opened.map((store) => store.close()));
    }
    // `leaseMs` reaches `lockLeaseMs`, which refuses 0.
    await expect(descriptor.open('mongodb://127.0.0.1:1', { leaseMs: 0 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('lockLeaseMs'),
    });
  });

  it('refuses to provision without ENGRAM_MONGODB_URL', async () => {
    await expect(descriptor.service.provision('x', {})).rejects.toThrow(/ENGRAM_MONGODB_URL/);
  });
});

describeMongo('the MongoDB adapter descriptor against the server', (url) => {
  it('provisions a database of its own that stores opened through it use, and drops it', async () => {
    const provisioned = await descriptor.service.provision('descriptor test', { ENGRAM_MONGODB_URL: url });
    const dbName = String(provisioned.options.database);
    expect(dbName).toMatch(/^engram_descriptor_test_[0-9a-f]{10}$/);
    const store = await descriptor.open(provisioned.url, provisioned.options);
    const t = thread();
    try {
      await store.createThread(t);
      expect(await store.getThreadById({ threadId: t.id })).toEqual(t);
    } finally {
      await store.close();
    }
    const raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    try {
      const threads = () => raw.db(dbName).collection('engram_threads').countDocuments();
      expect(await threads()).toBe(1);
      await provisioned.drop();
      expect(await threads()).toBe(0);
    } finally {
      await raw.close();
    }
  });
});

describe('MongoDBStore options', () => {
  it("a misspelt option is INVALID_ARGUMENT naming the one meant; tools' options of other adapters are left out", async () => {
    const url = 'mongodb://127.0.0.1:9';
    expect(() => new MongoDBStore({ url, dbName: 'app', collectionprefix: 'tenant_a_' } as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('did you mean collectionPrefix?'),
      }),
    );
    const store = await descriptor.open(`${url}/app`, { synchronous: 'normal', schemaName: 'x' });
    expect(store).toBeInstanceOf(MongoDBStore);
    await store.close();
  });
});
