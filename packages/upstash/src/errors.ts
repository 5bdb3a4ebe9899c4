import { hasNetworkCode, type MemoryErrorCode, NETWORK_ERROR_CODES } from '@engram/core/driver';

export const ADAPTER = 'upstash';

/**
 * A driver message, at most 300 characters, without what `@upstash/redis` appends to it: the
 * command it sent (message text, working memory) and the start of a body it cannot parse.
 */
export function redactMessage(message: string): string {
  const reason = message
    .replace(/,? command was: [\s\S]*$/, '')
    .replace(/^(Unable to parse response body)[\s\S]*$/, '$1');
  return reason.length > 300 ? `${reason.slice(0, 300)}…` : reason;
}

/** Core's network codes, and a socket the server hung up, in a driver message. */
const NETWORK_MESSAGE = new RegExp(`${[...NETWORK_ERROR_CODES].join('|')}|socket hang up`, 'i');

/**
 * A refused token, or a server (or the bridge's Redis) out of reach (`fetch failed`, a socket
 * error as the cause) → `CONNECTION`; anything the server answered, also in init → `STORAGE`.
 */
function classify(error: unknown): MemoryErrorCode {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const unreachable =
    /unauthorized|WRONGPASS|NOAUTH|fetch failed/i.test(message) ||
    NETWORK_MESSAGE.test(message) ||
    hasNetworkCode(error) ||
    (typeof cause?.code === 'string' && /^E[A-Z]+$/.test(cause.code));
  return unreachable ? 'CONNECTION' : 'STORAGE';
}

/** How core maps what `@upstash/redis` throws; messages and causes lose the command the client appends. */
export const ERRORS = { classify, redact: redactMessage };
