import { MemoryError } from '../errors.ts';
import { assertOptionalId } from '../storage/validate.ts';
import type { MemoryIds, RequestContextLike } from './types.ts';

function read(context: RequestContextLike, key: string): unknown {
  const getter = (context as { get?: unknown }).get;
  if (typeof getter === 'function') return (getter as (key: string) => unknown).call(context, key);
  return (context as Record<string, unknown>)[key];
}

/**
 * Reads `threadId` and `resourceId` from a request context: a `Map`-like object with `get`, or a
 * plain object. Absent ids come back `undefined`; ids that are not valid ids throw
 * `INVALID_ARGUMENT`.
 */
export function readMemoryIds(context: RequestContextLike | undefined): MemoryIds {
  if (context === undefined || context === null) return {};
  if (typeof context !== 'object') {
    throw new MemoryError('INVALID_ARGUMENT', 'requestContext must be a Map-like or a plain object');
  }
  const threadId = read(context, 'threadId') ?? undefined;
  const resourceId = read(context, 'resourceId') ?? undefined;
  assertOptionalId(threadId, 'requestContext.threadId');
  assertOptionalId(resourceId, 'requestContext.resourceId');
  return { threadId, resourceId };
}
