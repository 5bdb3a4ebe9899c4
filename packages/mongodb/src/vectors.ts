import {
  chunks,
  compareHits,
  compareMessages,
  cosine,
  type Message,
  newVersion,
  type VectorDriver,
  type VectorHit,
  type VectorSearch,
} from '@engram/core/driver';
import { Binary, type Filter } from 'mongodb';
import type { MessageDocument } from './collections.ts';
import type { Connection } from './driver.ts';
import type { MongoTx, Write } from './locks.ts';
import { toMessage } from './mapping.ts';
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

/** A message of a search's scope, as read for ranking: its place. */
type ScopeRow = Pick<Message, 'id' | 'threadId' | 'createdAt'>;

/** The messages of the search's scope (the resource, or one thread of it), less `excludeIds`. */
async function scopeRows(c: Connection, args: VectorSearch): Promise<ScopeRow[]> {
  const filter = {
    resourceId: args.resourceId,
    ...(args.threadId === undefined ? {} : { threadId: args.threadId }),
    ...(args.excludeIds?.length ? { _id: { $nin: args.excludeIds } } : {}),
  };
  return placesOf(c, filter);
}

/** The places of the messages matching `filter`. */
async function placesOf(c: Connection, filter: Filter<MessageDocument>): Promise<ScopeRow[]> {
  const docs = await c.collections.messages
    .find(filter, { projection: { threadId: 1, createdAt: 1 } })
    .toArray();
  return docs.map((m) => ({ id: m._id, threadId: m.threadId, createdAt: m.createdAt }));
}

/** The scope's best `topK` by the exact score and core's tie rule, over the vectors of `rows`. */
async function rank(c: Connection, args: VectorSearch, rows: ScopeRow[]): Promise<VectorHit[]> {
  const byId = new Map(rows.map((m) => [m.id, m]));
  const hits: VectorHit[] = [];
  const ids = rows.map((m) => m.id);
  for (const part of chunks(ids, IDS_PER_QUERY)) {
    const docs = await c.collections.vectors.find({ _id: { $in: part }, space: args.space.id }).toArray();
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

/**
 * The ids of the thread's newest `last` messages of the resource, newest first: from the scope's
 * rows when they hold the thread (the resource's, or that thread's), else read.
 */
async function historyOf(
  c: Connection,
  args: VectorSearch,
  rows: ScopeRow[],
  { threadId, last }: { threadId: string; last: number },
): Promise<string[]> {
  const thread =
    args.threadId === undefined || args.threadId === threadId
      ? rows.filter((m) => m.threadId === threadId)
      : await placesOf(c, { threadId, resourceId: args.resourceId });
  return thread
    .sort(compareMessages)
    .slice(Math.max(0, thread.length - last))
    .reverse()
    .map((m) => m.id);
}

/** The ids of a hit's window among the scope's rows: its thread's `before` and `after` around it. */
function windowIds(rows: ScopeRow[], id: string, before: number, after: number): string[] {
  const target = rows.find((m) => m.id === id);
  if (!target) return [];
  const thread = rows.filter((m) => m.threadId === target.threadId).sort(compareMessages);
  const at = thread.indexOf(target);
  return thread.slice(Math.max(0, at - before), at + after + 1).map((m) => m.id);
}

/**
 * Vectors in `<prefix>vectors`, one document per message (`_id` = message id); core deletes them
 * in the write that deletes their messages. Search filters on the server (the scope's message ids
 * from the messages collection, indexed) and ranks in the client, exactly, with core's tie rule:
 * `$vectorSearch` is eventually consistent, and FerretDB rejects it. `write` is the driver's unit
 * of work; `existing` says which of the message ids are stored, read inside the write `tx` and,
 * under write locks, with their threads' locks held (the driver's `messages.places`).
 */
export function vectorDriver(
  c: Connection,
  write: Write,
  existing: (tx: MongoTx, messageIds: string[]) => Promise<Set<string>>,
): VectorDriver<MongoTx> {
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
    // Of messages that exist, in one write that a delete of those messages cannot interleave with
    // (else a vector written after the delete's sweep outlives its message): `existing` reads them
    // as a save does, under the write locks of their threads, which every delete of them holds; in
    // a transaction the messages are written too (a new `version`), so a racing delete's
    // transaction and this one conflict and the one that runs again reads what the other did. On
    // FerretDB 1.x the vectors are inserted where they can be (`putWhole`), as a vector is mostly new.
    upsertVectors: (space, vectors) =>
      write(async (tx) => {
        const found = await existing(
          tx,
          vectors.map((v) => v.messageId),
        );
        if (found.size === 0) return;
        if (tx.session) {
          await c.collections.messages.updateMany(
            { _id: { $in: [...found] } },
            { $set: { version: newVersion() } },
            { session: tx.session },
          );
        }
        const docs = vectors
          .filter((v) => found.has(v.messageId))
          .map((v) => ({ _id: v.messageId, space: space.id, hash: v.hash, vec: toBinary(v.vector) }));
        await putWhole(c, c.collections.vectors, docs, found, tx);
      }),
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
    searchVectors: async (args) => rank(c, args, await scopeRows(c, args)),
    // The scope's rows give the history and the windows' places too: besides the search's reads,
    // one read of the windows' messages.
    historyInSearch: true,
    searchWithWindows: async ({ before, after, history, ...args }) => {
      const rows = await scopeRows(c, { ...args, excludeIds: [] });
      const recent = history ? await historyOf(c, args, rows, history) : undefined;
      const excluded = new Set([...args.excludeIds, ...(recent ?? [])]);
      const hits = await rank(
        c,
        args,
        rows.filter((m) => !excluded.has(m.id)),
      );
      const ids = new Set(hits.flatMap((h) => windowIds(rows, h.messageId, before, after)));
      const windows: Message[] = [];
      for (const chunk of chunks([...ids], IDS_PER_QUERY)) {
        // Still the resource's (a message moved since the scope's read is left out, as listed).
        const filter = { _id: { $in: chunk }, resourceId: args.resourceId };
        windows.push(...(await c.collections.messages.find(filter).toArray()).map(toMessage));
      }
      const found = { hits, windows };
      return recent ? { ...found, history: recent } : found;
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
