import { InMemoryStore, type JsonObject } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LATEST_VERSION, MongoDBStore } from '../src/index.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';
import { message, rid, thread } from './fixtures.ts';

describeMongo('MongoDBStore against a real server', (url) => {
  const dbName = randomDbName();
  const stores: MongoDBStore[] = [];
  let raw: MongoClient;

  const open = async (options: { collectionPrefix?: string } = {}) => {
    const store = new MongoDBStore({ url, dbName, ...options });
    stores.push(store);
    await store.init();
    return store;
  };

  beforeAll(async () => {
    raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    await raw.connect();
  });

  afterAll(async () => {
    for (const store of stores) await store.close();
    await raw?.close();
    await dropDatabase(url, dbName);
  });

  it('init is idempotent and records the schema version in the migrations collection', async () => {
    const store = await open();
    await store.init();
    await open();
    const applied = await raw.db(dbName).collection('engram_migrations').find({}).toArray();
    expect(applied.map((d) => d._id)).toEqual(Array.from({ length: LATEST_VERSION }, (_, i) => i + 1));
    const indexes = await raw.db(dbName).collection('engram_messages').listIndexes().toArray();
    expect(indexes.find((i) => i.name === 'thread_created')?.key).toEqual({
      threadId: 1,
      createdAt: 1,
      _id: 1,
    });
  });

  it('init from six clients at once on a new database: all succeed, one migration record, no lock left', async () => {
    const fresh = randomDbName('engram_init_race');
    const racers = Array.from({ length: 6 }, () => new MongoDBStore({ url, dbName: fresh }));
    try {
      const results = await Promise.allSettled(racers.map((s) => s.init()));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      const db = raw.db(fresh);
      expect((await db.collection('engram_migrations').find({}).toArray()).map((d) => d._id)).toEqual(
        Array.from({ length: LATEST_VERSION }, (_, i) => i + 1),
      );
      expect(await db.collection('engram_locks').countDocuments()).toBe(0);
      await Promise.all(
        racers.map((s, i) => s.updateResource({ resourceId: 'r', metadata: { [`p${i}`]: i } })),
      );
      expect(
        Object.keys((await racers[0]!.getResourceById({ resourceId: 'r' }))?.metadata ?? {}),
      ).toHaveLength(6);
    } finally {
      await Promise.all(racers.map((s) => s.close()));
      await dropDatabase(url, fresh);
    }
  });

  it('upgrades collections that predate the recorded schema in place, keeping their documents', async () => {
    const prefix = `old_${rid('p').slice(2, 10)}_`;
    const db = raw.db(dbName);
    const at = new Date(Date.UTC(2025, 5, 1));
    await db.collection(`${prefix}threads`).insertOne({
      _id: 'kept' as never,
      resourceId: 'r',
      title: 'from before',
      metadata: { a: 1 },
      metadataHash: {},
      createdAt: at,
      updatedAt: at,
    });
    const store = await open({ collectionPrefix: prefix });
    expect(await db.collection(`${prefix}migrations`).countDocuments()).toBe(LATEST_VERSION);
    const indexes = (await db.collection(`${prefix}threads`).listIndexes().toArray()).map((i) => i.name);
    expect(indexes).toEqual(expect.arrayContaining(['resource_created', 'resource_updated']));
    expect(await store.getThreadById({ threadId: 'kept' })).toMatchObject({
      title: 'from before',
      metadata: { a: 1 },
    });
    // A document without a version still takes part in compare-and-set updates.
    await store.updateWorkingMemoryAtomically({ scope: 'thread', threadId: 'kept', update: () => 'wm' });
    expect((await store.getThreadById({ threadId: 'kept' }))?.metadata).toEqual({
      a: 1,
      workingMemory: 'wm',
    });
  });

  it('refuses a database written by a newer schema with MIGRATION', async () => {
    const prefix = `newer_${rid('p').slice(2, 10)}_`;
    await raw
      .db(dbName)
      .collection(`${prefix}migrations`)
      .insertOne({ _id: 99 as never, name: 'future' });
    const store = new MongoDBStore({ url, dbName, collectionPrefix: prefix });
    stores.push(store);
    await expect(store.init()).rejects.toMatchObject({ code: 'MIGRATION', adapter: 'mongodb' });
  });

  it('stores dates as BSON dates, content and metadata as documents, and the id as _id', async () => {
    const store = await open();
    const t = thread({ metadata: { tags: ['a', 'b'], nested: { n: 1 } } });
    await store.saveThread(t);
    const m = message(t, 5);
    await store.saveMessages([m]);
    const db = raw.db(dbName);
    const storedThread = await db.collection('engram_threads').findOne({ _id: t.id as never });
    const storedMessage = await db.collection('engram_messages').findOne({ _id: m.id as never });
    expect(storedThread?.createdAt).toBeInstanceOf(Date);
    expect(storedThread?.metadata).toEqual({ tags: ['a', 'b'], nested: { n: 1 } });
    expect(storedMessage?.createdAt).toBeInstanceOf(Date);
    expect(storedMessage?.content).toEqual(m.content);
    expect(typeof storedMessage?.content).toBe('object');
    // The server agrees on the BSON types, not only the driver.
    expect(
      await db.collection('engram_messages').countDocuments({
        _id: m.id as never,
        createdAt: { $type: 'date' },
        content: { $type: 'object' },
      }),
    ).toBe(1);
    expect(
      await db.collection('engram_threads').countDocuments({
        _id: t.id as never,
        createdAt: { $type: 'date' },
        updatedAt: { $type: 'date' },
        metadata: { $type: 'object' },
      }),
    ).toBe(1);
  });

  it('round-trips records exactly, with millisecond dates and an empty title', async () => {
    const store = await open();
    const t = thread({ title: '', metadata: { workingMemory: '# Notes', n: 1.5, flag: false, none: null } });
    expect(await store.saveThread(t)).toEqual(t);
    expect(await store.getThreadById({ threadId: t.id })).toEqual(t);
    expect(await store.getThreadById({ threadId: t.id, resourceId: `${t.resourceId}0` })).toBeNull();
    const contents = ['plain', 42, null, true, [1, 'two', { three: 3 }], { format: 2, parts: [] }];
    const messages = contents.map((content, i) => message(t, i, { content }));
    await store.saveMessages(messages);
    expect(await store.listMessagesById({ ids: messages.map((m) => m.id) })).toEqual(messages);
  });

  it('stores keys holding ".", "$", "%", NUL, "" and __proto__ exactly, at every depth', async () => {
    const store = await open();
    const odd: JsonObject = {};
    for (const key of ['a.b', '$gt', '$where', '50%', '%2E', 'x\u0000y', '', '__proto__', 'c$', '..', '$']) {
      Object.defineProperty(odd, key, { value: { [key]: key, inner: [{ [key]: 1 }] }, enumerable: true });
    }
    const t = thread({ metadata: odd });
    await store.saveThread(t);
    const m = message(t, 1, { content: odd });
    await store.saveMessages([m]);
    const back = await store.getThreadById({ threadId: t.id });
    expect(back?.metadata).toEqual(odd);
    expect(Object.getPrototypeOf(back?.metadata)).toBe(Object.prototype);
    expect(Object.hasOwn(back?.metadata ?? {}, '__proto__')).toBe(true);
    expect((await store.listMessagesById({ ids: [m.id] }))[0]?.content).toEqual(odd);

    // A merge of such keys is one $set per key and keeps the others.
    const patch: JsonObject = { 'a.b': 'replaced', $gt: null, 'new.key': { $in: [1] } };
    const merged = await store.updateThread({ id: t.id, metadata: patch });
    const oracle = new InMemoryStore();
    await oracle.saveThread(t);
    const expected = await oracle.updateThread({ id: t.id, metadata: patch });
    expect(merged.metadata).toEqual(expected.metadata);
    expect((await store.getThreadById({ threadId: t.id }))?.metadata).toEqual(expected.metadata);

    // And the keys filter listThreads like any other.
    const listed = await store.listThreads({
      resourceId: t.resourceId,
      metadata: { 'a.b': 'replaced', $gt: null },
    });
    expect(listed.threads.map((x) => x.id)).toEqual([t.id]);

    // What is stored: escaped keys, values untouched.
    const stored = await raw
      .db(dbName)
      .collection('engram_threads')
      .findOne({ _id: t.id as never });
    expect(Object.keys(stored?.metadata ?? {})).toEqual(
      expect.arrayContaining([
        'a%2Eb',
        '%24gt',
        '50%25',
        '%252E',
        'x%00y',
        '%',
        '__proto__',
        'c$',
        '%2E%2E',
        '%24',
      ]),
    );
  });

  it('filters listThreads by metadata as JSON values, like the in-memory store', async () => {
    const store = await open();
    const oracle = new InMemoryStore();
    const resourceId = rid('r');
    const values: JsonObject[] = [
      { k: [1, 2] },
      { k: [[1, 2], 3] },
      { k: 1 },
      { k: [1, 5] },
      { k: null },
      {},
      { k: { a: 1, b: 2 } },
      { k: { b: 2, a: 1 } },
      { k: '1' },
    ];
    for (const [i, metadata] of values.entries()) {
      const t = thread({ id: `${resourceId}-${i}`, resourceId, metadata });
      await store.saveThread(t);
      await oracle.saveThread(t);
    }
    for (const filter of [
      { k: [1, 2] },
      { k: 1 },
      { k: null },
      { k: { a: 1, b: 2 } },
      { k: '1' },
      {},
    ] as JsonObject[]) {
      const got = await store.listThreads({ resourceId, metadata: filter, direction: 'ASC' });
      const want = await oracle.listThreads({ resourceId, metadata: filter, direction: 'ASC' });
      expect({ filter, ids: got.threads.map((t) => t.id) }).toEqual({
        filter,
        ids: want.threads.map((t) => t.id),
      });
      expect(got.total).toBe(want.total);
    }
  });

  it('pages threads and messages like the in-memory store, ties broken by id in byte order', async () => {
    const store = await open();
    const oracle = new InMemoryStore();
    const resourceId = rid('r');
    const at = new Date(Date.UTC(2026, 1, 1));
    const t = thread({ resourceId, createdAt: at, updatedAt: at });
    for (const s of [store, oracle]) await s.saveThread(t);
    const ids = ['b', 'a', 'é', 'z', '😀', '\uffff', 'A', '0'];
    for (const [i, id] of ids.entries()) {
      const same = thread({
        id: `${resourceId}/${id}`,
        resourceId,
        createdAt: at,
        updatedAt: new Date(at.getTime() + i),
      });
      for (const s of [store, oracle]) await s.saveThread(same);
    }
    for (const args of [
      { resourceId },
      { resourceId, direction: 'ASC' as const, perPage: 3, page: 1 },
      { resourceId, orderBy: 'updatedAt' as const, perPage: 4 },
      { resourceId, perPage: false as const },
      { resourceId, perPage: 0 },
    ]) {
      const got = await store.listThreads(args);
      const want = await oracle.listThreads(args);
      expect({ ...got, threads: got.threads.map((x) => x.id) }).toEqual({
        ...want,
        threads: want.threads.map((x) => x.id),
      });
    }

    const messages = ids.map((id, i) => message(t, i % 3, { id: `${t.id}/${id}` }));
    for (const s of [store, oracle]) await s.saveMessages(messages);
    const target = messages[4]?.id as string;
    for (const args of [
      { threadId: t.id },
      { threadId: t.id, direction: 'DESC' as const, perPage: 3, page: 1 },
      { threadId: t.id, perPage: 0, include: [{ id: target, withPreviousMessages: 2, withNextMessages: 2 }] },
      { threadId: t.id, perPage: 2, include: [{ id: target, withNextMessages: 10 }] },
      {
        threadId: t.id,
        dateRange: { start: messages[0]?.createdAt, end: messages[2]?.createdAt, endExclusive: true },
      },
      { threadId: t.id, resourceId: rid('other') },
    ]) {
      const got = await store.listMessages(args);
      const want = await oracle.listMessages(args);
      expect({ args, ...got }).toEqual({ args, ...want });
    }
  });

  it('saveMessages is all-or-nothing: a missing thread or a foreign resource writes nothing', async () => {
    const store = await open();
    const t = thread();
    await store.saveThread(t);
    const good = message(t, 1);
    const orphan = message(thread(), 2);
    await expect(store.saveMessages([good, orphan])).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const foreign = message(t, 3, { resourceId: rid('r') });
    await expect(store.saveMessages([good, foreign])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await raw.db(dbName).collection('engram_messages').countDocuments({ threadId: t.id })).toBe(0);
  });

  it('moves a message saved with another thread and bumps both threads', async () => {
    const store = await open();
    const resourceId = rid('r');
    const a = thread({ resourceId });
    const b = thread({ resourceId });
    await store.saveThread(a);
    await store.saveThread(b);
    const m = message(a, 1);
    await store.saveMessages([m]);
    await store.saveMessages([{ ...m, threadId: b.id }]);
    expect((await store.listMessages({ threadId: a.id })).messages).toEqual([]);
    expect((await store.listMessages({ threadId: b.id })).messages.map((x) => x.id)).toEqual([m.id]);
    expect((await store.getThreadById({ threadId: a.id }))?.updatedAt.getTime()).toBeGreaterThan(
      a.updatedAt.getTime(),
    );
  });

  it('deleteThread removes the thread and all its messages', async () => {
    const store = await open();
    const t = thread();
    await store.saveThread(t);
    await store.saveMessages([message(t, 1), message(t, 2)]);
    await store.deleteThread({ threadId: t.id });
    expect(await store.getThreadById({ threadId: t.id })).toBeNull();
    expect(await raw.db(dbName).collection('engram_messages').countDocuments({ threadId: t.id })).toBe(0);
  });

  it('updateResource creates, merges metadata and replaces working memory only when given', async () => {
    const store = await open();
    const resourceId = rid('r');
    const created = await store.updateResource({ resourceId, metadata: { a: 1 } });
    expect(created).toMatchObject({ id: resourceId, workingMemory: null, metadata: { a: 1 } });
    await store.updateResource({ resourceId, workingMemory: '' });
    const merged = await store.updateResource({ resourceId, metadata: { b: [2] } });
    expect(merged).toMatchObject({ workingMemory: '', metadata: { a: 1, b: [2] } });
    expect(merged.createdAt).toEqual(created.createdAt);
    expect(await store.getResourceById({ resourceId })).toEqual(merged);
    const plain = await store.updateResource({ resourceId: rid('r') });
    expect(plain.metadata).toEqual({});
  });

  it('rejects strings BSON would alter (unpaired surrogates) before writing', async () => {
    const store = await open();
    const t = thread();
    await store.saveThread(t);
    await expect(store.saveMessages([message(t, 1, { content: 'bad \ud800' })])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(store.updateThread({ id: t.id, metadata: { '\udc00': 1 } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await store.getThreadById({ threadId: t.id })).toEqual(t);
  });

  it('rejects documents over 16 MiB with INVALID_ARGUMENT and writes nothing', async () => {
    const store = await open();
    const t = thread();
    await store.saveThread(t);
    const huge = 'x'.repeat(17 * 1024 * 1024);
    await expect(store.saveMessages([message(t, 1, { content: huge })])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/16777216/),
    });
    await expect(store.updateThread({ id: t.id, metadata: { huge } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      store.updateWorkingMemoryAtomically({ scope: 'thread', threadId: t.id, update: () => huge }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await store.getThreadById({ threadId: t.id })).toEqual(t);
    expect((await store.listMessages({ threadId: t.id })).total).toBe(0);
  });

  it('uses the collection prefix for every collection', async () => {
    await open({ collectionPrefix: 'other.' });
    const names = (await raw.db(dbName).listCollections().toArray()).map((c) => c.name);
    expect(names).toEqual(
      expect.arrayContaining(['other.threads', 'other.messages', 'other.resources', 'other.migrations']),
    );
  });
});
