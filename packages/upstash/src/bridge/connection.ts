import { connect, type Socket } from 'node:net';
import { encodeCommand, isErrorReply, type Reply, ReplyParser } from './resp.ts';

/** Where the real Redis is, parsed from a `redis://[user:password@]host[:port][/db]` URL. */
export interface RedisTarget {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db?: number;
}

/** Parses a `redis://` URL; the port defaults to 6379. */
export function parseRedisUrl(url: string): RedisTarget {
  const parsed = new URL(url);
  if (parsed.protocol !== 'redis:') throw new Error(`expected a redis:// URL, got ${JSON.stringify(url)}`);
  const db = parsed.pathname.replace(/^\//, '');
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 6379,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: db ? Number(db) : undefined,
  };
}

interface Batch {
  expected: number;
  replies: Reply[];
  resolve: (replies: Reply[]) => void;
  reject: (error: Error) => void;
}

/** One RESP connection to Redis. Runs one batch of pipelined commands at a time. */
export class RedisConnection {
  private readonly parser = new ReplyParser();
  private batch: Batch | undefined;
  private failure: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('redis connection closed')));
  }

  /** Opens a connection and authenticates / selects the database the target names. */
  static async open(target: RedisTarget, timeoutMs = 5_000): Promise<RedisConnection> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: target.host, port: target.port });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`redis at ${target.host}:${target.port} did not answer in ${timeoutMs} ms`));
      }, timeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.setNoDelay(true);
        resolve(s);
      });
      s.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    const connection = new RedisConnection(socket);
    const setup: string[][] = [];
    if (target.password !== undefined) {
      setup.push(target.username ? ['AUTH', target.username, target.password] : ['AUTH', target.password]);
    }
    if (target.db !== undefined && target.db !== 0) setup.push(['SELECT', String(target.db)]);
    if (setup.length > 0) {
      const replies = await connection.send(setup);
      const failed = replies.find(isErrorReply);
      if (failed) {
        connection.close();
        throw new Error(`redis refused the connection setup: ${failed.message}`);
      }
    }
    return connection;
  }

  /** False once the socket failed or closed. */
  get healthy(): boolean {
    return this.failure === undefined && !this.socket.destroyed;
  }

  /** Writes the commands in one go and resolves with one reply per command, in order. */
  send(commands: readonly (readonly (string | Buffer)[])[]): Promise<Reply[]> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.batch) return Promise.reject(new Error('redis connection is busy'));
    if (commands.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.batch = { expected: commands.length, replies: [], resolve, reject };
      this.socket.write(Buffer.concat(commands.map(encodeCommand)));
    });
  }

  /** Closes the socket. */
  close(): void {
    this.failure ??= new Error('redis connection closed');
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.parser.push(chunk);
    let replies: Reply[];
    try {
      replies = this.parser.drain();
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)));
      this.socket.destroy();
      return;
    }
    const batch = this.batch;
    if (!batch) return;
    batch.replies.push(...replies);
    if (batch.replies.length >= batch.expected) {
      this.batch = undefined;
      batch.resolve(batch.replies);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const batch = this.batch;
    this.batch = undefined;
    batch?.reject(error);
  }
}

/** A small pool of Redis connections; a request borrows one for its whole batch. */
export class ConnectionPool {
  private readonly idle: RedisConnection[] = [];
  private readonly waiting: ((connection: RedisConnection | undefined) => void)[] = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly target: RedisTarget,
    private readonly max = 16,
  ) {}

  /** Runs `fn` with a connection; a connection that failed is discarded, not returned. */
  async use<T>(fn: (connection: RedisConnection) => Promise<T>): Promise<T> {
    const connection = await this.acquire();
    try {
      return await fn(connection);
    } finally {
      this.release(connection);
    }
  }

  /** Closes every idle connection and refuses new work. */
  close(): void {
    this.closed = true;
    for (const connection of this.idle.splice(0)) connection.close();
    for (const wake of this.waiting.splice(0)) wake(undefined);
  }

  private async acquire(): Promise<RedisConnection> {
    if (this.closed) throw new Error('bridge is closed');
    for (let c = this.idle.pop(); c; c = this.idle.pop()) {
      if (c.healthy) return c;
      this.open--;
    }
    if (this.open < this.max) {
      this.open++;
      try {
        return await RedisConnection.open(this.target);
      } catch (error) {
        this.open--;
        throw error;
      }
    }
    const connection = await new Promise<RedisConnection | undefined>((resolve) =>
      this.waiting.push(resolve),
    );
    if (!connection) throw new Error('bridge is closed');
    return connection;
  }

  private release(connection: RedisConnection): void {
    if (!connection.healthy || this.closed) {
      connection.close();
      this.open--;
      // A waiter can now open a fresh connection.
      const wake = this.waiting.shift();
      if (wake) {
        this.open++;
        RedisConnection.open(this.target).then(wake, () => {
          this.open--;
          wake(undefined);
        });
      }
      return;
    }
    const wake = this.waiting.shift();
    if (wake) wake(connection);
    else this.idle.push(connection);
  }
}
