import {
  type Message,
  type MessagePatch,
  type MessageRead,
  messageOfAnotherResource,
  type NormalizedInclude,
  type NormalizedListMessages,
  newestByThread,
  pageOffset,
  type RetryOptions,
  sortMessages,
  threadOfAnotherResource,
} from '@engram/core/adapter';
import type { ClientSession } from 'mongodb';
import type { Collections, MessageDocument } from './collections.ts';
import {
  atomically,
  type Connection,
  storableIdList,
  storableIds,
  threadLock,
  upsert,
} from './connection.ts';
import { isDuplicateKey, threadNotFound } from './errors.ts';
import { messagePatchSet, toMessage, toMessageDocument } from './mapping.ts';
import { besideFilter, messageFilter, messageSort, scope } from './queries.ts';
import { assertStored, updateFields } from './writes.ts';

/**
 * The message operations. `saveMessages` checks every thread and resource first, then writes the
 * batch with one ordered `bulkWrite` — inside a transaction where the server has them.
 */
export async function saveMessages(
  connection: Connection,
  messages: Message[],
  retry: RetryOptions,
): Promise<Message[]> {
  // Everything is encoded and checked before the first query.
  const docs = messages.map((message, i) => toMessageDocument(message, `messages[${i}]`, connection.codec));
  const ids = docs.map((d) => d._id);
  const threadIds = [...new Set(messages.map((m) => m.threadId))];
  await atomically(connection, async (c, session) => {
    const threads = await c.threads
      .find({ _id: { $in: threadIds } }, { projection: { resourceId: 1 }, session })
      .toArray();
    const owners = new Map(threads.map((t) => [t._id, t.resourceId]));
    for (const message of messages) {
      const owner = owners.get(message.threadId);
      if (owner === undefined) throw threadNotFound(message.threadId);
      if (owner !== message.resourceId) {
        throw threadOfAnotherResource('mongodb', message.id, message.resourceId);
      }
    }
    const readStored = () =>
      c.messages
        .find({ _id: { $in: ids } }, { projection: { threadId: 1, resourceId: 1 }, session })
        .toArray();
    const previous = await readStored();
    refuseTakenIds(messages, previous);
    const touched = [...new Set([...previous.map((p) => p.threadId), ...threadIds])];
    // New ids are inserted, so one saved meanwhile by another resource is a duplicate `_id`
    // (11000) and refused instead of overwritten; ids stored for this resource are replaced by
    // `_id` alone, the one filter FerretDB 1.x answers from its index. After a duplicate key the
    // write reads the stored ids again and retries (`upsert`).
    let stored = new Set(previous.map((p) => p._id));
    const write = async () => {
      try {
        return await c.messages.bulkWrite(
          docs.map((doc) =>
            stored.has(doc._id)
              ? { replaceOne: { filter: { _id: doc._id }, replacement: withoutId(doc), upsert: true } }
              : { insertOne: { document: doc } },
          ),
          { ordered: true, session },
        );
      } catch (error) {
        if (isDuplicateKey(error)) {
          const now = await readStored();
          refuseTakenIds(messages, now);
          stored = new Set(now.map((p) => p._id));
        }
        throw error;
      }
    };
    if (session) await write();
    else await upsert(write, retry);
    const bumped = await connection.locks.hold(touched.map(threadLock), async (fence) => {
      await fence();
      return bumpThreads(c, touched, newestByThread(messages), session);
    });
    if (bumped.matchedCount < touched.length) await backOutDeletedThreads(c, threadIds, ids, session);
  });
  return structuredClone(messages);
}

/** `CONFLICT` when a stored message of another resource has the id of a message to save. */
function refuseTakenIds(
  messages: Message[],
  stored: Array<Pick<MessageDocument, '_id' | 'resourceId'>>,
): void {
  const owners = new Map(stored.map((doc) => [doc._id, doc.resourceId]));
  for (const message of messages) {
    const owner = owners.get(message.id);
    if (owner !== undefined && owner !== message.resourceId) {
      throw messageOfAnotherResource('mongodb', message.id);
    }
  }
}

/**
 * After a batch is written, a thread deleted meanwhile (a concurrent `deleteThread` without a
 * transaction) would leave the batch's messages orphaned: remove them and report `NOT_FOUND`.
 */
async function backOutDeletedThreads(
  c: Collections,
  threadIds: string[],
  ids: string[],
  session: ClientSession | undefined,
): Promise<void> {
  const alive = await c.threads
    .find({ _id: { $in: threadIds } }, { projection: { _id: 1 }, session })
    .toArray();
  const aliveIds = new Set(alive.map((t) => t._id));
  const gone = threadIds.filter((id) => !aliveIds.has(id));
  if (gone.length === 0) return;
  if (!session) await c.messages.deleteMany({ _id: { $in: ids }, threadId: { $in: gone } });
  throw threadNotFound(gone[0] as string, 'was deleted while its messages were being saved');
}

/** The page (count + one bounded `find`) and the include windows, in parallel. */
/** The page, its total and the include windows, read in parallel. */
export async function readMessagePage(c: Collections, args: NormalizedListMessages): Promise<MessageRead> {
  storableIds({ threadId: args.threadId, resourceId: args.resourceId });
  storableIdList(
    args.include.map((w) => w.id),
    'include',
  );
  const filter = messageFilter(args.threadId, args.resourceId, args.dateRange);
  const [total, page, windows] = await Promise.all([
    c.messages.countDocuments(filter),
    args.perPage === 0
      ? []
      : c.messages
          .find(filter)
          .sort(messageSort(args.direction))
          .skip(pageOffset(args.page, args.perPage))
          .limit(args.perPage === false ? 0 : args.perPage)
          .toArray(),
    includeWindows(c, args.include, args.resourceId),
  ]);
  return { page: page.map(toMessage), total, windows: windows.flat() };
}

