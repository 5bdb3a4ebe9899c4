import { MemoryError } from '../errors.ts';
import { capabilitiesOf } from '../storage/capabilities.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import { ownedThread } from '../storage/ownership.ts';
import type { Thread, WorkingMemoryScope } from '../storage/records.ts';
import { assertOptionalId, describe, isPlainObject } from '../storage/validate.ts';
import { fallbackLockFor } from './fallback-lock.ts';

/** Which working memory a call addresses; which id is needed depends on the configured scope. */
export interface WorkingMemoryTarget {
  /** Needed for thread scope (the thread must exist). */
  threadId?: string;
  /** Needed for resource scope. When both ids are given they must agree. */
  resourceId?: string;
}

/** Where one working-memory document is stored, after the ids were checked. */
export type WorkingMemoryLocation =
  | { scope: 'resource'; resourceId: string }
  | { scope: 'thread'; threadId: string; thread: Thread };

/** Computes the next document from the stored one (`null` when none). */
export type WorkingMemoryEdit = (current: string | null) => string | null;

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

function notFound(threadId: string): MemoryError {
  return new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
}

/** True when the storage declares atomic working-memory updates and implements them. */
export function isAtomicStorage(storage: MemoryStorage): boolean {
  return capabilitiesOf(storage).atomicWorkingMemory;
}

/**
 * Resolves the ids of a call to the storage location of `scope`. Resource scope needs a
 * `resourceId`; thread scope needs a `threadId` of an existing thread (`NOT_FOUND`). When both
 * ids are given, the thread must belong to the resource (`ownedThread`: `INVALID_ARGUMENT`).
 */
export async function locate(
  storage: MemoryStorage,
  scope: WorkingMemoryScope,
  args: WorkingMemoryTarget,
  operation: string,
): Promise<WorkingMemoryLocation> {
  if (!isPlainObject(args)) throw invalid(`${operation} expects an arguments object, got ${describe(args)}`);
  const { threadId, resourceId } = args;
  assertOptionalId(threadId, 'threadId');
  assertOptionalId(resourceId, 'resourceId');
  if (scope === 'resource') {
    if (resourceId === undefined)
      throw invalid(`${operation}: resource-scoped working memory needs a resourceId`);
    if (threadId !== undefined) await ownedThread(storage, operation, threadId, resourceId);
    return { scope, resourceId };
  }
  if (threadId === undefined) throw invalid(`${operation}: thread-scoped working memory needs a threadId`);
  const thread =
    resourceId === undefined
      ? await storage.getThreadById({ threadId })
      : await ownedThread(storage, operation, threadId, resourceId);
  if (!thread) throw notFound(threadId);
  return { scope, threadId, thread };
}

/** The thread-scoped document stored in a thread's metadata, or `null`. */
export function threadMemory(thread: Thread): string | null {
  const value = thread.metadata.workingMemory;
  return typeof value === 'string' ? value : null;
}

/** Reads the stored document (fresh from storage). */
export async function readMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
): Promise<string | null> {
  if (location.scope === 'resource') {
    const resource = await storage.getResourceById({ resourceId: location.resourceId });
    return resource?.workingMemory ?? null;
  }
  const thread = await storage.getThreadById({ threadId: location.threadId });
  if (!thread) throw notFound(location.threadId);
  return threadMemory(thread);
}

async function writeMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  value: string | null,
): Promise<void> {
  if (location.scope === 'resource') {
    await storage.updateResource({ resourceId: location.resourceId, workingMemory: value });
  } else {
    await storage.updateThread({ id: location.threadId, metadata: { workingMemory: value } });
  }
}

/**
 * Replaces a document. Nothing is read: on a storage with atomic updates this is one
 * `updateResource` or `updateThread` (a single write, atomic on its own, so it cannot split an
 * atomic merge running elsewhere); otherwise the write takes the in-process fallback lock of
 * `(scope, id)`, so it queues behind a merge of this process instead of landing between its
 * read and its write.
 */
export async function replaceMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  value: string,
): Promise<void> {
  if (isAtomicStorage(storage)) return writeMemory(storage, location, value);
  const id = location.scope === 'resource' ? location.resourceId : location.threadId;
  await fallbackLockFor(storage).run(location.scope, id, () => writeMemory(storage, location, value));
}

/**
 * One read-modify-write of a document: the storage's `updateWorkingMemoryAtomically` when it
 * declares support, else read and write under the in-process fallback lock of `(scope, id)`.
 * If `edit` throws, nothing is written and the error propagates. Returns the stored value.
 */
export function editMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  edit: WorkingMemoryEdit,
): Promise<string | null> {
  const checked: WorkingMemoryEdit = (current) => {
    const next: unknown = edit(current);
    if (next !== null && typeof next !== 'string') {
      throw invalid(`edit must return a string or null, got ${describe(next)}`);
    }
    return next;
  };
  if (isAtomicStorage(storage)) {
    const update = storage.updateWorkingMemoryAtomically!.bind(storage);
    return location.scope === 'resource'
      ? update({ scope: 'resource', resourceId: location.resourceId, update: checked })
      : update({ scope: 'thread', threadId: location.threadId, update: checked });
  }
  const id = location.scope === 'resource' ? location.resourceId : location.threadId;
  return fallbackLockFor(storage).run(location.scope, id, async () => {
    const next = checked(await readMemory(storage, location));
    await writeMemory(storage, location, next);
    return next;
  });
}
