import {
  assertStoreOptions,
  type BackfillProgress,
  backfillListener,
  checkClientShape,
  type KeywordAnalyzerOptions,
  keysOf,
  MemoryError,
  type ObservationStore,
  Store,
  type TurnStore,
  type VectorStore,
} from '@engram/core/driver';
import type { Client } from '@libsql/client';
import type { Settings } from './connection.ts';
import { LibSQLDriver } from './driver.ts';
import { ADAPTER } from './errors.ts';
import { DEFAULT_CACHE_BYTES } from './vector-cache.ts';
import { DEFAULT_OVER_FETCH, type LibSQLVectorOptions } from './vectors.ts';

/** The busy timeout used when none is given: how long a write waits for another writer's lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/** Options of `LibSQLStore`: a URL to open, or a client you created and keep owning. */
export type LibSQLStoreOptions = (
  | {
      /** `file:path/to.db`, `:memory:`, or a libSQL server URL (`libsql://…`, `http(s)://…`, `ws(s)://…`). */
      url: string;
      /** Token for a libSQL server. */
      authToken?: string;
      /** How long a statement waits for another connection's lock before failing. Default 5000 ms. */
      busyTimeoutMs?: number;
      /**
       * SQLite's `synchronous` for a `file:` database (WAL): `'full'` (default) syncs the log at
       * every commit, so a committed write survives a power loss; `'normal'` skips that flush (a
       * crash of the process loses nothing; a power loss or OS crash can undo the last commits).
       */
      synchronous?: 'full' | 'normal';
    }
  | {
      /**
       * An `@libsql/client` client, which the store never closes; create it with `timeout` set.
       * Recognised by its members, so a client from another copy of `@libsql/client` is accepted.
       */
      client: Client;
      /** Applied to the client's connection when it has no busy timeout. Default 5000 ms. */
      busyTimeoutMs?: number;
    }
) & {
  /** Semantic recall vectors: exact by default; `{ index: true }` opts into libSQL's ANN index. */
  vectors?: LibSQLVectorOptions;
  /**
   * The keyword index's analyzer (stop words, stemming; see `KeywordAnalyzer`). Default: English
   * stop words, Porter stemming. Set it once per database: the index keeps the terms it was
   * given. `false`: no keyword index (saves cost less; keyword and hybrid recall are
   * `UNSUPPORTED`); the next open without it indexes every stored message again first.
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
};

const invalidOption = (message: string) =>
  new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: ${message}`, { adapter: ADAPTER });

const OPTION_KEYS = keysOf<LibSQLStoreOptions>({
  url: true,
  authToken: true,
  busyTimeoutMs: true,
  synchronous: true,
  client: true,
  vectors: true,
  keywords: true,
  onBackfillProgress: true,
});

/** The options, validated, with their defaults. */
function settings(options: LibSQLStoreOptions): Settings {
  if (options === null || typeof options !== 'object') throw invalidOption('options must be an object');
  assertStoreOptions(options, OPTION_KEYS, ADAPTER);
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 1) {
    throw invalidOption(`busyTimeoutMs must be a positive integer, got ${String(options.busyTimeoutMs)}`);
  }
  const { vectors = {} } = options;
  if (vectors === null || typeof vectors !== 'object') throw invalidOption('vectors must be an object');
  assertStoreOptions(vectors, keysOf<LibSQLVectorOptions>({ index: true, cache: true }), ADAPTER, 'vectors.');
  const { index = false } = vectors;
  if (typeof index === 'object' && index !== null) {
    assertStoreOptions(index, keysOf<{ overFetch?: number }>({ overFetch: true }), ADAPTER, 'vectors.index.');
  }
  const overFetch = (typeof index === 'object' ? index?.overFetch : undefined) ?? DEFAULT_OVER_FETCH;
  if (!Number.isInteger(overFetch) || overFetch < 1 || overFetch > 1_000) {
    throw invalidOption(
      `vectors.index.overFetch must be an integer from 1 to 1000, got ${String(overFetch)}`,
    );
  }
  const { cache = {} } = vectors;
  if (cache !== false && (cache === null || typeof cache !== 'object')) {
    throw invalidOption(`vectors.cache must be false or { maxBytes }, got ${String(cache)}`);
  }
  if (cache !== false) {
    assertStoreOptions(cache, keysOf<{ maxBytes?: number }>({ maxBytes: true }), ADAPTER, 'vectors.cache.');
  }
  const cacheBytes = cache === false ? null : (cache.maxBytes ?? DEFAULT_CACHE_BYTES);
  if (cacheBytes !== null && (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0)) {
    throw invalidOption(`vectors.cache.maxBytes must be a non-negative integer, got ${String(cacheBytes)}`);
  }
  const onBackfill = backfillListener(options.onBackfillProgress, ADAPTER);
  const valid = { busyTimeoutMs, overFetch: index ? overFetch : null, cacheBytes, onBackfill };
  if ('client' in options && options.client !== undefined) {
    const client = checkClientShape<Client>(options.client, {
      adapter: ADAPTER,
      option: 'client',
      expected: 'an @libsql/client client (createClient())',
      members: {
        execute: 'function',
        batch: 'function',
        transaction: 'function',
        reconnect: 'function',
        protocol: 'string',
      },
    });
    return { ...options, ...valid, client };
  }
  if (!('url' in options) || typeof options.url !== 'string' || options.url.length === 0) {
    throw invalidOption('pass either { url } (file:…, :memory: or libsql://…) or { client }');
  }
  const synchronous = options.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw invalidOption(`synchronous must be 'full' or 'normal', got ${String(options.synchronous)}`);
  }
  return { ...options, ...valid, synchronous };
}

/**
 * engram storage on libSQL / SQLite: an embedded `file:` database (the default for local
 * agents), `:memory:`, or a libSQL server; core builds it from `LibSQLDriver`.
 */
export class LibSQLStore extends Store<LibSQLDriver> {
  /** The keys `options` takes; any other is `INVALID_ARGUMENT` (see `ownOptions` for tools). */
  static readonly optionKeys = OPTION_KEYS;

  constructor(options: LibSQLStoreOptions) {
    super(new LibSQLDriver(settings(options)));
  }

  /** Vector search for semantic recall, exact unless `vectors.index` (see `LibSQLVectorOptions`). */
  override get vectors(): VectorStore {
    return super.vectors as VectorStore;
  }

  /** Observation logs for observational memory (`engram_observations`). */
  override get observations(): ObservationStore {
    return super.observations as ObservationStore;
  }

  /** Turn records for `options.turnRecords` (`engram_turns`). */
  override get turns(): TurnStore {
    return super.turns as TurnStore;
  }
}
