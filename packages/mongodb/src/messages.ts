import type { KeywordAnalyzer, Message, MessageDriver, WindowQuery } from '@engram/core/driver';
import type { AnyBulkWriteOperation, Filter, MongoBulkWriteError } from 'mongodb';
import { type Collections, createdAtFilter, type MessageDocument, pageOf } from './collections.ts';
import type { Connection } from './driver.ts';
import { isDuplicateKey } from './errors.ts';
import { indexMessages } from './keywords.ts';
import { LockLost, type MongoTx } from './locks.ts';
import { toMessage, toMessageDocument } from './mapping.ts';
import { threadLock } from './threads.ts';
import { bulkWrite } from './writes.ts';

/** Messages, one document each; core composes their writes from `places`, `put` and `remove`. */
export function messageDriver(c: Connection, analyzer: KeywordAnalyzer): MessageDriver<MongoTx> {
  return {
    // The page (count + one bounded `find`) and the include windows, in parallel.
    readPage: async (query) => {
      const { threadId, resourceId, dateRange: range } = query;
      const filter: Filter<MessageDocument> = { threadId, ...scope(resourceId), ...createdAtFilter(range) };
      const dir = query.direction === 'ASC' ? 1 : -1;
      const [total, page, windows] = await Promise.all([
        c.collections.messages.countDocuments(filter),
        // `(createdAt, _id)` order, served by the `thread_created` index.
        pageOf(c.collections.messages.find(filter).sort({ createdAt: dir, _id: dir }), query),
        includeWindows(c.collections, query.include, resourceId),
      ]);
      return { page: page.map(toMessage), total, windows: windows.flat() };
    },
    // Under write locks, the versions read are kept for `put` (see `MongoTx.read`).
    byIds: async (ids, tx) => {
      const docs = await c.collections.messages
        .find({ _id: { $in: ids } }, { session: tx?.session })
        .toArray();
      if (tx?.stored) {
        tx.read ??= new Map();
        for (const doc of docs) tx.read.set(doc._id, doc.version ?? null);
      }
      return docs.map(toMessage);
    },
    // Under write locks, of the threads given and those the messages are in: a stored message changes
    // only under its thread's lock, and a new id is inserted (`put`). Under the locks only the
    // messages found are read again: one that moved to another thread meanwhile makes the write start
    // again, and so does one inserted meanwhile (`put`'s insert meets its duplicate). A save's first
    // run under locks takes its messages for new without reading them (FerretDB 1.x reads the whole
    // collection for `$in`): its insert meets any that is not, and the write runs again, reading.
    places: async (tx, threadIds, messageIds, saving) => {
      const { session } = tx;
      const read = async (ids: string[]) =>
        ids.length === 0
          ? []
          : c.collections.messages
              .find({ _id: { $in: ids } }, { projection: { threadId: 1, resourceId: 1 }, session })
              .toArray();
      const locking = c.locks.enabled && !session;
      const before = locking && saving && tx.attempt === 0 ? [] : await read(messageIds);
      const locked = new Set([...threadIds, ...before.map((m) => m.threadId)]);
      if (locking) await tx.lock([...locked].sort().map(threadLock));
      const [owners, found] = await Promise.all([
        threadIds.length === 0
          ? []
          : c.collections.threads
              .find({ _id: { $in: threadIds } }, { projection: { resourceId: 1 }, session })
              .toArray(),
        locking ? read(before.map((m) => m._id)) : before,
      ]);
      if (found.some((m) => !locked.has(m.threadId))) throw new LockLost();
      if (locking) tx.stored = new Set(found.map((m) => m._id));
      return {
        threads: new Map(owners.map((t) => [t._id, t.resourceId])),
        messages: new Map(found.map((m) => [m._id, { threadId: m.threadId, resourceId: m.resourceId }])),
      };
    },
    // Replaced whole by `_id`, the one filter FerretDB 1.x answers from its index; under locks the
    // ids `places` did not find are inserted first, and a duplicate undoes them and starts again
    // with nothing of the batch written (a message it moved would leave its old thread unbumped).
    // Under locks a message this write read (`byIds`: an update) is replaced only at the version
    // read: a holder that stood still between its fence and its write, past its lease, finds
    // another writer's version and starts again, reading, instead of writing back what it read.
    put: async (tx, messages) => {
      const docs = messages.map((m, i) => toMessageDocument(m, `messages[${i}]`, c.codec));
      const fresh = docs.filter((d) => tx.stored && !tx.stored.has(d._id));
      const stored = docs.filter((d) => !tx.stored || tx.stored.has(d._id));
      const read = tx.read ?? new Map<string, string | null>();
      const replace = (docs: MessageDocument[], checked: boolean) =>
        docs.map(
          ({ _id, ...replacement }): AnyBulkWriteOperation<MessageDocument> => ({
            replaceOne: checked
              ? { filter: { _id, version: read.get(_id) ?? null } as Filter<MessageDocument>, replacement }
              : { filter: { _id }, replacement, upsert: true },
          }),
        );
      const checked = stored.filter((d) => read.has(d._id));
      const ops = replace(
        stored.filter((d) => !read.has(d._id)),
        false,
      );
      if (fresh.length > 0) {
        await tx.fence();
        try {
          await c.collections.messages.insertMany(fresh);
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          const [first] = [(error as MongoBulkWriteError).writeErrors].flat();
          const ours = fresh.slice(0, first?.index ?? 0).map((d) => d._id);
          if (ours.length > 0) {
            await tx.fence();
            await c.collections.messages.deleteMany({ _id: { $in: ours } });
          }
          throw new LockLost();
        }
      }
      await bulkWrite(c, c.collections.messages, ops, tx);
      if (checked.length > 0) {
        const matched = await bulkWrite(c, c.collections.messages, replace(checked, true), tx);
        if (matched < checked.length) throw new LockLost();
      }
      // The keyword index follows in the same write (see `keywords.ts`).
      await indexMessages(c, tx, messages, analyzer);
    },
    remove: async (tx, ids) => {
      await tx.fence();
      await c.collections.messages.deleteMany({ _id: { $in: ids } }, { session: tx.session });
    },
  };
}

