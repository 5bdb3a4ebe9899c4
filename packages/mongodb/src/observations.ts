import type { ObservationDriver, ObservationRow, ObservationVersion } from '@engram/core/driver';
import type { ObservationDocument } from './collections.ts';
import type { Connection } from './driver.ts';
import { isDuplicateKey } from './errors.ts';
import type { MongoTx, Write } from './locks.ts';
import { threadLock } from './threads.ts';
import { assertReplaced } from './writes.ts';

/** The write-lock key of an observation log (see `locks.ts`). */
export const observationLock = (key: string) => `observations:${key}`;

function toDocument(row: ObservationRow): ObservationDocument {
  const { key, generation, resourceId, threadId, version, body, updatedAt } = row;
  return { key, generation, resourceId, threadId, version, body, updatedAt };
}

/**
 * Observation logs in `<prefix>observations`, one document per `(key, generation)` (a unique
 * index), the body a BSON string (length-prefixed, so NUL and any Unicode are stored as given).
 * Each swap is a compare-and-set on the version of the expected row:
 * - the first row: an insert of generation 1; a duplicate key means another swap won;
 * - the same generation: an update filtered on `{ key, generation, version }`;
 * - a new generation: that update raising only the old row's `version` (the seal), then the insert
 *   of the next row, in `write` (a transaction where the server has them, else under the log's
 *   write lock).
 *
 * Where there are write locks (FerretDB, standalone servers) every swap holds the log's lock:
 * FerretDB 1.x runs an update as a read and a whole-document write, so a filtered update alone is
 * no compare-and-set there. Readers take no lock, so a reader may see a sealed row before the next
 * one is inserted (its version already raised): a replace therefore checks, under the lock, that
 * no newer generation exists, or it would write into a sealed row behind the head.
 *
 * A process killed between the seal and the insert (no transaction) leaves generation `g` sealed
 * at `version + 1` and no `g + 1`: the head is then row `g` at that version with its old body, a
 * consistent log (nothing acknowledged is lost, the swap was never acknowledged), and the next
 * swap starts from it. So does a lock lost between the two (the write runs again, its seal then
 * matches nothing: lost). A duplicate key on that insert cannot follow a seal that matched; it
 * is reported as a lost swap, leaving the same consistent state.
 *
 * A thread's rows are deleted in the write that deletes the thread, holding the thread's and the
 * log's locks (or in its transaction, which conflicts with a new-generation swap's), so a swap of
 * that log never leaves a generation behind the delete.
 */
export function observationDriver(c: Connection, write: Write): ObservationDriver<MongoTx> {
  const rows = () => c.collections.observations;
  return {
    head: async (key) => {
      const doc = await rows().findOne({ key }, { sort: { generation: -1 } });
      return doc; // core copies and normalises what a driver returns
    },
    generations: async (key) => {
      const docs = await rows().find({ key }).sort({ generation: 1 }).toArray();
      return docs;
    },
    swap: async (expected, next) => {
      try {
        if (expected === null) return await first(c, next);
        if (next.generation === expected.generation) return await replace(c, expected, next);
        return await write(async (tx) => {
          await tx.lock([observationLock(next.key)]);
          await tx.fence();
          const sealed = await rows().updateOne(
            { key: next.key, generation: expected.generation, version: expected.version },
            { $set: { version: next.version } },
            { session: tx.session },
          );
          if (sealed.matchedCount === 0) return false;
          assertReplaced(sealed, 'observations.swap');
          // A crash here leaves a consistent log: see above.
          await tx.fence();
          await rows().insertOne(toDocument(next), { session: tx.session });
          return true;
        });
      } catch (error) {
        // Generation 1 written by another swap (or, after a seal, an impossible next row): lost.
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
    deleteByThread: async (tx, threadId) => {
      await tx.lock([threadLock(threadId), observationLock(`thread:${threadId}`)]);
      await tx.fence();
      await rows().deleteMany({ threadId }, { session: tx.session });
    },
    /** A log summarises messages; it is not rewritten when one is deleted. */
    deleteByMessages: async () => {},
    /** The resource-scope log (thread-scope logs go with their threads). */
    deleteByResource: async (tx, resourceId) => {
      const key = `resource:${resourceId}`;
      await tx.lock([observationLock(key)]);
      await tx.fence();
      await rows().deleteMany({ key }, { session: tx.session });
    },
  };
}

/** Inserts generation 1; a duplicate key (thrown) when the log has a row. */
function first(c: Connection, next: ObservationRow): Promise<boolean> {
  return c.locks.hold([observationLock(next.key)], async (fence) => {
    await fence();
    await c.collections.observations.insertOne(toDocument(next));
    return true;
  });
}

/** Replaces the newest generation if it is still at the expected version. */
function replace(c: Connection, expected: ObservationVersion, next: ObservationRow): Promise<boolean> {
  const rows = c.collections.observations;
  return c.locks.hold([observationLock(next.key)], async (fence) => {
    // A sealed row read before its successor was inserted: not the head any more.
    const newer = await rows.findOne(
      { key: next.key, generation: { $gt: expected.generation } },
      { projection: { _id: 1 } },
    );
    if (newer) return false;
    await fence();
    const result = await rows.updateOne(
      { key: next.key, generation: expected.generation, version: expected.version },
      {
        $set: {
          version: next.version,
          resourceId: next.resourceId,
          body: next.body,
          updatedAt: next.updatedAt,
        },
      },
    );
    if (result.matchedCount === 0) return false;
    assertReplaced(result, 'observations.swap');
    return true;
  });
}
