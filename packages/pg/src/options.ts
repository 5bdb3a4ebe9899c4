import {
  assertStoreOptions,
  type BackfillProgress,
  backfillListener,
  checkClientShape,
  type KeywordAnalyzerOptions,
  keysOf,
  MemoryError,
} from '@engram/core/driver';
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
      /** A `pg.Pool` you created; `close()` leaves it open. Recognised by its `connect` and `query`. */
      pool: pg.Pool;
      connectionString?: undefined;
    };

/** Options of `PostgresStore`. */
export type PostgresStoreOptions = PostgresConnectionOptions & {
  /**
   * The keyword index's analyzer (stop words, stemming; see `KeywordAnalyzer`). Default: English
   * stop words, Porter stemming. Set it once per schema: the index keeps the terms it was given.
   * `false`: no keyword index (saves cost less; keyword and hybrid recall are `UNSUPPORTED`); the
   * next open without it indexes every stored message again first.
   */
  keywords?: KeywordAnalyzerOptions | false;
  /**
   * Called as a schema upgrade fills in the keyword index for the messages already stored, after
   * each batch of 500 (each committed on its own, after the schema change). Stopped half-way, the
   * backfill resumes at the next open after the last batch committed, and `total` counts the
   * messages left; an open finishes a pending backfill before the store serves. Errors it throws
   * are ignored.
   */
  onBackfillProgress?: (progress: BackfillProgress) => void;
  /** The schema holding every table and index; created when missing. Default `'public'`. */
  schemaName?: string;
  /** Prepended to every table and index name. Letters, digits and `_`. Default `'engram_'`. */
  tablePrefix?: string;
  /** How long a new pooled connection may take before `CONNECTION`, in ms (created pools). Default 5000. */
  connectTimeoutMs?: number;
  /** Most connections in the pool the store creates from `connectionString`. Default 10. */
  maxConnections?: number;
  /**
   * Whether the hot statements (saves, working memory, lookups by id) are named prepared statements,
   * planned once per connection. Default: only on a connection detected as direct, never through a
   * proxy such as PgBouncer in transaction mode, where a statement prepared on one server connection
   * may be missing on the next. `true` forces them (e.g. PgBouncer 1.21+ with
   * `max_prepared_statements`); `false` never sends them.
   */
  preparedStatements?: boolean;
  /** Semantic recall storage: pgvector or the exact `real[]` fallback, and an opt-in HNSW index. */
  vectors?: PostgresVectorOptions;
};

/** A `postgres:` / `postgresql:` URL, or pg's `socket:` form and bare socket paths (`/run/…`). */
function isConnectionUrl(value: string): boolean {
  if (value.startsWith('/')) return true;
  return URL.canParse(value) && ['postgres:', 'postgresql:', 'socket:'].includes(new URL(value).protocol);
}

const invalid = (message: string) => new MemoryError('INVALID_ARGUMENT', `pg: ${message}`, { adapter: 'pg' });

export const OPTION_KEYS = keysOf<PostgresStoreOptions>({
  connectionString: true,
  pool: true,
  keywords: true,
  onBackfillProgress: true,
  schemaName: true,
  tablePrefix: true,
  connectTimeoutMs: true,
  maxConnections: true,
  preparedStatements: true,
  vectors: true,
});

/** The schema and table prefix of `options`; `INVALID_ARGUMENT` for options the store cannot work with. */
export function checkOptions(options: PostgresStoreOptions): { schemaName: string; prefix: string } {
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  assertStoreOptions(options, OPTION_KEYS, 'pg');
  const { connectionString: url, pool, schemaName = 'public', tablePrefix: prefix = 'engram_' } = options;
  const hasUrl = typeof url === 'string' && url !== '';
  if (hasUrl === (pool !== undefined && pool !== null))
    throw invalid('pass exactly one of connectionString and pool');
  // `pg` reads anything else as a path on a made-up host, and fails later with ENOTFOUND.
  if (hasUrl && !isConnectionUrl(url)) {
    throw invalid(`connectionString ${JSON.stringify(url)} is not a postgres:// or postgresql:// URL`);
  }
  // By shape, not instanceof: a pool from another copy of `pg` works the same.
  const members = { connect: 'function', query: 'function' } as const;
  if (!hasUrl) checkClientShape(pool, { adapter: 'pg', option: 'pool', expected: 'a pg.Pool', members });
  if (typeof schemaName !== 'string' || schemaName === '' || Buffer.byteLength(schemaName) > 63) {
    throw invalid('schemaName must be a non-empty string of at most 63 bytes');
  }
  if (schemaName.includes('\0')) throw invalid('schemaName must not contain NUL');
  if (typeof prefix !== 'string' || (prefix !== '' && !/^[A-Za-z_][A-Za-z0-9_]{0,29}$/.test(prefix))) {
    throw invalid(
      'tablePrefix must start with a letter or _, hold only letters, digits and _, and be at most 30 characters',
    );
  }
  for (const key of ['connectTimeoutMs', 'maxConnections'] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      throw invalid(`${key} must be a positive integer`);
    }
  }
  if (options.preparedStatements !== undefined && typeof options.preparedStatements !== 'boolean') {
    throw invalid('preparedStatements must be a boolean');
  }
  backfillListener(options.onBackfillProgress, 'pg');
  return { schemaName, prefix };
}
