import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The only address the inspector listens on. */
export const LOOPBACK = '127.0.0.1';

/** The header the page sends the token in (pages and assets carry it as `?token=`). */
export const TOKEN_HEADER = 'x-engram-token';

/**
 * The response headers of every answer: a Content-Security-Policy that allows only the
 * inspector's own scripts, styles and API (no inline script, no inline style, no framing), no
 * MIME sniffing, no referrer (the page URL holds the token), no caching.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** A fresh random token for one run (32 hex characters). */
export function newToken(): string {
  return randomBytes(16).toString('hex');
}

/** Why a request is refused, with its status; `null` when it may go on. */
export interface Refusal {
  status: 401 | 403;
  message: string;
}

/**
 * Checks one request against the server's port and token: it must come from the loopback
 * interface, name this server in `Host` (defeats DNS rebinding), carry no foreign `Origin` and
 * no cross-site fetch metadata, and hold the token (header or `?token=`).
 */
export function checkRequest(req: IncomingMessage, url: URL, port: number, token: string): Refusal | null {
  const remote = req.socket.remoteAddress ?? '';
  if (remote !== '127.0.0.1' && remote !== '::1' && remote !== '::ffff:127.0.0.1') {
    return { status: 403, message: 'the inspector answers loopback clients only' };
  }
  const own = [`${LOOPBACK}:${port}`, `localhost:${port}`];
  const host = (req.headers.host ?? '').toLowerCase();
  if (!own.includes(host)) {
    return { status: 403, message: `refused: Host ${JSON.stringify(host)} is not this inspector` };
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !own.map((h) => `http://${h}`).includes(origin.toLowerCase())) {
    return {
      status: 403,
      message: `refused: requests from origin ${JSON.stringify(origin)} are not allowed`,
    };
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { status: 403, message: `refused: ${site} requests are not allowed` };
  }
  const header = req.headers[TOKEN_HEADER];
  const given = (typeof header === 'string' ? header : undefined) ?? url.searchParams.get('token') ?? '';
  if (!sameSecret(given, token)) {
    return { status: 401, message: 'a valid token is required (use the URL printed by engram-inspect)' };
  }
  return null;
}

function sameSecret(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
