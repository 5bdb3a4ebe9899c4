import {
  assertStoreOptions,
  type BackfillProgress,
  checkClientShape,
  type KeywordAnalyzerOptions,
  keysOf,
  MemoryError,
  Store,
} from '@engram/core/driver';
import { OracleDriver } from './driver.ts';
import type { OraclePool } from './oracledb.ts';
import type { OracleConnectionConfig } from './url.ts';

/** How JSON metadata is stored: `'json'` (the JSON type, 21c+), `'clob'` (19c), or `'auto'`. */
export type OracleJsonType = 'json' | 'clob' | 'auto';

/** Options shared by both ways of connecting. */
export interface OracleStoreBaseOptions {
  /** Prepended to every table and index name. Default `'engram_'`. */
  tablePrefix?: string;
  /**
   * Storage of the `metadata` columns of new tables: `'auto'` (default) picks the `JSON` type on
   * 21c and later, `CLOB CHECK (metadata IS JSON)` before. Existing tables keep theirs.
   */
  jsonType?: OracleJsonType;
  /**
   * The keyword index's analyzer (stop words, stemming; see `KeywordAnalyzer`). Default: English
   * stop words, Porter stemming. Set it once per database: the index keeps the terms it was
   * given. `false`: no keyword index (saves cost less; keyword and hybrid recall are
   * `UNSUPPORTED`); the next open without it indexes every stored message again first.
   */
  keywords?: KeywordAnalyzerOptions | false;
  /**
   * Called as a schema upgrade fills in the keyword index for the messages already stored (after
   * each batch of 500, and at the end). Each batch is committed: stopped, the upgrade goes on
   * at the next open with the messages left. Errors it throws are ignored.
   */
  onBackfillProgress?: (progress: BackfillProgress) => void;
}

/** Connect with credentials: the store creates (and on `close()` closes) its own pool. */
export interface OracleCredentialsOptions extends OracleStoreBaseOptions, OracleConnectionConfig {
  /**
   * Extra `oracledb.createPool()` attributes (`poolMax`, `queueTimeout`, TLS wallet, …) over the
   * defaults `poolMin: 0`, `poolMax: 8`, both connect timeouts 10 s and `queueTimeout: 30000` ms.
   */
  poolAttributes?: Record<string, unknown>;
}

/** A pool you created with `oracledb.createPool()` (any with `getConnection()`); `close()` leaves it open. */
export interface OraclePoolOptions extends OracleStoreBaseOptions {
  pool: OraclePool;
}

/** `OracleStore` options: credentials or an injected pool. */
export type OracleStoreOptions = OracleCredentialsOptions | OraclePoolOptions;

const OPTION_KEYS = keysOf<OracleStoreOptions>({
  tablePrefix: true,
  jsonType: true,
  keywords: true,
  onBackfillProgress: true,
  user: true,
  password: true,
  connectString: true,
  poolAttributes: true,
  pool: true,
});

/**
 * engram storage on Oracle Database (19c, 21c, 23ai/Free) through `oracledb` in thin mode: core's
 * store built from an `OracleDriver`. Vector search needs 23ai.
 */
export class OracleStore extends Store<OracleDriver> {
  /** The keys `options` takes; any other is `INVALID_ARGUMENT` (see `ownOptions` for tools). */
  static readonly optionKeys = OPTION_KEYS;

  constructor(options: OracleStoreOptions) {
    super(new OracleDriver(checked(options)));
  }
}

/** `options`, or `INVALID_ARGUMENT` naming what is wrong with them. */
function checked(options: OracleStoreOptions): OracleStoreOptions {
  const invalid = (why: string) =>
    new MemoryError('INVALID_ARGUMENT', `oracle: ${why}`, { adapter: 'oracle' });
  if (typeof options !== 'object' || options === null) throw invalid('OracleStore expects an options object');
  assertStoreOptions(options, OPTION_KEYS, 'oracle');
  if (!['json', 'clob', 'auto', undefined].includes(options.jsonType)) {
    throw invalid(`jsonType must be 'json', 'clob' or 'auto'`);
  }
  if ('pool' in options) {
    // By shape, not instanceof: a pool from another copy of `oracledb` works the same.
    checkClientShape<OraclePool>(options.pool, {
      adapter: 'oracle',
      option: 'pool',
      expected: 'an oracledb pool (oracledb.createPool())',
      members: { getConnection: 'function' },
    });
  } else if (!(options.user && options.connectString && typeof options.password === 'string')) {
    throw invalid('OracleStore needs { user, password, connectString } or { pool }');
  }
  return options;
}
