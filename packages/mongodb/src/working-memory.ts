import type { CompareAndSetWorkingMemory, RetryOptions } from '@engram/core/adapter';
import type { Filter, ObjectId } from 'mongodb';
import type { ResourceDocument, ThreadDocument } from './collections.ts';
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
 * path. Under write locks (FerretDB 1.x, see `locks.ts`) the write holds the document's lock, so
 * the filtered update is a compare-and-set there too.
 */
export function workingMemoryStrategy(
  connect: () => Promise<Connection>,
  retry: RetryOptions,
): CompareAndSetWorkingMemory<Version> {
  return {
    kind: 'compareAndSet',
    retry,
    read: async (cell) => {
      const { collections: c } = await connect();
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
    },
    write: async (cell, expected, value, version) => {
      if (value !== null) {
        assertStorableString(value, 'working memory');
        assertDocumentSize({ workingMemory: value }, 'the working memory');
      }
      const { collections: c, locks } = await connect();
      const now = new Date();
      if (cell.scope === 'resource') {
        const _id = cell.resourceId;
        return locks.hold([resourceLock(_id)], async () => {
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
        });
      }
      const _id = cell.threadId;
      const set = {
        'metadata.workingMemory': value,
        'metadataHash.workingMemory': valueHash(value),
        updatedAt: now,
        version,
      };
      return locks.hold([threadLock(_id)], async () => {
        const won = await c.threads.findOneAndUpdate(
          { _id, version: expected?.version ?? null } as Filter<ThreadDocument>,
          { $set: set },
          { returnDocument: 'after' },
        );
        if (won) assertStored(won, set, 'updateWorkingMemoryAtomically');
        return won !== null;
      });
    },
  };
}
