import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMemoryError, type MemoryErrorCode } from '@engram/core';
import type { Inspector, WorkingMemoryEditRequest } from './inspector.ts';
import { checkRequest, LOOPBACK, newToken, SECURITY_HEADERS } from './security.ts';
import { TURN_PAGE_LIMIT } from './turns.ts';

/** Options of `startServer`. */
export interface ServerOptions {
  /** Port on 127.0.0.1; `0` (default) picks a free one. */
  port?: number;
  /** The per-run token; default: a fresh random one. */
  token?: string;
}

/** A running inspector server. */
export interface InspectorServer {
  /** The page's URL, with the token: `http://127.0.0.1:PORT/?token=…`. */
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

/** The page and its assets, shipped in the package (no CDN). */
const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};
const ASSET_DIR = new URL('../assets/', import.meta.url);
const MAX_BODY = 1024 * 1024;

const STATUS: Record<MemoryErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  VALIDATION: 422,
  NOT_FOUND: 404,
  CONFLICT: 409,
  UNSUPPORTED: 403,
  STORAGE: 500,
  CONNECTION: 503,
  MIGRATION: 500,
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves the inspector page and its JSON API on 127.0.0.1 only. Every request needs the token
 * and must name this server in `Host`/`Origin` (see `checkRequest`).
 *
 * API (JSON; errors are `{ code, message, issues? }`):
 * - `GET /api/info` — configuration; `GET /api/resources?page=N` — one step of the resource scan
 * - `GET /api/resources/:id` — a resource's record and working memory
 * - `GET /api/threads?resourceId=&q=&page=&perPage=` — threads, paged and searchable
 * - `GET /api/threads/:id?last=N` — the thread view (`ETag` = its version; `If-None-Match` → 304)
 * - `GET /api/threads/:id/messages?page=&perPage=&direction=` — the thread's messages, paged (at
 *   most 1000 a page), oldest first or `DESC`; `GET /api/threads/:id/messages/:mid` — a message
 *   and its index in the thread (0: the oldest)
 * - `GET /api/threads/:id/search?q=` — the indexes and ids of the messages containing `q`
 * - `GET /api/threads/:id/observations?last=N` — the thread's observation log (generations,
 *   cursor, tokens on each side, a mark per message shown); says so when the store has none
 * - `GET /api/threads/:id/turns?limit=&before=` — the thread's turn records, newest first (at
 *   most 200 a read), older than the turn id `before`; says so when the store keeps none
 * - `POST /api/threads/:id/recall` — semantic recall for `{ query, topK?, scope?, messageRange? }`
 *   in that thread (reads only; `UNSUPPORTED` when the memory has no recall configured)
 * - `PUT /api/working-memory` — edit (`--allow-edits` only); `DELETE /api/threads/:id/messages/:mid`
 */
