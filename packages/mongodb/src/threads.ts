import type { ResourceDriver, ThreadDriver } from '@engram/core/driver';
import { createdAtFilter, pageOf, type ResourceDocument } from './collections.ts';
import type { Connection } from './driver.ts';
import { encodeKey, valueHash } from './encoding.ts';
import type { MongoTx } from './locks.ts';
import { assertDocumentSize, metadataSetPaths, toResource, toThread, toThreadDocument } from './mapping.ts';
import { assertReplaced, bulkWrite, insertNew, updateFields } from './writes.ts';

/** The write-lock key of a thread (see `locks.ts`). */
export const threadLock = (threadId: string) => `threads:${threadId}`;
/** The write-lock key of a resource. */
export const resourceLock = (resourceId: string) => `resources:${resourceId}`;

/** Threads, one document each, written under their lock where locks are on; `updatedAt` only raised (`$max`). */
export function threadDriver(c: Connection): ThreadDriver<MongoTx> {
  return {
    get: async (id) => {
      const doc = await c.collections.threads.findOne({ _id: id });
      return doc && toThread(doc);
    },
    // An insert-if-absent: the unique `_id` makes it atomic on every server. Under the thread's
    // lock where locks are on, so that `upsert` never races it.
    insert: (thread, version) =>
      c.locks.hold([threadLock(thread.id)], async (fence) => {
        await fence();
        return insertNew(c.collections.threads, toThreadDocument(thread, c.codec, version));
      }),
    // A whole replacement: every server compares it with its keys (see `writes.ts`).
    upsert: async (thread, version) => {
      const { _id, ...fields } = toThreadDocument(thread, c.codec, version);
      const result = await c.locks.hold([threadLock(_id)], async (fence) => {
        await fence();
        return c.collections.threads.replaceOne({ _id }, fields, { upsert: true });
      });
      assertReplaced(result, 'saveThread');
    },
    update: async ({ id, title, metadata, version }) => {
      const set: Record<string, unknown> = {
        ...(title !== undefined && { title }),
        ...(metadata && metadataSetPaths(metadata, c.codec, true)),
        ...(version !== undefined && { version }),
      };
      assertDocumentSize(set, 'the thread update');
      // `updatedAt` is raised to the time under the lock.
      const doc = await c.locks.hold([threadLock(id)], (fence) =>
        updateFields(
          c.collections.threads,
          id,
          { set, later: { updatedAt: new Date() } },
          c.ferretdb1,
          'updateThread',
          fence,
        ),
      );
      return doc && toThread(doc);
    },
    // The threads are locked by `messages.places` of the same write.
    touch: async (tx, bumps) => {
      const now = new Date();
      const ops = [...bumps].map(([_id, newest]) => {
        const updatedAt = newest && newest > now ? newest : now;
        return { updateOne: { filter: { _id }, update: { $max: { updatedAt } } } };
      });
      await bulkWrite(c, c.collections.threads, ops, tx);
    },
    // The thread goes first: a failure in between leaves messages no thread lists, which a
    // second deleteThread removes.
    // Messages first: without a transaction (FerretDB), a writer that stops in between leaves
    // the thread, which the next deleteThread or deleteResource finds and finishes.
    delete: async (tx, id) => {
      await tx.lock([threadLock(id)]);
      await tx.fence();
      await c.collections.messages.deleteMany({ threadId: id }, { session: tx.session });
      await tx.fence();
      await c.collections.threads.deleteOne({ _id: id }, { session: tx.session });
    },
    // Equality on the resource and on each metadata key's hash (never a caller's value, which
    // MongoDB could read as an operator), the range of `createdAt`; the chosen date, ties by id,
    // both in `direction`.
    readPage: async (query) => {
      const filter: Record<string, unknown> = {
        ...(query.resourceId !== undefined && { resourceId: query.resourceId }),
        ...createdAtFilter(query.dateRange),
      };
      for (const [key, value] of Object.entries(query.metadata ?? {})) {
        filter[`metadataHash.${encodeKey(key)}`] = valueHash(value);
      }
      const dir = query.direction === 'ASC' ? 1 : -1;
      const [total, docs] = await Promise.all([
        c.collections.threads.countDocuments(filter),
        pageOf(c.collections.threads.find(filter).sort({ [query.orderBy]: dir, _id: dir }), query),
      ]);
      return { kind: 'page', threads: docs.map(toThread), total };
    },
  };
}

/** Resources: one upsert each, merging metadata one `metadata.<key>` path per key. */
export function resourceDriver(c: Connection): ResourceDriver<MongoTx> {
  return {
    delete: async (tx, id) => {
      await tx.lock([resourceLock(id)]);
      await tx.fence();
      await c.collections.resources.deleteOne({ _id: id }, { session: tx.session });
    },
    list: async (after, limit) => {
      const filter = after === null ? {} : { _id: { $gt: after } };
      const docs = await c.collections.resources
        .find(filter, { projection: { _id: 1 } })
        .sort({ _id: 1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => d._id);
    },
    get: async (id) => {
      const doc = await c.collections.resources.findOne({ _id: id });
      return doc && toResource(doc);
    },
    update: async ({ id, workingMemory, metadata = {}, version, now }) => {
      const set: Record<string, unknown> = {
        ...metadataSetPaths(metadata, c.codec, false),
        ...(workingMemory !== undefined && { workingMemory, version }),
      };
      // `$setOnInsert` of `metadata` would conflict with `$set` of `metadata.<key>`.
      const setOnInsert = { createdAt: now, ...(Object.keys(metadata).length === 0 && { metadata: {} }) };
      assertDocumentSize(set, 'the resource update');
      const update = { set, setOnInsert, upsert: true, later: { updatedAt: now } };
      const doc = await c.locks.hold([resourceLock(id)], (fence) =>
        updateFields(c.collections.resources, id, update, c.ferretdb1, 'updateResource', fence),
      );
      return toResource(doc as ResourceDocument);
    },
  };
}
