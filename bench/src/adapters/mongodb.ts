import type { JsonObject, Message } from '@engram/core';
import { collectionNames, MongoDBStore } from '@engram/mongodb';
import { Binary, type Collection, type Document, MongoClient, ObjectId } from 'mongodb';
import { deepMerge } from '../deep-merge.ts';
import { runScoped, serviceUrl } from '../env.ts';
import { SPACE } from '../recall.ts';
import type { BenchTarget, RawBaseline, RecallTarget } from '../target.ts';

/** The run's database: `ENGRAM_BENCH_MONGODB_DB`, or a fresh one dropped at the end. */
const given = process.env.ENGRAM_BENCH_MONGODB_DB;
const dbName = () => runScoped('ENGRAM_BENCH_MONGODB_DB', () => `engram_bench_${process.pid}`);

interface ResourceDoc {
  _id: string;
  workingMemory?: string | null;
  version?: ObjectId;
}

interface LockDoc {
  _id: string;
  expiresAt: Date;
}

const isDuplicateKey = (error: unknown) => (error as { code?: unknown })?.code === 11000;
const pause = (n: number) =>
  new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * Math.min(25, 2 * n)));

/**
 * A serialised read-modify-write with nothing but the driver. MongoDB applies each update to one
 * document atomically, so a compare-and-set on `version` is enough. FerretDB 1.x does not (it
 * reads, applies the operators in the proxy and writes back), so there the least that keeps every
 * write is a lock document: the insert that wins holds it.
 */