/** Each target with its neighbours in its own thread: one query for the targets, two per window. */
async function includeWindows(
  c: Collections,
  include: WindowQuery[],
  resourceId: string | undefined,
): Promise<Message[][]> {
  if (include.length === 0) return [];
  const ids = [...new Set(include.map((w) => w.id))];
  const found = await c.messages.find({ _id: { $in: ids }, ...scope(resourceId) }).toArray();
  const targets = new Map(found.map((d) => [d._id, d]));
  // Messages of the target's thread strictly before (`-1`) or after it in `(createdAt, _id)` order.
  const beside = (target: MessageDocument, count: number, dir: 1 | -1) => {
    const op = dir < 0 ? '$lt' : '$gt';
    const $or = [
      { createdAt: { [op]: target.createdAt } },
      { createdAt: target.createdAt, _id: { [op]: target._id } },
    ];
    const filter = { threadId: target.threadId, ...scope(resourceId), $or };
    return count === 0
      ? []
      : c.messages.find(filter).sort({ createdAt: dir, _id: dir }).limit(count).toArray();
  };
  return Promise.all(
    include.map(async (window) => {
      const target = targets.get(window.id);
      if (!target) return [];
      const [before, after] = await Promise.all([
        beside(target, window.withPreviousMessages, -1),
        beside(target, window.withNextMessages, 1),
      ]);
      return [...before, target, ...after].map(toMessage);
    }),
  );
}

/** `{ resourceId }` when a resource restricts the query, else nothing. */
function scope(resourceId: string | undefined): { resourceId?: string } {
  return resourceId === undefined ? {} : { resourceId };
}
