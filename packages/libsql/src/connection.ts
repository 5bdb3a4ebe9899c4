import { resolve } from 'node:path';
import type { BackfillListener } from '@engram/core/driver';
import { createClient } from '@libsql/client';
import { type Database, EmbeddedDatabase, inTransaction, type Transaction } from './embedded.ts';
import { isBusyError } from './errors.ts';
import type { LibSQLStoreOptions } from './store.ts';

/**
 * `LibSQLStore`'s options, validated, with their defaults (`overFetch`: `null` without the ANN
 * index; `cacheBytes`: `null` without kept vectors).
 */
export type Settings = LibSQLStoreOptions & {
  busyTimeoutMs: number;
  overFetch: number | null;
  cacheBytes: number | null;
  /** `onBackfillProgress`, checked. */
  onBackfill: BackfillListener;
};

/** The file path of a `file:` URL (`file:relative.db`, `file:/abs.db`, `file:///abs.db`). */
function filePath(url: string): string {
  const path = url.slice('file:'.length).split('?')[0] ?? '';
  return decodeURIComponent(path.startsWith('//') ? path.slice(path.indexOf('/', 2)) : path);
}

/** The tail of a queue of tasks that run one at a time, in call order. */
type Queue = { tail: Promise<unknown> };

/** One queue per database file for the whole process, shared by every store on that file. */
const fileQueues = new Map<string, Queue>();

/**
 * The store's database connection and the rules for using it safely: `file:` and `:memory:`
 * URLs open an `EmbeddedDatabase`, server URLs an `@libsql/client` client (an injected client is
 * used as it is), always with a busy timeout, `file:` databases in WAL mode. Embedded operations
 * run one at a time per file and process: the engine is synchronous, so waiting for a lock
 * another connection of this process holds would block the event loop that has to release it.
 * A connection whose statement failed with `SQLITE_BUSY` is never used again: `@libsql/client`
 * reports later writes on it as successful without ever committing them.
 */
export class Connection {
  /** The client; none before the first operation and after one was discarded. */
  private client: Database | undefined;
  private readonly queue: Queue | undefined;
  /** True when the data lives only inside this process (`:memory:`). */
  readonly processLocal: boolean;
  /** True for databases the engine opens in this process (`file:` or `:memory:`). */
  private readonly embedded: boolean;

  constructor(private readonly source: Settings) {
    const url = 'url' in source ? source.url : undefined;
    this.processLocal = url === ':memory:' || url === 'file::memory:' || !!url?.startsWith('file::memory:?');
    this.embedded =
      url === undefined
        ? 'client' in source && source.client.protocol === 'file'
        : url.startsWith('file:') || this.processLocal;
    if (!this.embedded) return;
    const path = url === undefined || this.processLocal ? undefined : resolve(filePath(url));
    this.queue = (path && fileQueues.get(path)) || { tail: Promise.resolve() };
    if (path) fileQueues.set(path, this.queue);
  }

  /** Runs `fn` with the client; one operation at a time on embedded databases. */
  use<T>(fn: (client: Database) => Promise<T>): Promise<T> {
    if (!this.queue) return this.attempt(fn);
    const result = this.queue.tail.then(() => this.attempt(fn));
    this.queue.tail = result.catch(() => undefined);
    return result;
  }

  /** Runs `fn` in a write transaction (`BEGIN IMMEDIATE` when embedded) and commits it. */
  write<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.use((client) => inTransaction(client, fn));
  }

  /** Lets the operations already queued finish, then closes an owned client. */
  async close(): Promise<void> {
    await this.queue?.tail;
    if ('url' in this.source) this.client?.close();
  }

  private async attempt<T>(fn: (client: Database) => Promise<T>): Promise<T> {
    this.client ??= await this.connect();
    const client = this.client;
    try {
      return await fn(client);
    } catch (error) {
      // Only an embedded file's client keeps the broken state (`:memory:` has nothing to lock).
      if (isBusyError(error) && this.client === client && this.embedded && !this.processLocal) {
        this.client = undefined;
        // Closing (or reconnecting) a broken client may fail: it is dropped either way.
        const source = this.source;
        void Promise.resolve()
          .then(() => ('url' in source ? client.close() : source.client.reconnect()))
          .catch(() => undefined);
      }
      throw error;
    }
  }

  /** A new client with its one-time setup. */
  private async connect(): Promise<Database> {
    const source = this.source;
    if ('client' in source) {
      // An injected client may have been created without `timeout`: give the connection this
      // store uses one (operations are serialised, so the pool keeps handing out that one).
      const timeout = this.embedded ? await source.client.execute('PRAGMA busy_timeout') : undefined;
      if (timeout && Number(timeout.rows[0]?.[0] ?? 0) === 0) {
        await source.client.execute(`PRAGMA busy_timeout = ${Math.floor(source.busyTimeoutMs)}`);
      }
      return source.client;
    }
    const { url, authToken, busyTimeoutMs } = source;
    if (!this.embedded) return createClient({ url, authToken, timeout: busyTimeoutMs });
    const client = new EmbeddedDatabase(this.processLocal ? ':memory:' : filePath(url), busyTimeoutMs);
    try {
      if (!this.processLocal) await client.execute('PRAGMA journal_mode = WAL');
      // Per connection; an `EmbeddedDatabase` is one connection for its lifetime.
      if (source.synchronous === 'normal') await client.execute('PRAGMA synchronous = NORMAL');
      return client;
    } catch (error) {
      client.close();
      throw error;
    }
  }
}
