import type { Message } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MongoDBDriver, MongoDBStore } from '../src/index.ts';
import { type LockDocument, WriteLocks } from '../src/locks.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';
import { message, rid, thread } from './fixtures.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The commands a store sends, as the server receives them (command monitoring). */
interface Sent {
  name: string;
  command: Record<string, unknown>;
}

describeMongo('MongoDBStore: queries, write locks and server differences', (url) => {
  const dbName = randomDbName();
  let client: MongoClient;
  let raw: MongoClient;
  let store: MongoDBStore;
  let ferretdb = false;
  let ferretdb1 = false;
  const sent: Sent[] = [];

  beforeAll(async () => {
    client = new MongoClient(url, { monitorCommands: true, serverSelectionTimeoutMS: 5_000 });
    client.on('commandStarted', (event) => sent.push({ name: event.commandName, command: event.command }));
    store = new MongoDBStore({ client, dbName });
    await store.init();
    raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    const build = await raw.db('admin').command({ buildInfo: 1 });
    ferretdb = typeof build.ferretdbVersion === 'string';
    ferretdb1 = ferretdb && /^v?1\./.test(build.ferretdbVersion);
  });

  afterAll(async () => {
    await store?.close();
    await client?.close();
    await raw?.close();
    await dropDatabase(url, dbName);
  });

  it('lists the newest messages with one count and one bounded, index-ordered find', async () => {
    const t = thread();
    await store.saveThread(t);
    await store.saveMessages(Array.from({ length: 60 }, (_, i) => message(t, i)));
    sent.length = 0;
    const page = await store.listMessages({ threadId: t.id, direction: 'DESC', perPage: 20 });
    expect(page.messages).toHaveLength(20);
    expect(page.total).toBe(60);
    const finds = sent.filter((s) => s.name === 'find');
    expect(finds).toHaveLength(1);
    expect(finds[0]?.command).toMatchObject({ filter: { threadId: t.id }, limit: 20 });
    // The sort matches the (threadId, createdAt, _id) index, so the server walks 20 entries.
    expect([...(finds[0]!.command.sort as Map<string, number>)]).toEqual([
      ['createdAt', -1],
      ['_id', -1],
    ]);
    expect(sent.filter((s) => s.name === 'aggregate')).toHaveLength(1);
    expect(sent).toHaveLength(2);
  });

  it('include windows cost one query for the targets and two bounded finds per window', async () => {
    const t = thread();
    await store.saveThread(t);
    const batch = Array.from({ length: 30 }, (_, i) => message(t, i));
    await store.saveMessages(batch);
    sent.length = 0;
    const target = batch[15]!;
    const page = await store.listMessages({
      threadId: t.id,
      perPage: 0,
      include: [{ id: target.id, withPreviousMessages: 3, withNextMessages: 2 }],
    });
    expect(page.messages.map((m) => m.id)).toEqual(batch.slice(12, 18).map((m) => m.id));
    const finds = sent.filter((s) => s.name === 'find');
    expect(finds).toHaveLength(3);
    expect(finds.map((f) => f.command.limit).sort()).toEqual([2, 3, undefined].sort());
  });

  it('saving new messages reads their ids once, under write locks not at all; on FerretDB 1.x their keyword documents are one insert', async () => {
    const t = thread();
    await store.saveThread(t);
    sent.length = 0;
    const saved = Array.from({ length: 5 }, (_, i) => message(t, i));
    await store.saveMessages(saved);
    const to = (name: string, collection: string) =>
      sent.filter((s) => s.name === name && s.command[name] === collection).length;
    // Under write locks a save's first run takes its messages for new (FerretDB 1.x reads the whole
    // collection for `$in`); in a transaction their ids are read once. A replacement by `_id`
    // reads FerretDB 1.x's whole collection, an insert does not.
    const locking = !store.capabilities.transactionalBatches;
    expect(to('find', 'engram_messages')).toBe(locking ? 0 : 1);
    expect([to('insert', 'engram_keywords'), to('update', 'engram_keywords')]).toEqual(
      ferretdb1 ? [1, 0] : [0, 1],
    );
    const hits = await store.keywords!.search({ query: 'message', topK: 10, resourceId: t.resourceId });
    expect(hits).toHaveLength(5);

    // New ones around stored ones: under locks the insert meets a stored id, takes back the new
    // ones it wrote and the save runs again, reading; each message once, the count exact.
    const mixed = [message(t, 10), { ...(saved[2] as Message), content: 'changed' }, message(t, 11)];
    sent.length = 0;
    await store.saveMessages(mixed);
    expect(to('find', 'engram_messages')).toBeGreaterThanOrEqual(1);
    const page = await store.listMessages({ threadId: t.id, perPage: false });
    expect(page.total).toBe(7);
    expect(page.messages.map((m) => m.id)).toEqual([...saved, mixed[0], mixed[2]].map((m) => m?.id));
    expect(page.messages[2]?.content).toBe('changed');
    const counted = await store.keywords!.search({ query: 'changed', topK: 10, resourceId: t.resourceId });
    expect(counted.map((h) => h.messageId)).toEqual([saved[2]?.id]);
  });

  it('stores an array inside an array natively on MongoDB, wrapped on FerretDB 1.x, and reads it back', async () => {
    const t = thread();
    await store.saveThread(t);
    const content = [
      [1, [2, []]],
      {
        grid: [
          [0, 1],
          [1, 0],
        ],
      },
    ];
    const m = message(t, 1, { content });
    await store.saveMessages([m]);
    expect((await store.listMessagesById({ ids: [m.id] }))[0]?.content).toEqual(content);
    const stored = await raw
      .db(dbName)
      .collection('engram_messages')
      .findOne({ _id: m.id as never });
    if (ferretdb) {
      expect(stored?.content).toEqual([
        { '%a': [1, { '%a': [2, { '%a': [] }] }] },
        { grid: [{ '%a': [0, 1] }, { '%a': [1, 0] }] },
      ]);
    } else {
      expect(stored?.content).toEqual(content);
    }
  });

  it('a lock left by a dead writer is broken after its lease; a live one is waited for', async () => {
    const resourceId = rid('r');
    const locks = raw.db(dbName).collection<{ _id: string; owner: string; expiresAt: Date }>('engram_locks');
    const locked = new MongoDBStore({ url, dbName, writeLocks: 'always' });
    try {
      await locked.init();
      await locks.insertOne({
        _id: `resources:${resourceId}`,
        owner: 'dead',
        expiresAt: new Date(Date.now() - 1),
      });
      // A waiter that died while breaking it left its own claim behind: that is broken too.
      await locks.insertOne({
        _id: 'break:dead',
        owner: 'dead breaker',
        expiresAt: new Date(Date.now() - 1),
      });
      await locked.updateResource({ resourceId, workingMemory: 'after a dead writer' });
      expect(await locks.countDocuments({ _id: { $in: [`resources:${resourceId}`, 'break:dead'] } })).toBe(0);

      await locks.insertOne({
        _id: `resources:${resourceId}`,
        owner: 'alive',
        expiresAt: new Date(Date.now() + 60_000),
      });
      const started = Date.now();
      const waiting = locked.updateResource({ resourceId, workingMemory: 'after a live writer' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await locked.getResourceById({ resourceId }))?.workingMemory).toBe('after a dead writer');
      await locks.deleteOne({ _id: `resources:${resourceId}` });
      expect((await waiting).workingMemory).toBe('after a live writer');
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    } finally {
      await locked.close();
    }
  });

  it('a waiter reads who holds a lock at its first miss, then a quarter lease apart, not at every miss', async () => {
    const real = raw.db(dbName).collection<LockDocument>('wait_locks');
    const calls = { insertMany: 0, findOne: 0 };
    // The lock collection as WriteLocks sees it, counting its inserts (misses) and holder reads.
    const counted = new Proxy(real, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (key === 'insertMany' || key === 'findOne') calls[key] += 1;
          return value.apply(target, args);
        };
      },
    });
    const locks = new WriteLocks(counted, 4_000);
    await real.insertOne({ _id: 'k', owner: 'alive', expiresAt: new Date(Date.now() + 60_000) });
    const waiting = locks.acquire(['k'], 'me');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await real.deleteOne({ _id: 'k' });
    await waiting;
    expect((await real.findOne({ _id: 'k' }))?.owner).toBe('me');
    // Looks at about 0, 1 and 2 s (a quarter of the 4 s lease); misses every few ms between.
    expect(calls.findOne).toBeGreaterThanOrEqual(2);
    expect(calls.findOne).toBeLessThanOrEqual(4);
    expect(calls.insertMany).toBeGreaterThan(10 * calls.findOne);
    await locks.release(['k'], 'me');
    expect(await real.countDocuments({ _id: 'k' })).toBe(0);
  });

  it('a waiter that took some of its locks reads who holds the next at once: a dead holder is broken without waiting a quarter lease', async () => {
    const real = raw.db(dbName).collection<LockDocument>('next_locks');
    const locks = new WriteLocks(real, 40_000);
    await real.insertOne({ _id: 'a', owner: 'alive', expiresAt: new Date(Date.now() + 60_000) });
    await real.insertOne({ _id: 'b', owner: 'dead', expiresAt: new Date(Date.now() - 1) });
    const waiting = locks.acquire(['a', 'b'], 'me');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const freed = Date.now();
    await real.deleteOne({ _id: 'a' });
    await waiting;
    // Its next look at "a" was due 10 s on (a quarter of the lease): "b" was read as soon as it missed.
    expect(Date.now() - freed).toBeLessThan(3_000);
    expect((await real.find({}).sort({ _id: 1 }).toArray()).map((l) => [l._id, l.owner])).toEqual([
      ['a', 'me'],
      ['b', 'me'],
    ]);
    await locks.release(['a', 'b'], 'me');
  });

  it('a holder whose lock was broken meanwhile is fenced off before it writes: it takes the lock again and redoes the write', async () => {
    const locks = raw.db(dbName).collection<LockDocument>('fence_locks');
    // A fence within a quarter lease of the last renewal asks nothing: the holder stands still longer.
    const held = new WriteLocks(locks, 200);
    const runs: string[] = [];
    const result = await held.hold(['k'], async (fence) => {
      const mine = await locks.findOne({ _id: 'k' });
      runs.push(mine!.owner);
      if (runs.length === 1) {
        // Another writer broke the lock while this one stood still, and holds it now (till it expires).
        await locks.replaceOne({ _id: 'k' }, { owner: 'other', expiresAt: new Date(Date.now() + 100) });
        await sleep(80);
      }
      await fence();
      return 'written';
    });
    expect(result).toBe('written');
    expect(runs).toHaveLength(2);
    expect(runs[0]).not.toBe(runs[1]);
    expect(await locks.countDocuments({ _id: 'k' })).toBe(0);

    // A lock that is always lost before the write ends in CONFLICT, and writes nothing.
    let written = 0;
    const lost = held.hold(['k'], async (fence) => {
      await locks.deleteOne({ _id: 'k' });
      await sleep(80);
      await fence();
      written += 1;
    });
    await expect(lost).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('lease') });
    expect(written).toBe(0);
  });

  it('a fence within a quarter lease of taking or renewing the locks costs no command; after standing still that long it renews them on the server', async () => {
    // Through the monitored client: each renewal is one `update` of the lock documents.
    const collection = client.db(dbName).collection<LockDocument>('fence_fast_locks');
    const renewals = () =>
      sent.filter((s) => s.name === 'update' && s.command.update === 'fence_fast_locks').length;
    const held = new WriteLocks(collection, 800);
    sent.length = 0;
    await held.hold(['k'], async (fence) => {
      await fence();
      await fence();
      expect(renewals()).toBe(0);
      await sleep(250);
      const before = (await collection.findOne({ _id: 'k' }))!.expiresAt.getTime();
      await fence();
      expect(renewals()).toBe(1);
      expect((await collection.findOne({ _id: 'k' }))!.expiresAt.getTime()).toBeGreaterThan(before);
      await fence();
      expect(renewals()).toBe(1);
    });
    expect(await collection.countDocuments({ _id: 'k' })).toBe(0);
  });

  it('without transactions, a batch waits for the locks of its threads; a thread deleted meanwhile refuses the whole batch with NOT_FOUND', async () => {
    const locks = raw.db(dbName).collection<{ _id: string; owner: string; expiresAt: Date }>('engram_locks');
    // A lock held by the test keeps saveMessages waiting before it reads or writes anything.
    const paused = new MongoDBStore({ url, dbName, transactions: 'never', writeLocks: 'always' });
    try {
      await paused.init();
      const t = thread();
      const other = thread({ resourceId: t.resourceId });
      await paused.saveThread(t);
      await paused.saveThread(other);
      await locks.insertOne({
        _id: `threads:${t.id}`,
        owner: 'test',
        expiresAt: new Date(Date.now() + 60_000),
      });
      const batch = [message(t, 1), message(other, 2)];
      const saving = paused.saveMessages(batch);
      const messagesOf = (threadId: string) =>
        raw.db(dbName).collection('engram_messages').countDocuments({ threadId });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await messagesOf(t.id)).toBe(0);
      expect(await messagesOf(other.id)).toBe(0);
      await raw
        .db(dbName)
        .collection('engram_threads')
        .deleteOne({ _id: t.id as never });
      await locks.deleteOne({ _id: `threads:${t.id}` });
      await expect(saving).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // The refusal comes before any write: nothing of the batch is saved, in either thread.
      expect(await messagesOf(t.id)).toBe(0);
      expect(await messagesOf(other.id)).toBe(0);
      expect(paused.capabilities.transactionalBatches).toBe(false);
      await paused.saveThread(t);
      await paused.saveMessages(batch);
      expect(await paused.listMessagesById({ ids: batch.map((m) => m.id) })).toEqual(
        [...batch].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()),
      );
      expect(await locks.countDocuments({ owner: { $ne: 'test' } })).toBe(0);
    } finally {
      await paused.close();
    }
  });

  it('without transactions, a save that meets a new id inserted meanwhile writes nothing of its batch before it runs again: the thread a message left is bumped', async () => {
    const locks = raw.db(dbName).collection<{ _id: string; owner: string; expiresAt: Date }>('engram_locks');
    const paused = new MongoDBStore({ url, dbName, transactions: 'never', writeLocks: 'always' });
    try {
      await paused.init();
      const resourceId = rid('r');
      const prefix = rid('t');
      const from = thread({ id: `${prefix}-a`, resourceId });
      const to = thread({ id: `${prefix}-c`, resourceId });
      await paused.saveThread(from);
      await paused.saveThread(to);
      const moved = message(from, 1);
      await paused.saveMessages([moved]);
      const left = (await paused.getThreadById({ threadId: from.id }))?.updatedAt.getTime() ?? 0;
      // The save takes `from`'s lock before `to`'s, so it waits there while another writer inserts
      // one of its new ids into `to`; it then meets that id stored when it inserts.
      await locks.insertOne({
        _id: `threads:${from.id}`,
        owner: 'test',
        expiresAt: new Date(Date.now() + 60_000),
      });
      const added = message(to, 2);
      const saving = paused.saveMessages([
        { ...moved, threadId: to.id },
        { ...added, content: 'the batch' },
      ]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await store.saveMessages([{ ...added, content: 'the other writer' }]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await locks.deleteOne({ _id: `threads:${from.id}` });
      await saving;
      const listed = await paused.listMessages({ threadId: to.id, perPage: false });
      expect(listed.messages.map((m) => [m.id, m.content])).toEqual([
        [moved.id, moved.content],
        [added.id, 'the batch'],
      ]);
      expect((await paused.listMessages({ threadId: from.id })).total).toBe(0);
      expect((await paused.getThreadById({ threadId: from.id }))?.updatedAt.getTime()).toBeGreaterThan(left);
    } finally {
      await paused.close();
    }
  });

  it('without transactions, an update that finds its message written by another writer since it read it (a holder that stood still past its lease) runs again, reading: the other write is kept', async () => {
    const driver = new MongoDBDriver({ client, dbName, transactions: 'never', writeLocks: 'always' });
    await driver.open();
    const t = thread();
    await store.saveThread(t);
    const saved = message(t, 1);
    await store.saveMessages([saved]);
    const messages = raw.db(dbName).collection<{ _id: string; version?: string }>('engram_messages');
    let runs = 0;
    await driver.write(async (tx) => {
      runs += 1;
      await driver.messages.places(tx, [], [saved.id]);
      const [read] = await driver.messages.byIds([saved.id], tx);
      if (runs === 1) {
        // What a writer that broke this one's lock while it stood still would have written.
        await messages.updateOne({ _id: saved.id }, { $set: { type: 'theirs', version: 'theirs' } });
      }
      await driver.messages.put(tx, [{ ...(read as Message), content: 'mine' }]);
    });
    expect(runs).toBe(2);
    const [stored] = await store.listMessagesById({ ids: [saved.id] });
    expect(stored).toMatchObject({ type: 'theirs', content: 'mine' });
    const version = (await messages.findOne({ _id: saved.id }))?.version;
    expect(typeof version === 'string' && version !== 'theirs').toBe(true);
    await driver.close();
  });

  it('declares transactionalBatches as the server decides it: false before connecting, without a replica set (FerretDB) and with transactions "never"', async () => {
    const declared = new MongoDBStore({ url, dbName });
    const never = new MongoDBStore({ url, dbName, transactions: 'never' });
    try {
      expect(declared.capabilities).toEqual({
        atomicWorkingMemory: true,
        transactionalBatches: false,
        processLocal: false,
      });
      await declared.init();
      await never.init();
      const hello = await raw.db('admin').command({ hello: 1 });
      const transactions =
        (typeof hello.setName === 'string' || hello.msg === 'isdbgrid') &&
        hello.logicalSessionTimeoutMinutes != null;
      expect(declared.capabilities.transactionalBatches).toBe(transactions);
      if (ferretdb) expect(declared.capabilities.transactionalBatches).toBe(false);
      expect(never.capabilities.transactionalBatches).toBe(false);
    } finally {
      await declared.close();
      await never.close();
    }
  });

  it('deleteThread also removes messages left without their thread', async () => {
    const threadId = rid('gone');
    const orphan = (i: number) => ({
      _id: rid('m'),
      threadId,
      resourceId: 'r',
      role: 'user',
      content: `left behind ${i}`,
      type: 'text',
      createdAt: new Date(),
    });
    await raw
      .db(dbName)
      .collection('engram_messages')
      .insertMany([orphan(1), orphan(2)] as never[]);
    await store.deleteThread({ threadId });
    expect(await raw.db(dbName).collection('engram_messages').countDocuments({ threadId })).toBe(0);
  });

  it('writeLocks "never" sends no lock commands; "auto" uses them without transactions or on FerretDB 1.x', async () => {
    const t = thread();
    sent.length = 0;
    await store.saveThread(t);
    await store.updateThread({ id: t.id, metadata: { a: 1 } });
    await store.saveMessages([message(t, 1)]);
    const lockCommands = sent.filter((s) => s.command[s.name] === 'engram_locks');
    expect(lockCommands.length > 0).toBe(ferretdb || !store.capabilities.transactionalBatches);

    const never = new MongoDBStore({ client, dbName, writeLocks: 'never' });
    await never.init();
    sent.length = 0;
    await never.updateThread({ id: t.id, metadata: { b: 2 } });
    await never.saveMessages([message(t, 2)]);
    await never.deleteThread({ threadId: t.id });
    expect(sent.filter((s) => s.command[s.name] === 'engram_locks')).toEqual([]);
    await never.close();
  });
});
