import { compareHits, cosine, type VectorDriver, type VectorHit } from '@engram/core/driver';
import { Binary } from 'mongodb';
import type { Connection } from './driver.ts';
import type { MongoTx } from './locks.ts';
import { threadLock } from './threads.ts';
import { insertNew, putWhole } from './writes.ts';

/**
 * Message ids per `$in` when reading a scope's vectors: large, as FerretDB 1.x reads the whole
 * collection for each such query; 10,000 ids of 255 characters stay below the 16 MB command limit.
 */
const IDS_PER_QUERY = 10_000;

/** Float32 values as a BSON binary (little-endian bytes). */
function toBinary(vector: Float32Array): Binary {
  return new Binary(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength));
}

function fromBinary(binary: Binary): Float32Array {
  const bytes = Buffer.from(binary.buffer);
  const out = new Float32Array(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/**
 * Vectors in `<prefix>vectors`, one document per message (`_id` = message id); core deletes them
 * in the write that deletes their messages. Search filters on the server (the scope's message ids
 * from the messages collection, indexed) and ranks in the client, exactly, with core's tie rule:
 * `$vectorSearch` is eventually consistent, and FerretDB rejects it.
 */
export function vectorDriver(c: Connection): VectorDriver<MongoTx> {
  const getSpace = async () => {
    const doc = await c.collections.vectorSpace.findOne({ _id: 1 });
    return doc ? { id: doc.embedder, dimensions: doc.dimensions } : null;
  };
  return {
    search: 'exact',
    getSpace,
    claimSpace: async (space) => {
      const doc = { _id: 1, embedder: space.id, dimensions: space.dimensions };
      await insertNew(c.collections.vectorSpace, doc);
      return (await getSpace()) ?? space;
    },
    // Of messages that exist; on FerretDB 1.x inserted where they can be (`putWhole`), as a vector
    // is mostly new.
    upsertVectors: async (space, vectors) => {
      const ids = vectors.map((v) => v.messageId);
      const found = await c.collections.messages
        .find({ _id: { $in: ids } }, { projection: { _id: 1 } })
        .toArray();
      const existing = new Set(found.map((d) => d._id));
      const docs = vectors
        .filter((v) => existing.has(v.messageId))
        .map((v) => ({ _id: v.messageId, space: space.id, hash: v.hash, vec: toBinary(v.vector) }));
      await putWhole(c, c.collections.vectors, docs, new Set(existing));
    },
    getVectors: async (space, ids) => {
      const docs = await c.collections.vectors
        .find({ _id: { $in: ids }, space: space.id }, { projection: { hash: 1 } })
        .toArray();
      return docs.map((d) => ({ messageId: d._id, hash: d.hash }));
    },
    readVectors: async (space, ids) => {
      const docs = await c.collections.vectors.find({ _id: { $in: ids }, space: space.id }).toArray();
      return docs.map((d) => ({ messageId: d._id, hash: d.hash, vector: fromBinary(d.vec) }));
    },
    deleteVectors: async (space, ids) => {
      await c.collections.vectors.deleteMany({ _id: { $in: ids }, space: space.id });
    },
    searchVectors: async (args) => {
      const filter = {
        resourceId: args.resourceId,
        ...(args.threadId === undefined ? {} : { threadId: args.threadId }),
        ...(args.excludeIds?.length ? { _id: { $nin: args.excludeIds } } : {}),
      };
      const inScope = await c.collections.messages
        .find(filter, { projection: { threadId: 1, createdAt: 1 } })
        .toArray();
      const byId = new Map(inScope.map((m) => [m._id, m]));
      const hits: VectorHit[] = [];
      for (let at = 0; at < inScope.length; at += IDS_PER_QUERY) {
        const ids = inScope.slice(at, at + IDS_PER_QUERY).map((m) => m._id);
        const docs = await c.collections.vectors.find({ _id: { $in: ids }, space: args.space.id }).toArray();
        for (const doc of docs) {
          const m = byId.get(doc._id);
          const vector = fromBinary(doc.vec);
          if (!m || vector.length !== args.vector.length) continue;
          hits.push({
            messageId: doc._id,
            threadId: m.threadId,
            hash: doc.hash,
            score: cosine(vector, args.vector),
            createdAt: new Date(m.createdAt),
          });
        }
      }
      return hits.sort(compareHits).slice(0, args.topK);
    },
    deleteByThread: async (tx, threadId) => {
      await tx.lock([threadLock(threadId)]);
      const ids = await c.collections.messages.distinct('_id', { threadId }, { session: tx.session });
      await tx.fence();
      await c.collections.vectors.deleteMany({ _id: { $in: ids } }, { session: tx.session });
    },
    deleteByMessages: async (tx, ids) => {
      await tx.fence();
      await c.collections.vectors.deleteMany({ _id: { $in: ids } }, { session: tx.session });
    },
  };
}
