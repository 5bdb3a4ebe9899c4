import type * as core from '@engram/core/adapter';
import { compareHits, cosine, VectorStoreBase } from '@engram/core/adapter';
import { Binary } from 'mongodb';
import type { Connection } from './connection.ts';
import { isDuplicateKey } from './errors.ts';

/**
 * Message ids per `$in` when reading a scope's vectors. Large, because on FerretDB 1.x every such
 * query reads the whole collection (nothing is pushed down): 1,000 per query made a search of a
 * 10,000-message resource read it ten times. 10,000 ids of at most 255 characters (up to
 * about 10 MB in UTF-8) stay below MongoDB's 16 MB command limit.
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
 * Vectors in `<prefix>vectors` (one document per message, `_id` = message id) in the database of
 * the messages. The store's `deleteMessages` and `deleteThread` delete them right after their
 * messages (in the same transaction where the server has them).
 *
 * Search filters on the server and ranks in the client: the scope's message ids come from the
 * messages collection (`resourceId`, or `threadId`, indexed), their vectors from the vectors
 * collection, and the cosine ranking is exact, in double precision, with core's tie rule. This
 * is the path FerretDB and MongoDB without Atlas Search take; `$vectorSearch` is not used (it
 * is eventually consistent, and FerretDB rejects it).
 */
export class MongoDBVectors extends VectorStoreBase {
  readonly search = 'exact' as const;

  constructor(
    private readonly connect: () => Promise<Connection>,
    run: core.VectorRunner,
  ) {
    super('mongodb', run);
  }

  protected async doGetSpace(): Promise<core.EmbeddingSpace | null> {
    const { collections: c } = await this.connect();
    const doc = await c.vectorSpace.findOne({ _id: 1 });
    return doc ? { id: doc.embedder, dimensions: doc.dimensions } : null;
  }

  protected async doClaimSpace(space: core.EmbeddingSpace): Promise<core.EmbeddingSpace> {
    const { collections: c } = await this.connect();
    try {
      await c.vectorSpace.insertOne({ _id: 1, embedder: space.id, dimensions: space.dimensions });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    return (await this.doGetSpace()) as core.EmbeddingSpace;
  }

  protected async doUpsertVectors(space: core.EmbeddingSpace, vectors: core.MessageVector[]): Promise<void> {
    const { collections: c } = await this.connect();
    const existing = new Set(
      (
        await c.messages
          .find({ _id: { $in: vectors.map((v) => v.messageId) } }, { projection: { _id: 1 } })
          .toArray()
      ).map((d) => d._id),
    );
    const writes = vectors
      .filter((v) => existing.has(v.messageId))
      .map((v) => ({
        replaceOne: {
          filter: { _id: v.messageId },
          replacement: { space: space.id, hash: v.hash, vec: toBinary(v.vector) },
          upsert: true,
        },
      }));
    if (writes.length > 0) await c.vectors.bulkWrite(writes, { ordered: false });
  }

  protected async doGetVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.StoredVector[]> {
    const { collections: c } = await this.connect();
    const docs = await c.vectors
      .find({ _id: { $in: ids }, space: space.id }, { projection: { hash: 1 } })
      .toArray();
    return docs.map((d) => ({ messageId: d._id, hash: d.hash }));
  }

  protected async doDeleteVectors(space: core.EmbeddingSpace, ids: string[]): Promise<void> {
    const { collections: c } = await this.connect();
    await c.vectors.deleteMany({ _id: { $in: ids }, space: space.id });
  }

  protected async doSearchVectors(args: core.VectorSearch): Promise<core.VectorHit[]> {
    const { collections: c } = await this.connect();
    const filter = {
      resourceId: args.resourceId,
      ...(args.threadId === undefined ? {} : { threadId: args.threadId }),
      ...(args.excludeIds?.length ? { _id: { $nin: args.excludeIds } } : {}),
    };
    const inScope = await c.messages.find(filter, { projection: { threadId: 1, createdAt: 1 } }).toArray();
    const byId = new Map(inScope.map((m) => [m._id, m]));
    const hits: core.VectorHit[] = [];
    for (let at = 0; at < inScope.length; at += IDS_PER_QUERY) {
      const ids = inScope.slice(at, at + IDS_PER_QUERY).map((m) => m._id);
      const docs = await c.vectors.find({ _id: { $in: ids }, space: args.space.id }).toArray();
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
  }
}
