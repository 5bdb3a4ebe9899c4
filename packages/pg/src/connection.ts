import { createHash } from 'node:crypto';
import { MemoryError } from '@engram/core/adapter';
import pg from 'pg';
import { errorCode, isConnectionError, toMemoryError } from './errors.ts';
import { LATEST_VERSION, migrate } from './migrations.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS, type PostgresStoreOptions } from './options.ts';
import type { Names } from './sql.ts';

/**
 * Attempts in all for a transaction that PostgreSQL aborted (deadlock, serialization race) or
 * that found a message moved to a thread it had not locked.
 */
const ATTEMPTS = 5;

/** Thrown inside a transaction to roll it back and run it again from the start. */
export class RestartTransaction extends Error {
  constructor(message = 'a message moved to another thread while the transaction ran; try again') {
    super(message);
  }
}

/**
 * The store's connections: a pool opened and migrated lazily through one memoised promise,
 * single statements, transactions with retries, and an idempotent close.
 */
export class Connection {
  private pool: pg.Pool | undefined;
  private readonly ownsPool: boolean;
  private ready: Promise<pg.Pool> | undefined;
  private closing: Promise<void> | undefined;
  /** Whether `statement` names statements: the option, or detected once at open. */
  prepared: boolean;
  /** Statement names by text (see `statement`). */
  private readonly statementNames = new Map<string, string>();

  constructor(
    private readonly options: PostgresStoreOptions,
    private readonly names: Names,
  ) {
    this.pool = options.pool;
    this.ownsPool = options.pool === undefined;
    this.prepared = options.preparedStatements ?? false;
  }