/** Each target with its neighbours in its own thread: one query for the targets, two per window. */
async function includeWindows(
  c: Collections,
  include: NormalizedInclude[],
  resourceId: string | undefined,
): Promise<Message[][]> {
  if (include.length === 0) return [];
  const ids = [...new Set(include.map((w) => w.id))];
  const found = await c.messages.find({ _id: { $in: ids }, ...scope(resourceId) }).toArray();
  const targets = new Map(found.map((d) => [d._id, d]));
  const beside = (target: MessageDocument, side: 'before' | 'after', count: number) =>
    count === 0
      ? Promise.resolve([])
      : c.messages
          .find(besideFilter(target, side, resourceId))
          .sort(messageSort(side === 'before' ? 'DESC' : 'ASC'))
          .limit(count)
          .toArray();
  return Promise.all(
    include.map(async (window) => {
      const target = targets.get(window.id);
      if (!target) return [];
      const [before, after] = await Promise.all([
        beside(target, 'before', window.withPreviousMessages),
        beside(target, 'after', window.withNextMessages),
      ]);
      return [...before, target, ...after].map(toMessage);
    }),
  );
}

export async function listMessagesById(c: Collections, ids: string[]): Promise<Message[]> {
  storableIdList(ids, 'ids');
  return sortMessages((await c.messages.find({ _id: { $in: ids } }).toArray()).map(toMessage));
}

/**
 * One ordered `bulkWrite` of `$set`s, then the updated messages are read back. Where the server may
 * skip a `$set` of same-valued content under other keys (FerretDB 1.x), each message is updated
 * by a read and a replacement instead (see `writes.ts`).
 */
export async function updateMessages(connection: Connection, patches: MessagePatch[]): Promise<Message[]> {
  const c = connection.collections;
  const updates = patches.map((patch, i) => {
    storableIds({ [`patches[${i}].id`]: patch.id });
    return { id: patch.id, set: messagePatchSet(patch, `patches[${i}]`, connection.codec) };
  });
  const writes = updates.filter((u) => Object.keys(u.set).length > 0);
  let unmodified = false;
  if (connection.replaceUpdates) {
    for (const { id, set } of writes) await updateFields(c.messages, id, { set }, true, 'updateMessages');
  } else if (writes.length > 0) {
    const result = await c.messages.bulkWrite(
      writes.map((u) => ({ updateOne: { filter: { _id: u.id }, update: { $set: u.set } } })),
      { ordered: true },
    );
    unmodified = result.modifiedCount < result.matchedCount;
  }
  const docs = await c.messages.find({ _id: { $in: [...new Set(patches.map((p) => p.id))] } }).toArray();
  // A matched message left unmodified is either already as patched or a write the server dropped.
  if (unmodified) assertPatched(docs, writes);
  await touch(
    connection,
    docs.map((d) => d.threadId),
    newestByThread(docs),
  );
  return sortMessages(docs.map(toMessage));
}

/** Throws `STORAGE` when a found message does not hold what its patches (in order) set. */
function assertPatched(
  docs: MessageDocument[],
  writes: { id: string; set: Record<string, unknown> }[],
): void {
  const expected = new Map<string, Record<string, unknown>>();
  for (const { id, set } of writes) expected.set(id, { ...expected.get(id), ...set });
  for (const doc of docs) {
    const set = expected.get(doc._id);
    if (set) assertStored(doc as unknown as Record<string, unknown>, set, 'updateMessages');
  }
}

export async function deleteMessages(connection: Connection, ids: string[]): Promise<void> {
  storableIdList(ids, 'ids');
  const c = connection.collections;
  const found = await c.messages.find({ _id: { $in: ids } }, { projection: { threadId: 1 } }).toArray();
  if (found.length === 0) return;
  await c.messages.deleteMany({ _id: { $in: found.map((d) => d._id) } });
  await deleteVectorsOf(
    c,
    found.map((d) => d._id),
  );
  await touch(
    connection,
    found.map((d) => d.threadId),
  );
}

/** Removes the vectors of deleted messages (right after them; see `vectors.ts`). */
export async function deleteVectorsOf(c: Collections, ids: string[], session?: ClientSession): Promise<void> {
  if (ids.length > 0) await c.vectors.deleteMany({ _id: { $in: ids } }, { session });
}

/**
 * Bumps `updatedAt` of the threads `ids` (core's `bumpedUpdatedAt`): `$max` of the stored value,
 * the time of the write and the newest `createdAt` written into each (`newest`), so a write that
 * reaches the server late never sets it back. Absent threads are ignored (not matched).
 */
function bumpThreads(
  c: Collections,
  ids: string[],
  newest: Map<string, Date>,
  session?: ClientSession,
): Promise<{ matchedCount: number }> {
  const now = new Date();
  return c.threads.bulkWrite(
    ids.map((_id) => {
      const written = newest.get(_id);
      const updatedAt = written && written > now ? written : now;
      return { updateOne: { filter: { _id }, update: { $max: { updatedAt } } } };
    }),
    { ordered: false, session },
  );
}

/** Bumps `updatedAt` of the given threads under their locks (absent ones are ignored). */
async function touch(
  { collections: c, locks }: Connection,
  threadIds: string[],
  newest = new Map<string, Date>(),
): Promise<void> {
  const ids = [...new Set(threadIds)];
  if (ids.length === 0) return;
  await locks.hold(ids.map(threadLock), async (fence) => {
    await fence();
    return bumpThreads(c, ids, newest);
  });
}

/** A document without its `_id`, as `replaceOne` takes it. */
function withoutId<T extends { _id: unknown }>(doc: T): Omit<T, '_id'> {
  const { _id, ...rest } = doc;
  return rest;
}
