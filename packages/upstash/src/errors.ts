import { MemoryError, type MemoryErrorCode } from '@engram/core';

/** The adapter name used in errors. */
export const ADAPTER = 'upstash';

/**
 * Maps what `@upstash/redis` (or `fetch` under it) throws to a `MemoryError`:
 * network failures and refused credentials → `CONNECTION`; errors Redis answered → `STORAGE`.
 */
export function toMemoryError(error: unknown, operation: string): MemoryError {
  const message = error instanceof Error ? error.message : String(error);
  const code = classify(error, message);
  // The client appends the whole command to its messages; keep errors readable.
  const short = message.length > 300 ? `${message.slice(0, 300)}…` : message;
  return new MemoryError(code, `${ADAPTER}: ${operation} failed: ${short}`, {
    adapter: ADAPTER,
    cause: error,
    details: { operation },
  });
}

function classify(error: unknown, message: string): MemoryErrorCode {
  // A refused token, or a server (or the bridge's Redis) that cannot be reached.
  if (/unauthorized|WRONGPASS|NOAUTH/i.test(message)) return 'CONNECTION';
  if (/ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|socket hang up/i.test(message)) {
    return 'CONNECTION';
  }
  // fetch rejects with a TypeError ("fetch failed") whose cause holds the socket error.
  if (error instanceof TypeError && /fetch failed/i.test(message)) return 'CONNECTION';
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string' && /^E[A-Z]+$/.test(cause.code)) return 'CONNECTION';
  // Anything Redis or the REST server answered with (UpstashError, a reply we cannot read).
  return 'STORAGE';
}

/** A `NOT_FOUND` for a missing thread. */
export function threadNotFound(threadId: string): MemoryError {
  return new MemoryError('NOT_FOUND', `${ADAPTER}: thread ${JSON.stringify(threadId)} does not exist`, {
    adapter: ADAPTER,
  });
}