  /**
   * The query for a fixed statement text: a named prepared statement (parsed and planned once
   * per connection; the name is a hash of the text, so stores on other schemas sharing a pool
   * never clash) when enabled, else an unnamed one. Only for texts from a small fixed set.
   */
  statement(text: string, values: unknown[]): pg.QueryConfig {
    if (!this.prepared) return { text, values };
    let name = this.statementNames.get(text);
    if (name === undefined) {
      name = `engram_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
      if (this.statementNames.size < 256) this.statementNames.set(text, name);
    }
    return { name, text, values };
  }

  /** The pool, connected and migrated once; a failed attempt is retried by the next call. */
  connect(): Promise<pg.Pool> {
    if (this.closing) {
      return Promise.reject(new MemoryError('CONNECTION', 'pg: the store is closed', { adapter: 'pg' }));
    }
    this.ready ??= this.open().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async open(): Promise<pg.Pool> {
    if (!this.pool) {
      const pool = new pg.Pool({
        connectionString: this.options.connectionString,
        connectionTimeoutMillis: this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        max: this.options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      });
      // An idle connection that drops (server restart, pg_terminate_backend) is removed from the
      // pool; without a listener the pool's 'error' event would crash the process.
      pool.on('error', () => undefined);
      this.pool = pool;
    }
    const pool = this.pool;
    const client = await pool.connect();
    const release = watch(client);
    let version: number;
    try {
      version = await migrate(client, this.names);
      if (this.options.preparedStatements === undefined) this.prepared = await isDirect(client);
      release();
    } catch (error) {
      release(error);
      throw toMemoryError(error, 'init');
    }
    if (version > LATEST_VERSION) {
      throw new MemoryError(
        'MIGRATION',
        `pg: init failed: the schema ${this.names.schemaName} is at version ${version}, newer than this package knows (${LATEST_VERSION}); upgrade @engram/pg`,
        { adapter: 'pg' },
      );
    }
    return pool;
  }

  /**
   * One statement on a pooled connection. A statement runs in its own transaction, so one that
   * PostgreSQL aborted to break a deadlock left nothing behind and is simply run again.
   */
  async query<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    prepare = false,
  ): Promise<R[]> {
    const pool = await this.connect();
    const query = prepare ? this.statement(text, values) : { text, values };
    for (let attempt = 1; ; attempt++) {
      try {
        return (await pool.query<R>(query)).rows;
      } catch (error) {
        if (!isRetryable(error) || attempt >= ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Runs `fn` in a transaction on one connection (`delimited`: `fn` itself begins it with its
   * first statement and commits it with its last, see `beginWith` and `commitWith`, saving two
   * round trips; it must end the transaction on every path that returns). Rolled back when `fn` throws; run again from
   * the start (calling `fn` again) when PostgreSQL aborted it to break a deadlock or a
   * serialization race, or when `fn` threw `RestartTransaction`.
   */
  async transaction<T>(
    fn: (client: pg.PoolClient) => Promise<T>,
    { delimited = false }: { delimited?: boolean } = {},
  ): Promise<T> {
    const pool = await this.connect();
    for (let attempt = 1; ; attempt++) {
      const client = await pool.connect();
      const release = watch(client);
      try {
        if (!delimited) await client.query('BEGIN');
        const result = await fn(client);
        if (!delimited) await client.query('COMMIT');
        release();
        return result;
      } catch (error) {
        let broken: unknown = isConnectionError(error) ? error : undefined;
        if (!broken)
          await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
        release(broken);
        const restart = error instanceof RestartTransaction;
        if ((restart || isRetryable(error)) && attempt < ATTEMPTS) continue;
        if (restart) {
          throw new MemoryError('CONFLICT', `pg: ${error.message} (${ATTEMPTS} attempts)`, { adapter: 'pg' });
        }
        throw error;
      }
    }
  }

  /** Ends the pool the store created (an injected pool stays open). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.ready?.catch(() => undefined);
      if (this.ownsPool && this.pool && !this.pool.ended && !this.pool.ending) await this.pool.end();
    })();
    return this.closing;
  }
}

/**
 * `BEGIN` and a statement in one round trip: one simple-protocol message of two statements,
 * the values inlined as literals (see `inline`). Returns the statement's rows.
 */
export async function beginWith<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  text: string,
  values: (string | null)[],
): Promise<R[]> {
  if (!inlinable(values)) {
    await client.query('BEGIN');
    return (await client.query<R>(text, values)).rows;
  }
  const results = (await client.query(`BEGIN; ${inline(text, values)}`)) as unknown as pg.QueryResult<R>[];
  return results[1]?.rows ?? [];
}

/** A statement and `COMMIT` in one round trip, like `beginWith`. */
export async function commitWith(
  client: pg.PoolClient,
  text: string,
  values: (string | null)[],
): Promise<void> {
  if (!inlinable(values)) {
    await client.query(text, values);
    await client.query('COMMIT');
    return;
  }
  await client.query(`${inline(text, values)}; COMMIT`);
}

/**
 * Whether values can travel as literals in a simple-protocol message: not with a NUL, which
 * ends the message's text (PostgreSQL refuses NUL in `text` anyway; sent as parameters, the
 * value then fails with the server's own error).
 */
function inlinable(values: (string | null)[]): boolean {
  return values.every((value) => value === null || !value.includes('\0'));
}

/**
 * `text` with its placeholders (`$1`, …) replaced by the values as SQL string literals: quotes
 * doubled, and backslashes doubled in an `E'…'` literal, which reads the same whatever
 * `standard_conforming_strings` says; `null` is `NULL`. Quoted identifiers and string literals
 * of `text` are left as they are, so a schema name holding `$1` is never a placeholder.
 */
export function inline(text: string, values: (string | null)[]): string {
  return text.replace(/"(?:[^"]|"")*"|'(?:[^']|'')*'|\$(\d+)/g, (token, n: string | undefined) => {
    if (n === undefined) return token;
    const value = values[Number(n) - 1];
    if (value === undefined) throw new Error(`no value for $${n}`);
    if (value === null) return 'NULL';
    const quoted = value.replaceAll("'", "''");
    return value.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
  });
}

/**
 * Guards a checked-out client: a connection error while it is out of the pool would otherwise
 * be an unhandled 'error' event. Returns the release function; passing an error (or anything
 * truthy) destroys the connection instead of returning it to the pool.
 */
function watch(client: pg.PoolClient): (error?: unknown) => void {
  let failed: unknown;
  const onError = (error: unknown) => {
    failed = error ?? true;
  };
  client.on('error', onError);
  return (error?: unknown) => {
    client.removeListener('error', onError);
    const reason = error ?? failed;
    client.release(reason ? (reason instanceof Error ? reason : true) : undefined);
  };
}

/**
 * Whether `client` talks to the server directly: the server's own address and port for this
 * connection are the ones the socket connected to. Behind a proxy (PgBouncer, any pooler) the
 * server sees the proxy's connection, on another address or port; a Unix socket tells nothing,
 * so it counts as not direct.
 */
async function isDirect(client: pg.PoolClient): Promise<boolean> {
  const socket = (client as { connection?: { stream?: { remoteAddress?: string; remotePort?: number } } })
    .connection?.stream;
  if (!socket?.remoteAddress || socket.remotePort === undefined) return false;
  const { rows } = await client.query<{ addr: string | null; port: number | null }>(
    'SELECT host(inet_server_addr()) AS addr, inet_server_port() AS port',
  );
  const server = rows[0];
  const plain = (address: string) => address.replace(/^::ffff:/, '');
  return (
    server?.addr != null &&
    plain(server.addr) === plain(socket.remoteAddress) &&
    server.port === socket.remotePort
  );
}

/** Deadlock victims and serialization failures: rolled back whole, safe to run again. */
function isRetryable(error: unknown): boolean {
  const code = errorCode(error);
  return code === '40P01' || code === '40001';
}
