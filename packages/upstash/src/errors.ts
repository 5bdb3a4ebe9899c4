import {
  createErrorMapper,
  hasNetworkCode,
  type MemoryError,
  type MemoryErrorCode,
  threadNotFound as missingThread,
  NETWORK_ERROR_CODES,
} from '@engram/core/adapter';

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

/** Core's network codes, and a socket the server hung up, as they appear in a driver message. */
const NETWORK_MESSAGE = new RegExp(`${[...NETWORK_ERROR_CODES].join('|')}|socket hang up`, 'i');

/** Upstash's classification table: refused credentials and unreachable servers, else `STORAGE`. */
function classify(error: unknown): MemoryErrorCode {
  const message = error instanceof Error ? error.message : String(error);
  // A refused token, or a server (or the bridge's Redis) that cannot be reached.
  if (/unauthorized|WRONGPASS|NOAUTH/i.test(message)) return 'CONNECTION';
  if (NETWORK_MESSAGE.test(message) || hasNetworkCode(error)) return 'CONNECTION';
  // fetch rejects with a TypeError ("fetch failed") whose cause holds the socket error.
  if (error instanceof TypeError && /fetch failed/i.test(message)) return 'CONNECTION';
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string' && /^E[A-Z]+$/.test(cause.code)) return 'CONNECTION';
  // Anything Redis or the REST server answered with (UpstashError, a reply we cannot read), also
  // during init: there is no schema to migrate.
  return 'STORAGE';
}

/**
 * Maps what `@upstash/redis` (or `fetch` under it) throws to a `MemoryError`:
 * network failures and refused credentials → `CONNECTION`; errors Redis answered → `STORAGE`.
 * The message names the adapter and the operation, never the command's arguments; the cause is
 * a copy of the driver error redacted the same way.
 */
export const toMemoryError = createErrorMapper({ adapter: ADAPTER, classify, redact: redactMessage });

/** A `NOT_FOUND` for a missing thread (core's wording). */
export function threadNotFound(threadId: string): MemoryError {
  return missingThread(ADAPTER, threadId);
}