export async function startServer(
  inspector: Inspector,
  options: ServerOptions = {},
): Promise<InspectorServer> {
  const token = options.token ?? newToken();
  const index = await readFile(new URL('index.html', ASSET_DIR), 'utf8');
  let port = 0;
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => sendError(res, error));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://${LOOPBACK}:${port}`);
    const refusal = checkRequest(req, url, port, token);
    if (refusal) return sendJson(res, refusal.status, { code: 'REFUSED', message: refusal.message });
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (path === '/' && method === 'GET') {
      return send(res, 200, 'text/html; charset=utf-8', index.replaceAll('{{TOKEN}}', token));
    }
    if (path.startsWith('/assets/') && method === 'GET') {
      const name = path.slice('/assets/'.length);
      const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
      if (!type) throw new HttpError(404, 'no such asset');
      return send(res, 200, type, await readFile(new URL(name, ASSET_DIR)));
    }
    if (path.startsWith('/api/')) return api(req, res, url, method);
    throw new HttpError(404, 'not found');
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL, method: string): Promise<void> {
    const parts = url.pathname.split('/').slice(2).map(decodeSegment);
    const q = url.searchParams;
    const [first, id, sub, subId] = parts;
    if (method === 'GET' && first === 'info' && parts.length === 1) {
      return sendJson(res, 200, await inspector.info());
    }
    if (method === 'GET' && first === 'resources' && parts.length === 1) {
      return sendJson(res, 200, await inspector.scanResources(count(q.get('page'), 0)));
    }
    if (method === 'GET' && first === 'resources' && id !== undefined && parts.length === 2) {
      return sendJson(res, 200, await inspector.resource(id));
    }
    if (method === 'GET' && first === 'threads' && parts.length === 1) {
      const result = await inspector.threads({
        resourceId: q.get('resourceId') ?? undefined,
        query: q.get('q') ?? undefined,
        page: count(q.get('page'), 0),
        perPage: Math.min(count(q.get('perPage'), 20) || 20, 200),
      });
      return sendJson(res, 200, result);
    }
    if (method === 'GET' && first === 'threads' && id !== undefined && parts.length === 2) {
      const last = q.has('last') ? Math.min(Math.max(count(q.get('last'), 1), 1), 1000) : undefined;
      const view = await inspector.thread(id, last);
      const etag = `"${view.version}"`;
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { ...SECURITY_HEADERS, etag });
        res.end();
        return;
      }
      return sendJson(res, 200, view, { etag });
    }
    if (
      method === 'GET' &&
      first === 'threads' &&
      id !== undefined &&
      sub === 'observations' &&
      parts.length === 3
    ) {
      const last = q.has('last') ? Math.min(Math.max(count(q.get('last'), 1), 1), 1000) : undefined;
      return sendJson(res, 200, await inspector.observations(id, last));
    }
    if (
      method === 'GET' &&
      first === 'threads' &&
      id !== undefined &&
      sub === 'turns' &&
      parts.length === 3
    ) {
      const limit = Math.min(count(q.get('limit'), 20) || 20, TURN_PAGE_LIMIT);
      return sendJson(res, 200, await inspector.turns(id, limit, q.get('before') ?? undefined));
    }
    if (method === 'GET' && first === 'threads' && id !== undefined && sub === 'messages') {
      if (parts.length === 3) {
        const perPage = Math.min(count(q.get('perPage'), 100) || 100, 1000);
        const direction = order(q.get('direction'));
        return sendJson(res, 200, await inspector.messages(id, count(q.get('page'), 0), perPage, direction));
      }
      if (subId !== undefined && parts.length === 4) {
        return sendJson(res, 200, await inspector.messagePosition(id, subId));
      }
    }
    if (
      method === 'GET' &&
      first === 'threads' &&
      id !== undefined &&
      sub === 'search' &&
      parts.length === 3
    ) {
      return sendJson(res, 200, await inspector.searchMessages(id, q.get('q') ?? ''));
    }
    if (
      method === 'POST' &&
      first === 'threads' &&
      id !== undefined &&
      sub === 'recall' &&
      parts.length === 3
    ) {
      // Recall only reads, so a read-only inspector answers it too.
      return sendJson(res, 200, await inspector.recall(id, await readJson(req)));
    }
    if (method === 'PUT' && first === 'working-memory' && parts.length === 1) {
      const body = (await readJson(req)) as WorkingMemoryEditRequest;
      const stored = await inspector.editWorkingMemory(body);
      return sendJson(res, 200, { value: stored });
    }
    if (
      method === 'DELETE' &&
      first === 'threads' &&
      id !== undefined &&
      sub === 'messages' &&
      subId !== undefined &&
      parts.length === 4
    ) {
      await inspector.deleteMessage(id, subId);
      res.writeHead(204, SECURITY_HEADERS);
      res.end();
      return;
    }
    throw new HttpError(404, `no API route ${method} ${url.pathname}`);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, LOOPBACK, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${LOOPBACK}:${port}/?token=${token}`,
    port,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'malformed percent-encoding in the path');
  }
}

/** A page order given as `asc` or `desc` (any case); absent means oldest first. */
function order(raw: string | null): 'ASC' | 'DESC' {
  const value = (raw ?? 'ASC').toUpperCase();
  if (value === 'ASC' || value === 'DESC') return value;
  throw new HttpError(400, `direction must be asc or desc, got ${raw}`);
}

function count(raw: string | null, fallback: number): number {
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new HttpError(400, `expected a non-negative integer, got ${raw}`);
  return n;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('application/json')) {
    throw new HttpError(415, 'the body must be application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, 'the body is too large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'the body is not valid JSON');
  }
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
  res.end(body);
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body), extra);
}

function sendError(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof HttpError) {
    sendJson(res, error.status, { code: 'HTTP', message: error.message });
  } else if (isMemoryError(error)) {
    const issues = error.details.issues;
    sendJson(res, STATUS[error.code] ?? 500, {
      code: error.code,
      message: error.message,
      ...(Array.isArray(issues) ? { issues } : {}),
    });
  } else {
    sendJson(res, 500, { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) });
  }
}
