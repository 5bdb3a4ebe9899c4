import type {
  CompareAndSetWorkingMemory,
  LeasedWorkingMemory,
  VersionedValue,
  WorkingMemoryCell,
} from '@engram/core/driver';
import type { Collection, ObjectId } from 'mongodb';
import type { Collections } from './collections.ts';
import type { Connection } from './driver.ts';
import { valueHash } from './encoding.ts';
import { isUnreachable } from './locks.ts';
import { assertDocumentSize, toResource } from './mapping.ts';
import { resourceLock, threadLock } from './threads.ts';
import { assertStored, insertNew } from './writes.ts';

/** A stored version; `null` for a document written by other software without one. */
type Version = ObjectId | string | null;

/**
 * Working memory by compare-and-set (core's runner retries): read the document and its
 * `version`, then `findOneAndUpdate` filtered on `{ _id, version }` with core's fresh version, or
 * insert a missing resource (a duplicate key loses). Under write locks (FerretDB 1.x applies
 * update operators without atomicity, so the filter alone is no compare-and-set) every update
 * goes straight to a lease (`afterLostRace`, `attempts` 0): the document's lock held from the
 * read to the write, which no other writer of it can pass; a write whose lock was lost meanwhile
 * is reported lost, and core takes the lease again.
 */
export function workingMemoryStrategy(c: Connection): CompareAndSetWorkingMemory<Version> {
  const lockOf = (cell: WorkingMemoryCell) =>
    cell.scope === 'resource' ? resourceLock(cell.resourceId) : threadLock(cell.threadId);
  // Leases whose write failed with the server unreachable: core's release then does not wait.
  const unreachable = new Set<string>();
  const failed = (token: string, error: unknown) => {
    if (isUnreachable(error)) unreachable.add(token);
    return error;
  };
  const leased: LeasedWorkingMemory<Version> = {
    kind: 'leased',
    get leaseMs() {
      return c.locks.leaseMs;
    },
    // Waits for the lock (while its holders come and go), so it is never 'busy'.
    acquire: async (cell, token) => {
      await c.locks.acquire([lockOf(cell)], token);
      let stored: VersionedValue<Version> | null;
      try {
        stored = await read(c.collections, cell);
      } catch (error) {
        failed(token, error);
        await leased.release(cell, token).catch(() => undefined);
        throw error;
      }
      if (stored || cell.scope === 'resource') return stored;
      await c.locks.release([lockOf(cell)], token);
      return 'missing';
    },
    // When it throws, core releases the lock (at once when the server is unreachable). A lock
    // that cannot be released after the write is left to `WriteLocks` (an orphan): the write stands.
    write: async (cell, expected, value, version, token) => {
      try {
        const ours = await c.locks.holds([lockOf(cell)], token);
        const written = ours && (await write(c.collections, cell, expected, value, version));
        await c.locks.release([lockOf(cell)], token).catch((error: unknown) => {
          if (!written || !isUnreachable(error)) throw error;
        });
        return written ? 'ok' : 'lost';
      } catch (error) {
        throw failed(token, error);
      }
    },
    release: async (cell, token) => {
      const released = c.locks.release([lockOf(cell)], token);
      if (unreachable.delete(token)) released.catch(() => undefined);
      else await released;
    },
  };
  return {
    kind: 'compareAndSet',
    read: (cell) => read(c.collections, cell),
    // Only without write locks (see `attempts`): a filtered update is atomic on the server.
    write: (cell, expected, value, version) => write(c.collections, cell, expected, value, version),
    get afterLostRace() {
      return c.locks.enabled ? leased : undefined;
    },
    // Under write locks a filtered update is no compare-and-set (see above): every update takes
    // the lease, its lock before the read, and none is computed from a value about to be replaced.
    get attempts() {
      return c.locks.enabled ? 0 : undefined;
    },
  };
}

async function read(c: Collections, cell: WorkingMemoryCell): Promise<VersionedValue<Version> | null> {
  if (cell.scope === 'resource') {
    const doc = await c.resources.findOne({ _id: cell.resourceId });
    return doc && { value: toResource(doc).workingMemory, version: doc.version ?? null };
  }
  const doc = await c.threads.findOne({ _id: cell.threadId });
  const stored = doc?.metadata?.workingMemory;
  return doc && { value: typeof stored === 'string' ? stored : null, version: doc.version ?? null };
}

/** Stores `value` if the cell is still at `expected`; the caller holds the cell's lock where locks are on. */
async function write(
  c: Collections,
  cell: WorkingMemoryCell,
  expected: VersionedValue<Version> | null,
  value: string | null,
  version: string,
): Promise<boolean> {
  if (value !== null) assertDocumentSize({ workingMemory: value }, 'the working memory');
  const now = new Date();
  const resource = cell.scope === 'resource';
  const _id = resource ? cell.resourceId : cell.threadId;
  if (resource && !expected) {
    const created = { _id, workingMemory: value, metadata: {}, createdAt: now, updatedAt: now, version };
    return insertNew(c.resources, created);
  }
  const set = resource
    ? { workingMemory: value, version }
    : { 'metadata.workingMemory': value, 'metadataHash.workingMemory': valueHash(value), version };
  const collection = (resource ? c.resources : c.threads) as unknown as Collection<{ _id: string }>;
  // A document written by other software may lack `version`: `null` matches the missing field.
  // `updatedAt` is raised, never set back (core's `bumpedUpdatedAt`).
  const update = { $set: set, $max: { updatedAt: now } };
  const won = await collection.findOneAndUpdate({ _id, version: expected?.version ?? null }, update, {
    returnDocument: 'after',
  });
  if (won) assertStored(won, set, 'updateWorkingMemoryAtomically');
  return won !== null;
}
