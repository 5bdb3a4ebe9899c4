import { checkClientShape, MemoryError } from '@engram/core/adapter';
import type pg from 'pg';
import type { PostgresVectorOptions } from './vectors.ts';

/** Where the store gets its connections: a connection string, or a pool you own. */
export type PostgresConnectionOptions =
  | {
      /** `postgres://user:password@host:port/database`. The store creates and ends its own pool. */
      connectionString: string;
      pool?: undefined;
    }
  | {
      /**
       * A `pg.Pool` you created. `close()` leaves it open: ending it is up to you. Recognised by
       * its methods (`connect`, `query`), so a pool from another copy of `pg` is accepted.
       */
      pool: pg.Pool;
      connectionString?: undefined;
    };

/** Options of `PostgresStore`. */
export type PostgresStoreOptions = PostgresConnectionOptions & {
  /** The schema holding every table and index; created when missing. Default `'public'`. */
  schemaName?: string;
  /** Prepended to every table and index name. Letters, digits and `_`. Default `'engram_'`. */
  tablePrefix?: string;
  /**
   * How long to wait for a new connection before failing with `CONNECTION`, in ms. Applies to
   * the pool the store creates from `connectionString`. Default 5000.
   */
  connectTimeoutMs?: number;
  /** Most connections in the pool the store creates from `connectionString`. Default 10. */
  maxConnections?: number;
  /**
   * Whether the store's hot statements (message saves, working memory, single-record reads) are
   * named prepared statements, parsed and planned once per connection instead of on every call.
   * Default: only when the connection is detected as direct (the server's address and port, as
   * the server sees them, are the ones the socket connected to), never through a proxy such as
   * PgBouncer in transaction mode, where a statement prepared on one server connection may be
   * missing on the next. `true` forces them (a pooler that supports them, e.g. PgBouncer 1.21+
   * with `max_prepared_statements`); `false` never sends them.
   */
  preparedStatements?: boolean;
  /** Semantic recall storage: pgvector or the exact `real[]` fallback, and an opt-in HNSW index. */
  vectors?: PostgresVectorOptions;
};

export const DEFAULT_SCHEMA = 'public';
export const DEFAULT_PREFIX = 'engram_';
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_CONNECTIONS = 10;

const PREFIX_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,29}$/;

/** A `postgres:` / `postgresql:` URL, or pg's `socket:` form and bare socket paths (`/run/…`). */
function isConnectionUrl(value: string): boolean {
  if (value.startsWith('/')) return true;
  if (!URL.canParse(value)) return false;
  return ['postgres:', 'postgresql:', 'socket:'].includes(new URL(value).protocol);
}

/** Throws `INVALID_ARGUMENT` for options the store cannot work with. */
export function checkOptions(options: PostgresStoreOptions, schemaName: string, prefix: string): void {
  const invalid = (message: string) =>
    new MemoryError('INVALID_ARGUMENT', `pg: ${message}`, { adapter: 'pg' });
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  const hasUrl = typeof options.connectionString === 'string' && options.connectionString !== '';
  const hasPool = options.pool !== undefined && options.pool !== null;
  if (hasUrl === hasPool) throw invalid('pass exactly one of connectionString and pool');
  // `pg` reads anything else as a path on a made-up host, and fails later with ENOTFOUND.
  if (hasUrl && !isConnectionUrl(options.connectionString as string)) {
    throw invalid(
      `connectionString ${JSON.stringify(options.connectionString)} is not a postgres:// or postgresql:// URL`,
    );
  }
  // By shape, not instanceof: a pool from another copy of `pg` works the same.
  if (hasPool) {
    checkClientShape(options.pool, {
      adapter: 'pg',
      option: 'pool',
      expected: 'a pg.Pool',
      members: { connect: 'function', query: 'function' },
    });
  }
  if (typeof schemaName !== 'string' || schemaName === '' || Buffer.byteLength(schemaName) > 63) {
    throw invalid('schemaName must be a non-empty string of at most 63 bytes');
  }
  if (schemaName.includes('\0')) throw invalid('schemaName must not contain NUL');
  if (typeof prefix !== 'string' || (prefix !== '' && !PREFIX_PATTERN.test(prefix))) {
    throw invalid(
      'tablePrefix must start with a letter or _, hold only letters, digits and _, and be at most 30 characters',
    );
  }
  const timeout = options.connectTimeoutMs;
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout <= 0)) {
    throw invalid('connectTimeoutMs must be a positive integer');
  }
  const prepared = options.preparedStatements;
  if (prepared !== undefined && typeof prepared !== 'boolean') {
    throw invalid('preparedStatements must be a boolean');
  }
  const max = options.maxConnections;
  if (max !== undefined && (!Number.isInteger(max) || max <= 0)) {
    throw invalid('maxConnections must be a positive integer');
  }
}
