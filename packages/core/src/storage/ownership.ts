import { MemoryError } from '../errors.ts';

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
