import { resolve } from 'node:path';
import { MemoryError } from '@engram/core/adapter';
import {
  type Client,
  createClient,
  type InStatement,
  type ResultSet,
  type Transaction,
} from '@libsql/client';
import { EmbeddedDatabase } from './embedded.ts';
import { ADAPTER, isBusyError } from './errors.ts';

/** Ends a transaction (rolling back what was not committed) without masking an earlier error. */
export function closeQuietly(tx: Pick<Transaction, 'close'>): void {
  try {
    tx.close();
  } catch {
    // The connection is already gone; there is nothing left to roll back.
  }
}

/** Anything that runs statements: the client or an open transaction. */
export interface Executor {
  execute(statement: InStatement): Promise<ResultSet>;
  batch(statements: InStatement[]): Promise<ResultSet[]>;
}

/** A write transaction: statements, then `commit`; `close` rolls back what was not committed. */
export interface WriteTransaction extends Executor {
  commit(): Promise<void>;
  close(): void;
}

/**
 * What the store runs statements on: an `@libsql/client` client (a server, or an injected
 * client) or an `EmbeddedDatabase` (a `file:` or `:memory:` URL).
 */
export interface Database {
  execute(statement: InStatement): Promise<ResultSet>;
  batch(statements: InStatement[], mode?: 'write' | 'read'): Promise<ResultSet[]>;
  transaction(mode: 'write'): Promise<WriteTransaction>;
  close(): void;
}

/** Where the store's client comes from. */
export type ClientSource =
  | { kind: 'url'; url: string; authToken?: string; busyTimeoutMs: number; synchronous: 'full' | 'normal' }
  | { kind: 'injected'; client: Client; busyTimeoutMs: number };

/** True for URLs naming an in-memory database (one database per client, on one connection). */
export function isMemoryUrl(url: string): boolean {
  return url === ':memory:' || url === 'file::memory:' || url.startsWith('file::memory:?');
}

/** The file path of a `file:` URL (`file:relative.db`, `file:/abs.db`, `file:///abs.db`). */
function filePath(url: string): string {
  let path = url.slice('file:'.length).split('?')[0] ?? '';
  if (path.startsWith('//')) path = path.slice(path.indexOf('/', 2));
  return decodeURIComponent(path);
}

/** Runs tasks one at a time, in call order. */
class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Resolves once every task queued so far has settled. */
  drained(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}

/**
 * One queue per database file for the whole process, shared by every store opened on that file:
 * a transaction of one store and a statement of another store in the same process would
 * otherwise wait on each other inside the synchronous engine until the busy timeout.
 */
const fileQueues = new Map<string, SerialQueue>();

function queueFor(source: ClientSource, embedded: boolean, processLocal: boolean): SerialQueue | undefined {
  if (!embedded) return undefined;
  if (source.kind === 'injected' || processLocal) return new SerialQueue();
  const path = resolve(filePath(source.url));
  let queue = fileQueues.get(path);
  if (!queue) {
    queue = new SerialQueue();
    fileQueues.set(path, queue);
  }
  return queue;
}

/**
 * Owns the store's database connection and every rule about using it safely:
 *
 * - A `file:` or `:memory:` URL is opened as an `EmbeddedDatabase` (the `libsql` package, with
 *   statements kept prepared: `@libsql/client` leaks native memory on every embedded statement);
 *   a server URL gets an `@libsql/client` client; an injected client is used as it is.
 * - The connection is opened lazily with a busy timeout; `file:` databases are switched to WAL
 *   so that readers and the one writer do not block each other.
 * - On embedded databases (`file:`, `:memory:`) operations run one at a time, across every
 *   store of this process opened on the same file: the engine is synchronous, so a connection
 *   of this process waiting for a lock held by another connection of this same process would
 *   block the very event loop that has to release it, and could only time out.
 * - A connection whose statement failed with `SQLITE_BUSY` is never used again: `@libsql/client`
 *   reports later writes on such a client as successful without ever committing them. An owned
 *   connection is closed and replaced by a new one; an injected client is reconnected (all its
 *   connections dropped and reopened).
 */
export class Connection {
  private client: Database | undefined;
  private opening: Promise<Database> | undefined;
  private readonly queue: SerialQueue | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(private readonly source: ClientSource) {
    this.queue = queueFor(source, this.embedded, this.processLocal);
  }

