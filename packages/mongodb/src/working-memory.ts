import { RETRY, type RetryOptions, retryOptimistic } from '@engram/core/adapter';
import type { Filter } from 'mongodb';
import type { Collections, ResourceDocument, ThreadDocument } from './collections.ts';
import { assertStorableString, valueHash } from './encoding.ts';
import { isDuplicateKey, threadNotFound } from './errors.ts';
import { assertDocumentSize, newVersion, threadWorkingMemory } from './mapping.ts';
import { assertStored } from './writes.ts';

/**
 * Atomic read-modify-write of working memory by compare-and-set: read the document and its
 * `version`, compute the new value, then `findOneAndUpdate` filtered on `{ _id, version }` with a
 * fresh version. A writer that lost the race matches nothing and tries again (bounded, then
 * `CONFLICT`). The first write of a missing resource is an insert; losing that race to another
 * insert is a duplicate key, and the retry takes the update path.
 */

type Update = (current: string | null) => string | null;

function computeNext(update: Update, current: string | null): string | null {
  const next = update(current);
  if (next !== null) {
    assertStorableString(next, 'working memory');
    assertDocumentSize({ workingMemory: next }, 'the working memory');
  }
  return next;
}

/** Resource scope: creates the resource when missing. Returns the stored value. */
export function updateResourceWorkingMemory(
  c: Collections,
  resourceId: string,
  update: Update,
  retry: RetryOptions,
): Promise<string | null> {
  return retryOptimistic(async () => {
    const doc = await c.resources.findOne({ _id: resourceId });
    const next = computeNext(update, doc && typeof doc.workingMemory === 'string' ? doc.workingMemory : null);
    const now = new Date();
    if (!doc) {
      try {
        await c.resources.insertOne({
          _id: resourceId,
          workingMemory: next,
          metadata: {},
          createdAt: now,
          updatedAt: now,
          version: newVersion(),
        });
        return next;
      } catch (error) {
        if (isDuplicateKey(error)) return RETRY;
        throw error;
      }
    }
    const set = { workingMemory: next, updatedAt: now, version: newVersion() };
    const won = await c.resources.findOneAndUpdate(
      // A document written by other software may lack `version`: `null` matches the missing field.
      { _id: resourceId, version: doc.version ?? null } as Filter<ResourceDocument>,
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!won) return RETRY;
    assertStored(won, set, 'updateWorkingMemoryAtomically');
    return next;
  }, retry);
}

/** Thread scope: stored at `metadata.workingMemory`; the thread must exist. Returns the stored value. */
export function updateThreadWorkingMemory(
  c: Collections,
  threadId: string,
  update: Update,
  retry: RetryOptions,
): Promise<string | null> {
  return retryOptimistic(async () => {
    const doc = await c.threads.findOne({ _id: threadId });
    if (!doc) throw threadNotFound(threadId);
    const next = computeNext(update, threadWorkingMemory(doc));
    const set = {
      'metadata.workingMemory': next,
      'metadataHash.workingMemory': valueHash(next),
      updatedAt: new Date(),
      version: newVersion(),
    };
    const won = await c.threads.findOneAndUpdate(
      { _id: threadId, version: doc.version ?? null } as Filter<ThreadDocument>,
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!won) return RETRY;
    assertStored(won, set, 'updateWorkingMemoryAtomically');
    return next;
  }, retry);
}
