import {
  type BackfillListener,
  chunks,
  KEYWORD_BACKFILL,
  KEYWORD_BACKFILL_BATCH,
  type KeywordAnalyzer,
  type KeywordDriver,
  keywordTerms,
  type Message,
  RESOURCE_BM25,
  rankIndexed,
} from '@engram/core/driver';
import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { Collections, KeywordDocument } from './collections.ts';
import type { Connection } from './driver.ts';
import type { MongoTx } from './locks.ts';
import { toMessage } from './mapping.ts';
import { threadLock } from './threads.ts';
import { putWhole } from './writes.ts';

/** Upserts per command in the backfill. */
const UPSERTS_PER_COMMAND = 20;

/**
 * The keyword index in `<prefix>keywords`, one document per message with text (`_id` = message
 * id): its resource, thread and `createdAt`, its terms (core's analyzer, repeats kept) and
 * their number. `put` rewrites the documents of the messages it writes, in the same write (the
 * session transaction, or the ordered commands under the thread locks), and core's cascade hooks
 * delete them with their messages.
 *
 * FerretDB 1.24 has no `text` index (`$text` is an unknown operator) and neither has `$search`
 * (Atlas only); a real MongoDB's `text` index ranks by its own term weighting, not BM25, and
 * would tokenise differently from every other store. So the index is ours on every server:
 * a search reads the resource's documents holding any query term and the lengths of all its
 * documents (two queries on the `resourceId` index, in parallel), and ranks them in the client
 * with core's `rankIndexed` (BM25 as `bm25Score`). Statistics are the resource's, so another
 * tenant's text never changes a score; the search reads every document of the resource that
 * holds a query term.
 */
export function keywordDriver(c: Connection, analyzer: KeywordAnalyzer): KeywordDriver<MongoTx> {
  return {
    analyzer,
    ranking: RESOURCE_BM25,
    search: async (query) => {
      const { keywords } = c.collections;
      // Lengths summed here: FerretDB 1.24's `$group` answers 0 for `$sum` of a field.
      const [lengths, docs] = await Promise.all([
        keywords.find({ resourceId: query.resourceId }, { projection: { _id: 0, length: 1 } }).toArray(),
        keywords.find({ resourceId: query.resourceId, terms: { $in: query.terms } }).toArray(),
      ]);
      if (lengths.length === 0) return [];
      const terms = lengths.reduce((sum, d) => sum + d.length, 0);
      const rows = docs.map((d) => [{ ...d, id: d._id }, d.terms] as const);
      return rankIndexed(rows, query, { documents: lengths.length, terms });
    },
    deleteByThread: async (tx, threadId) => {
      await tx.lock([threadLock(threadId)]);
      await tx.fence();
      await c.collections.keywords.deleteMany({ threadId }, { session: tx.session });
    },
    deleteByMessages: async (tx, ids) => {
      await tx.fence();
      await c.collections.keywords.deleteMany({ _id: { $in: ids } }, { session: tx.session });
    },
  };
}

/** The index document of `message`, or `null` when it has no terms. */
export function keywordDocument(message: Message, analyzer: KeywordAnalyzer): KeywordDocument | null {
  const terms = keywordTerms(message, analyzer);
  if (terms.length === 0) return null;
  const { id, resourceId, threadId, createdAt } = message;
  return { _id: id, resourceId, threadId, createdAt, terms, length: terms.length };
}

/**
 * Inside `put`'s write (under the messages' thread locks where there are locks): the index
 * documents of these messages written whole, or deleted when they have no terms (and were stored). The documents of
 * messages `put` inserts (not in `tx.stored`) are inserted where that is cheaper (`putWhole`); one
 * left under such an id by a writer that stopped half-way is replaced all the same.
 */
export async function indexMessages(
  c: Connection,
  tx: MongoTx,
  messages: readonly Message[],
  analyzer: KeywordAnalyzer,
): Promise<void> {
  const { keywords } = c.collections;
  const isNew = (id: string) => tx.stored !== undefined && !tx.stored.has(id);
  const docs: KeywordDocument[] = [];
  const termless: string[] = [];
  for (const m of messages) {
    const doc = keywordDocument(m, analyzer);
    if (doc) docs.push(doc);
    else termless.push(m.id);
  }
  const absent = new Set(docs.filter((d) => isNew(d._id)).map((d) => d._id));
  await putWhole(c, keywords, docs, absent, tx);
  // A message `put` inserts has no document to delete: on FerretDB 1.x the delete reads the whole
  // collection, and with the index off (`keywords: false`) every message is termless.
  const stored = termless.filter((id) => !isNew(id));
  if (stored.length > 0) {
    await tx.fence();
    await keywords.deleteMany({ _id: { $in: stored } }, { session: tx.session });
  }
}

/**
 * The migration's backfill: indexes the messages stored before the index, in `_id` order, a batch
 * at a time, each document inserted only when missing (a message written since has its own). The
 * last id done is kept in the lock collection's document `keyword-backfill`, so a backfill cut
 * short goes on from there; it is deleted at the end.
 */
export async function backfillKeywords(
  collections: Collections,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
): Promise<void> {
  const cursor = collections.locks as unknown as Collection<{ _id: string; after: string }>;
  let after = (await cursor.findOne({ _id: 'keyword-backfill' }))?.after;
  // Resumed: the messages up to the kept place were done by the run that stopped; counts what is left.
  const total = await collections.messages.countDocuments(after === undefined ? {} : { _id: { $gt: after } });
  let done = 0;
  let reported = false;
  for (;;) {
    const batch = await collections.messages
      .find(after === undefined ? {} : { _id: { $gt: after } })
      .sort({ _id: 1 })
      .limit(KEYWORD_BACKFILL_BATCH)
      .toArray();
    if (batch.length === 0) break;
    const ops = batch.flatMap((m): AnyBulkWriteOperation<KeywordDocument>[] => {
      const doc = keywordDocument(toMessage(m), analyzer);
      if (!doc) return [];
      const { _id, ...fields } = doc;
      return [{ updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } }];
    });
    // A few updates a command, as `bulkWrite` does on FerretDB 1.x (the server is not known yet).
    for (const part of chunks(ops, UPSERTS_PER_COMMAND)) await collections.keywords.bulkWrite(part);
    after = batch.at(-1)?._id;
    await cursor.replaceOne({ _id: 'keyword-backfill' }, { after: after as string }, { upsert: true });
    done += batch.length;
    reported = true;
    progress({ backfill: KEYWORD_BACKFILL, done, total: Math.max(total, done) });
  }
  if (!reported) progress({ backfill: KEYWORD_BACKFILL, done, total });
  await cursor.deleteOne({ _id: 'keyword-backfill' });
}
