import { MemoryError, type MemoryErrorCode, redactDriverError } from '@engram/core';

/** The adapter name used in errors. */
export const ADAPTER = 'upstash';

/** The longest driver reason kept in a message. */
const MAX_REASON = 300;

/**
 * A driver message without the user data `@upstash/redis` puts in it: the client appends the
 * whole command it sent (`…, command was: ["evalsha", …, message text, working memory]`) to an
 * error the server answered, and the start of the response body to a reply it cannot parse.
 */
export function redactMessage(message: string): string {
  const reason = message
    .replace(/,? command was: [\s\S]*$/, '')
    .replace(/^(Unable to parse response body)[\s\S]*$/, '$1');
  return reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}…` : reason;
}

/**
 * Maps what `@upstash/redis` (or `fetch` under it) throws to a `MemoryError`:
 * network failures and refused credentials → `CONNECTION`; errors Redis answered → `STORAGE`.
 * The message names the adapter and the operation, never the command's arguments; the cause is
 * a copy of the driver error redacted the same way.
 */
export function toMemoryError(error: unknown, operation: string): MemoryError {
  const message = error instanceof Error ? error.message : String(error);
  const code = classify(error, message);
  return new MemoryError(code, `${ADAPTER}: ${operation} failed: ${redactMessage(message)}`, {
    adapter: ADAPTER,
    cause: redactDriverError(error, redactMessage),
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
