import {
  type CompareAndSetWorkingMemory,
  type LockedWorkingMemory,
  newVersion,
  RETRY,
  type RetryOptions,
  retryOptimistic,
  type VersionedValue,
  type WorkingMemoryCell,
} from '@engram/core/adapter';
import type { Filter, ObjectId } from 'mongodb';
import type { Collections, ResourceDocument, ThreadDocument } from './collections.ts';
import { type Connection, resourceLock, storableIds, threadLock } from './connection.ts';
import { assertStorableString, valueHash } from './encoding.ts';
import { isDuplicateKey } from './errors.ts';
import { assertDocumentSize, threadWorkingMemory } from './mapping.ts';
import { assertStored } from './writes.ts';

/** A stored version; `null` for a document written by other software without one. */
type Version = ObjectId | string | null;

/**
 * Working memory by compare-and-set (core runs the retries): read the document and its
 * `version`, then `findOneAndUpdate` filtered on `{ _id, version }` with a fresh version. A
 * writer that lost the race matches nothing. The first write of a missing resource is an
 * insert; losing that race to another insert is a duplicate key, and the retry takes the update
 * path.
 *
 * Under write locks (FerretDB 1.x, see `locks.ts`) each write holds the document's lock, so the
 * filtered update is a compare-and-set there too; and once the store knows it runs with locks, a
 * cell that lost a race is updated with its lock held from the read to the write
 * (`afterLostRace`), as every other writer of it waits for that lock: no more lost races.
 */
export function workingMemoryStrategy(
  connect: () => Promise<Connection>,
  retry: RetryOptions,
): CompareAndSetWorkingMemory<Version> {
  let locked = false;
  const connected = async () => {
    const connection = await connect();
    locked = connection.locks.enabled;
    return connection;
  };
  const underLock: LockedWorkingMemory = {
    kind: 'locked',
    update: async (cell, apply) => {
      const { collections: c, locks } = await connected();
      return locks.hold([lockOf(cell)], (fence) =>
        // Only a writer whose lease ran out can still interleave; then read and apply again.
        retryOptimistic(async () => {
          const stored = await read(c, cell);
          if (!stored && cell.scope === 'thread') return false;
          const next = apply(stored?.value ?? null);
          await fence();
          return (await write(c, cell, stored, next, newVersion())) ? true : RETRY;
        }, retry),
      );
    },
  };
  return {
    kind: 'compareAndSet',
    retry,
    read: async (cell) => read((await connected()).collections, cell),
    write: async (cell, expected, value, version) => {
      const { collections: c, locks } = await connected();
      return locks.hold([lockOf(cell)], async (fence) => {
        await fence();
        return write(c, cell, expected, value, version);
      });
    },
    get afterLostRace() {
      return locked ? underLock : undefined;
    },
  };
}

function lockOf(cell: WorkingMemoryCell): string {
  return cell.scope === 'resource' ? resourceLock(cell.resourceId) : threadLock(cell.threadId);
}

async function read(c: Collections, cell: WorkingMemoryCell): Promise<VersionedValue<Version> | null> {
  if (cell.scope === 'resource') {
    storableIds({ resourceId: cell.resourceId });
    const doc = await c.resources.findOne({ _id: cell.resourceId });
    if (!doc) return null;
    const value = typeof doc.workingMemory === 'string' ? doc.workingMemory : null;
    return { value, version: doc.version ?? null };
  }
  storableIds({ threadId: cell.threadId });
  const doc = await c.threads.findOne({ _id: cell.threadId });
  return doc ? { value: threadWorkingMemory(doc), version: doc.version ?? null } : null;
}

/** Stores `value` if the cell is still at `expected`; the caller holds the cell's lock where locks are on. */
async function write(
  c: Collections,
  cell: WorkingMemoryCell,
  expected: VersionedValue<Version> | null,
  value: string | null,
  version: string,
): Promise<boolean> {
  if (value !== null) {
    assertStorableString(value, 'working memory');
    assertDocumentSize({ workingMemory: value }, 'the working memory');
  }
  const now = new Date();
  if (cell.scope === 'resource') {
    const _id = cell.resourceId;
    if (!expected) {
      try {
        await c.resources.insertOne({
          _id,
          workingMemory: value,
          metadata: {},
          createdAt: now,
          updatedAt: now,
          version,
        });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    }
    const set = { workingMemory: value, updatedAt: now, version };
    const won = await c.resources.findOneAndUpdate(
      // A document written by other software may lack `version`: `null` matches the missing field.
      { _id, version: expected.version } as Filter<ResourceDocument>,
      { $set: set },
      { returnDocument: 'after' },
    );
    if (won) assertStored(won, set, 'updateWorkingMemoryAtomically');
    return won !== null;
  }
  const set = {
    'metadata.workingMemory': value,
    'metadataHash.workingMemory': valueHash(value),
    version,
  };
  const won = await c.threads.findOneAndUpdate(
    { _id: cell.threadId, version: expected?.version ?? null } as Filter<ThreadDocument>,
    // Raised, never set back (core's `bumpedUpdatedAt`).
    { $set: set, $max: { updatedAt: now } },
    { returnDocument: 'after' },
  );
  if (won) assertStored(won, set, 'updateWorkingMemoryAtomically');
  return won !== null;
}
