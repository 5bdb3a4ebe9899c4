import { MemoryError } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { applySet, assertStored, updateFields } from '../src/writes.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';
import { message, rid, thread } from './fixtures.ts';

describe('applySet and assertStored', () => {
  it('applies top-level and nested paths to a copy, replacing sub-documents whole', () => {
    const doc = { _id: 'a', metadata: { prefs: { tone: 'formal' }, keep: 1 }, n: 1 };
    const next = applySet(doc, { 'metadata.prefs': { style: 'formal' }, 'extra.k': true, n: 2 });
    expect(next).toEqual({
      _id: 'a',
      metadata: { prefs: { style: 'formal' }, keep: 1 },
      extra: { k: true },
      n: 2,
    });
    expect(doc.metadata.prefs).toEqual({ tone: 'formal' });
  });

  it('sets __proto__ as an own field, never as a prototype', () => {
    const next = applySet({ _id: 'a', metadata: {} }, { 'metadata.__proto__': { polluted: true } });
    const metadata = next.metadata as Record<string, unknown>;
    expect(Object.hasOwn(metadata, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('assertStored refuses a document that lacks a field of the update with STORAGE', () => {
    const stored = { _id: 'a', metadata: { prefs: { tone: 'formal' } } };
    expect(() => assertStored(stored, { 'metadata.prefs': { tone: 'formal' } }, 'op')).not.toThrow();
    expect(() => assertStored(stored, { 'metadata.prefs': { style: 'formal' } }, 'op')).toThrow(
      expect.objectContaining({ code: 'STORAGE', message: expect.stringContaining('metadata.prefs') }),
    );
    // Compared as JSON: key order ignored, -0 (which FerretDB stores as 0) equal to 0, null not absent.
    const other = { _id: 'b', metadata: { a: { y: 2, x: [1, { z: 0 }] } }, n: 0 };
    expect(() =>
      assertStored(other, { 'metadata.a': { x: [1, { z: -0 }], y: 2 }, n: -0 }, 'op'),
    ).not.toThrow();
    expect(() => assertStored(other, { 'metadata.a': { x: [1, { z: 0 }, 2], y: 2 } }, 'op')).toThrow();
    expect(() => assertStored(other, { 'metadata.b': null }, 'op')).toThrow();
  });
});

describeMongo('writes of same-valued sub-documents under other keys, read with a raw client', (url) => {
  const dbName = randomDbName('engram_writes');
  let raw: MongoClient;
  let store: MongoDBStore;
  let ferretdb = false;

  beforeAll(async () => {
    raw = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    await raw.connect();
    ferretdb = typeof (await raw.db('admin').command({ buildInfo: 1 })).ferretdbVersion === 'string';
    store = new MongoDBStore({ url, dbName });
    await store.init();
  });

  afterAll(async () => {
    await store?.close();
    await raw?.close();
    await dropDatabase(url, dbName);
  });

  const stored = (collection: string, _id: string) =>
    raw
      .db(dbName)
      .collection<{ _id: string; metadata?: unknown; metadataHash?: object; content?: unknown }>(
        `engram_${collection}`,
      )
      .findOne({ _id }, { projection: { _id: 0, metadata: 1, metadataHash: 1, content: 1 } });

  it('a plain $set that the server skips is refused with STORAGE, never reported as saved', async () => {
    const collection = raw.db(dbName).collection<{ _id: string; m?: unknown }>('plain');
    const _id = rid('doc');
    await collection.insertOne({ _id, m: { tone: 'formal' } });
    const write = updateFields(collection, _id, { set: { m: { style: 'formal' } } }, false, 'test');
    if (ferretdb) {
      // FerretDB 1.x compares sub-documents without their keys and skips this $set.
      await expect(write).rejects.toMatchObject({ code: 'STORAGE' });
      await expect(write).rejects.toBeInstanceOf(MemoryError);
      expect(await collection.findOne({ _id })).toEqual({ _id, m: { tone: 'formal' } });
    } else {
      expect(await write).toEqual({ _id, m: { style: 'formal' } });
    }
    // The replacement path stores it on every server.
    // It lands on the version read and carries a fresh one (a document without one matches `null`).
    const replaced = { _id, m: { style: 'formal' }, version: expect.any(String) };
    expect(await updateFields(collection, _id, { set: { m: { style: 'formal' } } }, true, 'test')).toEqual(
      replaced,
    );
    expect(await collection.findOne({ _id })).toEqual(replaced);
  });

  it('saveThread and updateThread store the new keys and their hashes', async () => {
    const t = thread({ metadata: { x: 1 } });
    await store.saveThread(t);
    await store.saveThread({ ...t, metadata: { y: 1 } });
    const saved = await stored('threads', t.id);
    expect(saved?.metadata).toEqual({ y: 1 });
    expect(Object.keys(saved?.metadataHash ?? {})).toEqual(['y']);

    await store.saveThread({ ...t, metadata: { prefs: { tone: 'formal' }, list: [[{ a: 1 }]] } });
    await store.updateThread({ id: t.id, metadata: { prefs: { style: 'formal' }, list: [[{ b: 1 }]] } });
    const updated = await stored('threads', t.id);
    expect(updated?.metadata).toEqual({
      prefs: { style: 'formal' },
      // FerretDB 1.x keeps arrays inside arrays wrapped (see the README).
      list: ferretdb ? [{ '%a': [{ b: 1 }] }] : [[{ b: 1 }]],
    });
  });

  it('updateMessages and a saveMessages re-save store content under the new keys', async () => {
    const t = thread();
    await store.saveThread(t);
    const m = message(t, 1, { content: { name: 'Ada' } });
    await store.saveMessages([m]);
    await store.saveMessages([{ ...m, content: { nick: 'Ada' } }]);
    expect((await stored('messages', m.id))?.content).toEqual({ nick: 'Ada' });
    await store.updateMessages([{ id: m.id, content: { name: 'Ada' } }]);
    expect((await stored('messages', m.id))?.content).toEqual({ name: 'Ada' });
    await store.updateMessages([{ id: rid('missing'), content: { nick: 'Ada' } }]);
    expect(await store.listMessagesById({ ids: [m.id] })).toEqual([{ ...m, content: { name: 'Ada' } }]);
  });

  it('updateResource merges same-valued objects under other keys, creating and updating', async () => {
    const resourceId = rid('r');
    await store.updateResource({ resourceId, metadata: { flags: { beta: true } } });
    await store.updateResource({ resourceId, metadata: { flags: { alpha: true } } });
    expect((await stored('resources', resourceId))?.metadata).toEqual({ flags: { alpha: true } });
  });

  it('updateThread on a thread deleted meanwhile is NOT_FOUND and re-creates nothing', async () => {
    const t = thread({ metadata: { a: { x: 1 } } });
    await store.saveThread(t);
    await store.deleteThread({ threadId: t.id });
    await expect(store.updateThread({ id: t.id, metadata: { a: { y: 1 } } })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await stored('threads', t.id)).toBeNull();
  });
});