  /** True when the data lives only inside this process (`:memory:`). */
  get processLocal(): boolean {
    return this.source.kind === 'url' && isMemoryUrl(this.source.url);
  }

  /** True for databases the engine opens in this process (`file:` or `:memory:`). */
  get embedded(): boolean {
    if (this.source.kind === 'url') return this.processLocal || this.source.url.startsWith('file:');
    return this.source.client.protocol === 'file';
  }

  /** Runs `fn` with the client; one operation at a time on embedded databases. */
  use<T>(fn: (client: Database) => Promise<T>): Promise<T> {
    return this.queue ? this.queue.run(() => this.attempt(fn)) : this.attempt(fn);
  }

  /** Runs `fn` in a write transaction (`BEGIN IMMEDIATE` when embedded) and commits it. */
  write<T>(fn: (tx: WriteTransaction) => Promise<T>): Promise<T> {
    return this.use(async (client) => {
      const tx = await client.transaction('write');
      try {
        const result = await fn(tx);
        await tx.commit();
        return result;
      } finally {
        closeQuietly(tx);
      }
    });
  }

  /**
   * Lets the operations already started finish, then closes an owned client; an injected client
   * is left open for its owner. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.queue?.drained();
      this.closed = true;
      const client = this.client;
      this.client = undefined;
      this.opening = undefined;
      if (client && this.source.kind === 'url') client.close();
    })();
    return this.closing;
  }

  private async attempt<T>(fn: (client: Database) => Promise<T>): Promise<T> {
    const client = await this.acquire();
    try {
      return await fn(client);
    } catch (error) {
      if (isBusyError(error)) this.discard(client);
      throw error;
    }
  }

  /** The current client, created (once, even under concurrent calls) when there is none. */
  private acquire(): Promise<Database> {
    if (this.closed) {
      return Promise.reject(
        new MemoryError('CONNECTION', `${ADAPTER}: the store is closed`, { adapter: ADAPTER }),
      );
    }
    if (!this.opening) {
      this.opening = this.open().then(
        (client) => {
          this.client = client;
          return client;
        },
        (error: unknown) => {
          this.opening = undefined;
          throw error;
        },
      );
    }
    return this.opening;
  }

  private async open(): Promise<Database> {
    const source = this.source;
    let client: Database;
    if (source.kind === 'injected') client = source.client;
    else if (this.embedded) {
      const path = this.processLocal ? ':memory:' : filePath(source.url);
      client = new EmbeddedDatabase(path, source.busyTimeoutMs);
    } else {
      client = createClient({ url: source.url, authToken: source.authToken, timeout: source.busyTimeoutMs });
    }
    try {
      await this.prepare(client);
    } catch (error) {
      if (source.kind === 'url') client.close();
      throw error;
    }
    return client;
  }

  /** One-time setup of a fresh client. */
  private async prepare(client: Database): Promise<void> {
    if (!this.embedded || this.processLocal) return;
    if (this.source.kind === 'url') {
      await client.execute('PRAGMA journal_mode = WAL');
      // Per connection; an `EmbeddedDatabase` is one connection for its lifetime.
      if (this.source.synchronous === 'normal') await client.execute('PRAGMA synchronous = NORMAL');
      return;
    }
    // An injected client may have been created without `timeout`; give the connection this
    // store uses one (operations are serialised, so the pool keeps handing out that connection).
    const current = await client.execute('PRAGMA busy_timeout');
    if (Number(current.rows[0]?.[0] ?? 0) === 0) {
      await client.execute(`PRAGMA busy_timeout = ${Math.floor(this.source.busyTimeoutMs)}`);
    }
  }

  /**
   * Drops a client of an embedded file database after SQLITE_BUSY. (A server keeps no such
   * state in the client, and an in-memory database lives in its one connection, which nothing
   * else can lock: both are kept.)
   */
  private discard(client: Database): void {
    if (this.client !== client || !this.embedded || this.processLocal) return;
    this.client = undefined;
    this.opening = undefined;
    try {
      if (this.source.kind === 'url') client.close();
      else void Promise.resolve(this.source.client.reconnect() as unknown).catch(() => undefined);
    } catch {
      // Closing a client that is already broken may throw; it is dropped either way.
    }
  }
}
