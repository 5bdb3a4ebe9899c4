import type { ObservationRow } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';

const row = (generation: number, version: number, body: string): ObservationRow => ({
  key: 'resource:r',
  resourceId: 'r',
  threadId: null,
  generation,
  version,
  body,
  updatedAt: new Date(1_700_000_000_123),
});

describeMongo('MongoDB observation logs, read back with a separate client', (url) => {
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

  it('a 4,000,000-character body with NUL and astral characters round-trips as a BSON string', async () => {
    const body = '中\u0000😀a'.repeat(800_000).slice(0, 4_000_000);
    const log = store.observations!;
    expect(await log.swap(null, { ...row(1, 1, body), key: 'resource:big', resourceId: 'big' })).toBe(true);
    const stored = await raw.db(dbName).collection('engram_observations').findOne({ key: 'resource:big' });
    expect(typeof stored?.body === 'string' && stored.body === body).toBe(true);
    expect((await log.head('resource:big'))?.body === body).toBe(true);
  });

  it('a seal without its next row (a crash) is a consistent head; a swap read from a sealed row loses', async () => {
    const log = store.observations!;
    const rows = raw.db(dbName).collection('engram_observations');
    expect(await log.swap(null, row(1, 1, 'a'))).toBe(true);
    // What a process killed between the seal and the insert leaves.
    await rows.updateOne({ key: 'resource:r', generation: 1 }, { $set: { version: 2 } });
    expect(await log.head('resource:r')).toEqual(row(1, 2, 'a'));
    expect(await log.swap({ generation: 1, version: 1 }, row(1, 2, 'stale'))).toBe(false);
    expect(await log.swap({ generation: 1, version: 2 }, row(1, 3, 'b'))).toBe(true);
    expect(await log.swap({ generation: 1, version: 3 }, row(2, 4, 'c'))).toBe(true);
    // Generation 1 now carries the head's version: a swap that read it before generation 2 was
    // inserted must not write into it.
    expect(await log.swap({ generation: 1, version: 4 }, row(1, 5, 'behind'))).toBe(false);
    expect((await log.generations('resource:r')).map((r) => [r.generation, r.version, r.body])).toEqual([
      [1, 4, 'b'],
      [2, 4, 'c'],
    ]);
  });
});
