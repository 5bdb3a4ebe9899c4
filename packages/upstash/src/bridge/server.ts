import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConnectionPool, parseRedisUrl, type RedisConnection } from './connection.ts';
import { isErrorReply, type Reply } from './resp.ts';

/** Options of the local Upstash-REST bridge. */
export interface BridgeOptions {
  /** The real Redis, e.g. `redis://127.0.0.1:6379` (a `/db` path selects a database). */
  redisUrl: string;
  /** The bearer token clients must send. */
  token: string;
  /** TCP port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Most Redis connections kept open at once. Default 16. */
  maxConnections?: number;
  /** Largest accepted request body in bytes. Default 64 MiB. */
  maxBodyBytes?: number;
}

/** A running bridge. */
export interface Bridge {
  /** The REST URL to give `@upstash/redis`, e.g. `http://127.0.0.1:8079`. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and closes the Redis connections. */
  close(): Promise<void>;
}

type Json = string | number | null | Json[] | { [key: string]: Json };
type Command = string[];

/** Commands that need a session of their own, which a stateless REST call cannot give. */
const REFUSED = new Set([
  'multi',
  'exec',
  'discard',
  'watch',
  'unwatch',
  'select',
  'subscribe',
  'psubscribe',
  'ssubscribe',
  'unsubscribe',
  'punsubscribe',
  'sunsubscribe',
  'monitor',
  'quit',
  'reset',
  'hello',
  'auth',
  'sync',
  'psync',
]);

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Starts an HTTP server that speaks the Upstash REST protocol (`POST /`, `/pipeline`,
 * `/multi-exec`, bearer auth, base64 response encoding) and forwards each command to a real
 * Redis over RESP. Meant for tests and local development; production talks to Upstash.
 */
export async function startBridge(options: BridgeOptions): Promise<Bridge> {
  const pool = new ConnectionPool(parseRedisUrl(options.redisUrl), options.maxConnections ?? 16);
  const token = Buffer.from(options.token, 'utf8');
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024;

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof RequestError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      send(res, status, { error: status === 500 ? `ERR bridge: ${message}` : message });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://bridge');
    if (!authorized(req, url, token)) throw new RequestError(401, 'Unauthorized');
    if (req.method !== 'POST') throw new RequestError(405, 'ERR only POST is supported');
    const base64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';
    const body = await readJson(req, maxBody);
    switch (url.pathname.replace(/\/+$/, '') || '/') {
      case '/': {
        const command = toCommand(body);
        const [reply] = await pool.use((c) => c.send([command]));
        if (reply === undefined) throw new Error('redis sent no reply');
        if (isErrorReply(reply)) return send(res, 400, { error: reply.message });
        return send(res, 200, { result: encode(reply, base64) });
      }
      case '/pipeline': {
        const commands = toCommands(body);
        const replies = await pool.use((c) => c.send(commands));
        return send(
          res,
          200,
          replies.map((reply) => item(reply, base64)),
        );
      }
      case '/multi-exec': {
        const commands = toCommands(body);
        const replies = await pool.use((c) => transaction(c, commands));
        return send(
          res,
          200,
          replies.map((reply) => item(reply, base64)),
        );
      }
      default:
        throw new RequestError(404, `ERR unknown path ${url.pathname}`);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host && options.host !== '0.0.0.0' ? options.host : '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        pool.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** MULTI … EXEC on one connection; a command refused while queueing aborts the whole call (400). */
async function transaction(connection: RedisConnection, commands: Command[]): Promise<Reply[]> {
  const replies = await connection.send([['MULTI'], ...commands, ['EXEC']]);
  const queued = replies.slice(1, -1);
  const refused = queued.find(isErrorReply);
  if (refused) throw new RequestError(400, refused.message);
  const exec = replies.at(-1);
  if (exec === undefined || exec === null) throw new RequestError(400, 'EXECABORT transaction was aborted');
  if (isErrorReply(exec)) throw new RequestError(400, exec.message);
  if (!Array.isArray(exec)) throw new Error('EXEC answered with something other than an array');
  return exec;
}

function authorized(req: IncomingMessage, url: URL, token: Buffer): boolean {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const given = Buffer.from(match?.[1] ?? url.searchParams.get('_token') ?? '', 'utf8');
  return given.length === token.length && timingSafeEqual(given, token);
}

async function readJson(req: IncomingMessage, maxBody: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBody) throw new RequestError(413, `ERR request body is larger than ${maxBody} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new RequestError(400, 'ERR failed to parse the request body as JSON');
  }
}

function toCommands(body: unknown): Command[] {
  if (!Array.isArray(body) || body.length === 0) {
    throw new RequestError(400, 'ERR expected a non-empty JSON array of commands');
  }
  return body.map(toCommand);
}

function toCommand(body: unknown): Command {
  if (!Array.isArray(body) || body.length === 0) {
    throw new RequestError(400, 'ERR expected a command as a non-empty JSON array');
  }
  const command = body.map((arg) => {
    if (typeof arg === 'string') return arg;
    if (typeof arg === 'number' || typeof arg === 'boolean') return String(arg);
    return JSON.stringify(arg);
  });
  const name = (command[0] as string).toLowerCase();
  if (REFUSED.has(name)) throw new RequestError(400, `ERR the bridge does not support ${name.toUpperCase()}`);
  return command;
}

function item(reply: Reply, base64: boolean): Json {
  return isErrorReply(reply) ? { error: reply.message } : { result: encode(reply, base64) };
}

/**
 * A reply as Upstash sends it: integers as numbers, nil as null, and in base64 mode every bulk
 * and status string base64-encoded except the status `OK`.
 */
export function encode(reply: Reply, base64: boolean): Json {
  if (reply === null || typeof reply === 'number') return reply;
  if (Array.isArray(reply)) return reply.map((r) => encode(r, base64));
  if (Buffer.isBuffer(reply)) return base64 ? reply.toString('base64') : reply.toString('utf8');
  if (reply.kind === 'status') {
    return base64 && reply.value !== 'OK' ? Buffer.from(reply.value, 'utf8').toString('base64') : reply.value;
  }
  return reply.message;
}

function send(res: ServerResponse, status: number, body: Json): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