function mergeFor(resources: Collection<ResourceDoc>, locks: Collection<LockDoc> | undefined) {
  const casOnce = async (resourceId: string, patch: JsonObject): Promise<boolean> => {
    const doc = await resources.findOne({ _id: resourceId });
    const next = deepMerge(doc?.workingMemory ?? null, patch);
    if (!doc) {
      try {
        await resources.insertOne({ _id: resourceId, workingMemory: next, version: new ObjectId() });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    }
    const result = await resources.updateOne({ _id: resourceId, version: doc.version ?? null } as Document, {
      $set: { workingMemory: next, updatedAt: new Date(), version: new ObjectId() },
    });
    return result.modifiedCount === 1;
  };
  return async (resourceId: string, patch: JsonObject): Promise<void> => {
    if (locks) {
      const key = `raw:resources:${resourceId}`;
      for (let n = 0; ; n++) {
        try {
          await locks.insertOne({ _id: key, expiresAt: new Date(Date.now() + 10_000) });
          break;
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          await pause(n);
        }
      }
      try {
        if (!(await casOnce(resourceId, patch))) throw new Error('raw write lost under its own lock');
      } finally {
        await locks.deleteOne({ _id: key });
      }
      return;
    }
    for (let n = 0; n < 100; n++) {
      if (await casOnce(resourceId, patch)) return;
      await pause(n);
    }
    throw new Error('raw compare-and-set gave up after 100 attempts');
  };
}

/** MongoDB at `ENGRAM_MONGODB_URL` (FerretDB here): the store and the `mongodb` driver side by side. */
/** The store (initialised) and a raw client on the same database, with the store's collection names. */
async function connect() {
  const url = serviceUrl('mongodb') as string;
  const storage = new MongoDBStore({ url, dbName: dbName() });
  await storage.init();
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
  await client.connect();
  return { storage, client, db: client.db(dbName()), names: collectionNames(storage.collectionPrefix) };
}

export const target: BenchTarget = {
  name: 'mongodb',
  async open() {
    const { storage, client, db, names } = await connect();
    const resources = db.collection<ResourceDoc>(names.resources);
    const messages = db.collection(names.messages);
    const threads = db.collection(names.threads);
    const build = await db.admin().command({ buildInfo: 1 });
    const ferretdb = typeof build.ferretdbVersion === 'string';
    const merge = mergeFor(resources, ferretdb ? db.collection<LockDoc>(names.locks) : undefined);
    const raw: RawBaseline = {
      async getWorkingMemory(resourceId) {
        const doc = await resources.findOne({ _id: resourceId }, { projection: { workingMemory: 1 } });
        return doc?.workingMemory ?? null;
      },
      async replaceWorkingMemory(resourceId, document) {
        await resources.updateOne(
          { _id: resourceId },
          { $set: { workingMemory: document, updatedAt: new Date(), version: new ObjectId() } },
          { upsert: true },
        );
      },
      mergeWorkingMemory: merge,
      async saveMessages(batch: Message[]) {
        await messages.insertMany(
          batch.map((m) => ({
            _id: m.id as unknown as ObjectId,
            threadId: m.threadId,
            resourceId: m.resourceId,
            role: m.role,
            content: m.content,
            type: m.type,
            createdAt: m.createdAt,
          })),
        );
      },
      listNewest: (threadId, n) =>
        messages.find({ threadId }).sort({ createdAt: -1, _id: -1 }).limit(n).toArray(),
      listThreads: (resourceId, n) =>
        threads.find({ resourceId }).sort({ createdAt: -1, _id: -1 }).limit(n).toArray(),
    };
    return {
      storage,
      raw,
      // Through the store, FerretDB takes minutes for the 100,000-message fixture; these write
      // the documents the store writes (plain ids, empty metadata, string content).
      seed: {
        async messages(batch) {
          await raw.saveMessages(batch);
        },
        async threads(batch) {
          await threads.insertMany(
            batch.map((t) => ({
              _id: t.id as unknown as ObjectId,
              resourceId: t.resourceId,
              title: t.title,
              metadata: {},
              metadataHash: {},
              createdAt: t.createdAt,
              updatedAt: t.updatedAt,
              version: new ObjectId(),
            })),
          );
        },
      },
      async close() {
        await client.close();
        await storage.close();
      },
    };
  },
  async openWithoutKeywords() {
    const storage = new MongoDBStore({
      url: serviceUrl('mongodb') as string,
      dbName: dbName(),
      keywords: false,
    });
    await storage.init();
    return storage;
  },
  async openRecall(): Promise<RecallTarget> {
    const { storage, client, db, names } = await connect();
    const messages = db.collection<{ _id: string }>(names.messages);
    const vectors = db.collection<{ _id: string; vec: { buffer: Uint8Array } }>(names.vectors);
    const cap = await target.fixtureCap?.();
    return {
      storage,
      ...(cap
        ? {
            // Seeding 100,000 is quick now (insertMany, 24 s); searching them is not.
            cap: {
              messages: cap.messages,
              reason: `${cap.reason}; seeding 100,000 messages and vectors takes about 25 s here, but one searchVectors of them had not returned after 10 minutes (5.1 s at 10,000), and a comparison needs at least 6 rounds of both sides`,
            },
            memoryRecallUpTo: 1_000,
            note: 'memory.recall timed at 1,000 messages only: on FerretDB its history, search, hit lookup and window queries each read the whole messages collection (about 5 s a call at 1,000 here)',
          }
        : {}),
      // The documents the store writes, with insertMany (FerretDB takes minutes through the store).
      async seed(batch: Message[]) {
        await messages.insertMany(
          batch.map((m) => ({
            _id: m.id,
            threadId: m.threadId,
            resourceId: m.resourceId,
            role: m.role,
            content: m.content,
            type: m.type,
            createdAt: m.createdAt,
          })),
        );
      },
      // One document per vector as the store writes it, with insertMany (its upsert is one
      // replaceOne per vector, each a full collection scan on FerretDB).
      async seedVectors(rows) {
        await vectors.insertMany(
          rows.map((v) => ({
            _id: v.messageId,
            space: SPACE.id,
            hash: v.hash,
            vec: new Binary(Buffer.from(v.vector.buffer, v.vector.byteOffset, v.vector.byteLength)),
          })) as never,
        );
      },
      raw: {
        describe:
          "find of the resource's message ids, one find of their vectors ($in), dot products and a sort in the client",
        async scan(resourceId, vector, topK) {
          const ids = (await messages.find({ resourceId }, { projection: { _id: 1 } }).toArray()).map(
            (d) => d._id,
          );
          const scored: { id: string; score: number }[] = [];
          for (const doc of await vectors.find({ _id: { $in: ids } }).toArray()) {
            const bytes = doc.vec.buffer;
            const x = new Float32Array(
              bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
            );
            let dot = 0;
            for (let i = 0; i < x.length; i++) dot += (x[i] as number) * (vector[i] as number);
            scored.push({ id: doc._id, score: dot });
          }
          return scored.sort((a, b) => b.score - a.score).slice(0, topK);
        },
      },
      async close() {
        await client.close();
        await storage.close();
      },
    };
  },
  async fixtureCap() {
    const url = serviceUrl('mongodb') as string;
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    try {
      const build = await client.db('admin').command({ buildInfo: 1 });
      if (typeof build.ferretdbVersion !== 'string' || !/^v?1\./.test(build.ferretdbVersion)) return null;
      return {
        messages: 10_000,
        threads: 2_000,
        reason: `FerretDB ${build.ferretdbVersion} pushes no filter, sort or limit down to its backend (explain: SCAN, filterPushdown false), so every query but a lookup by _id reads the whole collection, engram's and the raw driver's alike`,
      };
    } finally {
      await client.close();
    }
  },
  async dispose() {
    const url = serviceUrl('mongodb');
    if (given || !url) return;
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    try {
      await client.db(dbName()).dropDatabase();
    } finally {
      await client.close();
    }
  },
};
