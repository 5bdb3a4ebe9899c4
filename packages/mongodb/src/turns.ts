import { newVersion, type TurnDriver } from '@engram/core/driver';
import type { Filter } from 'mongodb';
import type { TurnDocument } from './collections.ts';
import type { Connection } from './driver.ts';
import type { MongoTx } from './locks.ts';
import { threadLock } from './threads.ts';

/**
 * Turn records in `<prefix>turns`, one document per turn, `_id` the id of the turn's first
 * message, the body a BSON string (length-prefixed: NUL and any Unicode stored as given),
 * `createdAt` a BSON date (milliseconds). `put` is one replace by `_id` (upsert), in the write
 * that holds the row's thread (its lock, taken by `messages.places`); `list` one find
 * over the index `(threadId, createdAt, _id)`, newest first, strictly older than the cursor.
 * Rows go in the write that deletes their thread (under its lock) or their message.
 */
export function turnDriver(c: Connection): TurnDriver<MongoTx> {
  const rows = () => c.collections.turns;
  return {
    put: async (tx, { id, threadId, resourceId, createdAt, body }) => {
      await tx.fence();
      // In a transaction the thread is written too (a new `version`, which a compare-and-set of
      // its working memory then reads again), so this write and a racing deleteThread's conflict.
      if (tx.session) {
        const bump = { $set: { version: newVersion() } };
        await c.collections.threads.updateOne({ _id: threadId }, bump, { session: tx.session });
      }
      const doc = { threadId, resourceId, createdAt, body };
      await rows().replaceOne({ _id: id }, doc, { upsert: true, session: tx.session });
    },
    get: async (id) => {
      const doc = await rows().findOne({ _id: id });
      return doc && toRow(doc);
    },
    list: async (threadId, limit, before) => {
      const filter: Filter<TurnDocument> = before
        ? {
            threadId,
            $or: [
              { createdAt: { $lt: before.createdAt } },
              { createdAt: before.createdAt, _id: { $lt: before.id } },
            ],
          }
        : { threadId };
      const docs = await rows().find(filter).sort({ createdAt: -1, _id: -1 }).limit(limit).toArray();
      return docs.map(toRow);
    },
    deleteByThread: async (tx, threadId) => {
      await tx.lock([threadLock(threadId)]);
      await tx.fence();
      await rows().deleteMany({ threadId }, { session: tx.session });
    },
    deleteByMessages: async (tx, ids) => {
      await tx.fence();
      await rows().deleteMany({ _id: { $in: ids } }, { session: tx.session });
    },
  };
}

function toRow({ _id, threadId, resourceId, createdAt, body }: TurnDocument) {
  return { id: _id, threadId, resourceId, createdAt, body };
}
