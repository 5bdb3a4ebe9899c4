import { createHash } from 'node:crypto';
import { backfillListener, createKeywordAnalyzer, MemoryError, RETRY, retry } from '@engram/core/driver';
import pg from 'pg';
import { isConnectionError, isRetryable } from './errors.ts';
import { LATEST_VERSION, migrate } from './migrations.ts';
import type { PostgresStoreOptions } from './options.ts';
import type { Names } from './sql.ts';

/** Thrown in a transaction to roll it back and run it again (a message moved to an unlocked thread). */
export class RestartTransaction extends Error {}

type Values = (string | null)[];

/** The store's pool (created unless given), its statements and transactions, retried by core's policy. */
export class Connection {
  private pool: pg.Pool | undefined;
  /** Whether `query` names statements: the option, or detected at open. */
  prepared: boolean;
  private readonly statementNames = new Map<string, string>();

  constructor(
    private readonly options: PostgresStoreOptions,
    private readonly names: Names,
  ) {
    this.pool = options.pool;
    this.prepared = options.preparedStatements ?? false;
  }

  /** Creates the pool unless one was given (a failed open reuses it), migrates, detects a proxy. */
  async open(): Promise<void> {
    if (!this.pool) {
      const { connectionString, connectTimeoutMs = 5_000, maxConnections = 10 } = this.options;
      this.pool = new pg.Pool({
        connectionString,
        connectionTimeoutMillis: connectTimeoutMs,
        max: maxConnections,
      });
      // An idle connection that drops (server restart, pg_terminate_backend) is removed from the
      // pool; without a listener the pool's 'error' event would crash the process.
      this.pool.on('error', () => undefined);
    }
    const client = await this.pool.connect();
    const release = watch(client);
    let version: number;
    try {
      version = await migrate(
        client,
        this.names,
        LATEST_VERSION,
        createKeywordAnalyzer(this.options.keywords),
        backfillListener(this.options.onBackfillProgress, 'pg'),
      );
      if (this.options.preparedStatements === undefined) this.prepared = await isDirect(client);
      release();
    } catch (error) {
      release(error);
      throw error;
    }
    if (version > LATEST_VERSION) {
      throw new MemoryError(
        'MIGRATION',
        `pg: init failed: the schema ${this.names.schemaName} is at version ${version}, newer than this package knows (${LATEST_VERSION}); upgrade @engram/pg`,
        { adapter: 'pg' },
      );
    }
  }

  /** Ends the pool the store created (an injected pool stays open). */
  async close(): Promise<void> {
    if (!this.options.pool) await this.pool?.end();
  }

  /**
   * One statement, run again when aborted to break a deadlock (it wrote nothing). `prepare` (fixed
   * texts whose plan does not depend on the statistics): named, when enabled, by a hash of the text,
   * so stores on other schemas sharing a pool never clash; planned once per connection.
   */
  async query<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    prepare = false,
  ): Promise<R[]> {
    const pool = this.pool as pg.Pool;
    const query: pg.QueryConfig = { text, values };
    if (prepare && this.prepared) {
      query.name =
        this.statementNames.get(text) ??
        `engram_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
      this.statementNames.set(text, query.name);
    }
    return retry(async () => (await pool.query<R>(query)).rows, { adapter: 'pg', retryable: isRetryable });
  }

  /**
   * `fn` in a transaction on one connection (`delimited`: `fn` begins and commits it), rolled back
   * when `fn` throws; run again after a deadlock, a serialization failure or `RestartTransaction`.
   */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>, delimited = false): Promise<T> {
    const pool = this.pool as pg.Pool;
    const attempt = async (): Promise<T | typeof RETRY> => {
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
        if (error instanceof RestartTransaction) return RETRY;
        throw error;
      }
    };
    return retry(attempt, { adapter: 'pg', what: 'transaction', retryable: isRetryable });
  }
}

/** `BEGIN` and a statement in one round trip (one simple-protocol message, values `inline`d); its rows. */
export async function beginWith<R extends pg.QueryResultRow>(c: pg.PoolClient, text: string, values: Values) {
  if (!inlinable(values)) {
    await c.query('BEGIN');
    return (await c.query<R>(text, values)).rows;
  }
  const results = (await c.query(`BEGIN; ${inline(text, values)}`)) as unknown as pg.QueryResult<R>[];
  return results[1]?.rows ?? [];
}

/** A statement and `COMMIT` in one round trip, like `beginWith`. */
export async function commitWith(c: pg.PoolClient, text: string, values: Values): Promise<void> {
  if (inlinable(values)) await c.query(`${inline(text, values)}; COMMIT`);
  else await c.query(text, values).then(() => c.query('COMMIT'));
}

/** Values can travel as literals unless one holds a NUL, which ends a simple-protocol message. */
const inlinable = (values: Values) => values.every((value) => value === null || !value.includes('\0'));

/**
 * `text` with its placeholders (`$1`, …) replaced by the values as SQL string literals: quotes
 * doubled, and backslashes doubled in an `E'…'` literal, which reads the same whatever
 * `standard_conforming_strings` says; `null` is `NULL`. Quoted identifiers and string literals
 * of `text` are left as they are, so a schema name holding `$1` is never a placeholder.
 */
export function inline(text: string, values: Values): string {
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
 * Guards a checked-out client against an unhandled 'error' event. The release function it returns
 * destroys the connection, instead of returning it to the pool, when given an error or one came.
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
 * Whether the server sees this connection on the address and port the socket connected to; behind
 * a proxy (PgBouncer, any pooler) it sees the proxy's. A Unix socket tells nothing: a proxy.
 */
async function isDirect(client: pg.PoolClient): Promise<boolean> {
  const socket = (client as { connection?: { stream?: { remoteAddress?: string; remotePort?: number } } })
    .connection?.stream;
  if (!socket?.remoteAddress || socket.remotePort === undefined) return false;
  const { rows } = await client.query('SELECT host(inet_server_addr()) AS addr, inet_server_port() AS port');
  const plain = (address: string) => address.replace(/^::ffff:/, '');
  const [server] = rows;
  return (
    server?.addr != null &&
    plain(server.addr) === plain(socket.remoteAddress) &&
    server.port === socket.remotePort
  );
}
