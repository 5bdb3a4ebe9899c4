import { MemoryError } from '../errors.ts';
import type { Thread } from './records.ts';

/**
 * The `CONFLICT` of `createThread` when the id is taken (already stored, or created first by a
 * concurrent caller). Shared by every adapter so the refusal reads the same everywhere.
 */
export function threadExists(adapter: string, threadId: string): MemoryError {
  return new MemoryError(
    'CONFLICT',
    `${adapter}: thread ${JSON.stringify(threadId)} already exists; use updateThread to change it`,
    { adapter, details: { operation: 'createThread', threadId } },
  );
}

/**
 * The `CONFLICT` of `saveMessages` when a message id belongs to a stored message of another
 * resource: a message may move between threads of its own resource, never to another one. The
 * message names neither the other resource nor its thread.
 */
export function messageOfAnotherResource(adapter: string, messageId: string): MemoryError {
  return new MemoryError(
    'CONFLICT',
    `${adapter}: message id ${JSON.stringify(messageId)} is taken by a message of another resource; nothing of the batch was saved`,
    { adapter, details: { operation: 'saveMessages', messageId } },
  );
}

/**
 * The `INVALID_ARGUMENT` of `saveMessages` when a message names a resource other than its
 * thread's. Shared by every adapter so the refusal reads the same everywhere.
 */
export function threadOfAnotherResource(adapter: string, messageId: string, resourceId: string): MemoryError {
  return new MemoryError(
    'INVALID_ARGUMENT',
    `${adapter}: message ${JSON.stringify(messageId)} names resource ${JSON.stringify(resourceId)}, but its thread belongs to another`,
    { adapter, details: { operation: 'saveMessages', messageId } },
  );
}

/**
 * The `NOT_FOUND` of an operation on a thread that does not exist. Shared by every adapter so
 * the refusal reads the same everywhere.
 */
export function threadNotFound(adapter: string, threadId: string): MemoryError {
  return new MemoryError('NOT_FOUND', `${adapter}: thread ${JSON.stringify(threadId)} does not exist`, {
    adapter,
  });
}

/**
 * The `INVALID_ARGUMENT` of every call given both a `threadId` and a `resourceId` when the
 * thread belongs to another resource. The message names the caller's ids only, never the owner
 * or anything stored on the thread.
 */
export function threadNotOwned(operation: string, threadId: string, resourceId: string): MemoryError {
  return new MemoryError(
    'INVALID_ARGUMENT',
    `${operation}: thread ${JSON.stringify(threadId)} does not belong to resource ${JSON.stringify(resourceId)}; nothing was returned or written`,
    { details: { operation, threadId } },
  );
}

/**
 * The one ownership rule of calls that take both ids: reads the thread and throws
 * `threadNotOwned` when it belongs to another resource. Returns the thread, or `null` when it
 * does not exist (whether an absent thread is an error is the caller's rule).
 */
export async function ownedThread<T extends { resourceId: string } = Thread>(
  storage: { getThreadById(args: { threadId: string }): Promise<T | null> },
  operation: string,
  threadId: string,
  resourceId: string,
): Promise<T | null> {
  const thread = await storage.getThreadById({ threadId });
  if (thread && thread.resourceId !== resourceId) throw threadNotOwned(operation, threadId, resourceId);
  return thread;
}
