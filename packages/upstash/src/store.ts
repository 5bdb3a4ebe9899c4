import {
  assertStoreOptions,
  type BackfillProgress,
  backfillListener,
  checkClientShape,
  createKeywordAnalyzer,
  type KeywordAnalyzerOptions,
  keysOf,
  MemoryError,
  Store,
} from '@engram/core/driver';
import { Redis } from '@upstash/redis';
import { UpstashDriver } from './driver.ts';
import { ADAPTER } from './errors.ts';
import { DEFAULT_VECTOR_SCAN_LIMIT } from './vectors.ts';

/**
 * Options of `UpstashStore`: the REST URL and token of an Upstash database (or of the local
 * bridge), or a `Redis` client of `@upstash/redis` you created.
 */
export type UpstashStoreOptions = {
  /** Prefix of every key, so several stores can share one database. Default `'engram'`. */
  prefix?: string;
  /** Semantic recall: vectors one search reads at most (newest first). Default 5000. */
  vectorScanLimit?: number;
  /**
   * The keyword index's analyzer (stop words, stemming; see `KeywordAnalyzer`). Default: English
   * stop words, Porter stemming. Changing it does not re-index stored messages. `false`: no
   * keyword index (saves cost less; keyword and hybrid recall are `UNSUPPORTED`); the next open
   * without it indexes every stored message again first.
   */
  keywords?: KeywordAnalyzerOptions | false;
  /**
   * Called as a layout upgrade fills in the keyword index for the messages already stored (after
   * each batch of threads, about 500 messages, and at the end). Stopped, the upgrade goes on with
   * the threads left at the next open. Errors it throws are ignored.
   */
  onBackfillProgress?: (progress: BackfillProgress) => void;
} & (
  | {
      /**
       * `UPSTASH_REDIS_REST_URL`. One holding a user name or password is refused with
       * `INVALID_ARGUMENT`: the REST API authenticates with `token` alone.
       */
      url: string;
      /** `UPSTASH_REDIS_REST_TOKEN`. */
      token: string;
      /** Network retries of the client (see `@upstash/redis`). Default: the client's. */
      retry?: false | { retries?: number; backoff?: (retryCount: number) => number };
      client?: never;
    }
  | {
      /** A client used as is, with any `automaticDeserialization`; recognised by its `createScript()`. */
      client: Redis;
      url?: never;
      token?: never;
      retry?: never;
    }
);

const OPTION_KEYS = keysOf<UpstashStoreOptions>({
  prefix: true,
  vectorScanLimit: true,
  keywords: true,
  onBackfillProgress: true,
  url: true,
  token: true,
  retry: true,
  client: true,
});

/**
 * engram storage on Upstash Redis over its REST API (`@upstash/redis`): the store core builds
 * from `UpstashDriver`. Records are hashes, listings read sorted-set indexes, every write is one
 * Lua script, and working memory is atomic across processes (a compare-and-set, then a lease).
 */
export class UpstashStore extends Store<UpstashDriver> {
  /** The keys `options` takes; any other is `INVALID_ARGUMENT` (see `ownOptions` for tools). */
  static readonly optionKeys = OPTION_KEYS;

  constructor(options: UpstashStoreOptions) {
    super(driverOf(options));
  }
}

/** Checks the options (`INVALID_ARGUMENT`) and builds the driver. */
function driverOf(options: UpstashStoreOptions): UpstashDriver {
  if (options === null || typeof options !== 'object') {
    throw invalid('UpstashStore expects an options object with { url, token } or { client }');
  }
  assertStoreOptions(options, OPTION_KEYS, ADAPTER);
  const prefix = options.prefix ?? 'engram';
  const vectorScanLimit = options.vectorScanLimit ?? DEFAULT_VECTOR_SCAN_LIMIT;
  if (typeof prefix !== 'string' || prefix.length === 0) throw invalid('prefix must be a non-empty string');
  if (!Number.isInteger(vectorScanLimit) || vectorScanLimit < 1) {
    throw invalid('vectorScanLimit must be a positive integer');
  }
  const analyzer = createKeywordAnalyzer(options.keywords);
  const onBackfill = backfillListener(options.onBackfillProgress, ADAPTER);
  return new UpstashDriver(clientOf(options), prefix, vectorScanLimit, analyzer, onBackfill);
}

const CLIENT_SHAPE = {
  adapter: ADAPTER,
  option: 'client',
  expected: 'a Redis client of @upstash/redis',
  members: { createScript: 'function' },
} as const;

/** The client given (recognised by shape: one of another copy of `@upstash/redis` works), or a new one. */
function clientOf(options: UpstashStoreOptions): Redis {
  if (options.client !== undefined) return checkClientShape<Redis>(options.client, CLIENT_SHAPE);
  const { url, token, retry } = options;
  if (typeof url !== 'string' || !url) throw invalid('url is required (or pass a client)');
  if (typeof token !== 'string' || !token) throw invalid('token is required');
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed?.username || parsed?.password) {
    throw invalid(
      'url must not hold a user name or password (https://user:password@…): the REST API authenticates with token alone',
    );
  }
  try {
    return new Redis({ url, token, automaticDeserialization: false, retry });
  } catch (error) {
    throw invalid(`cannot create the client: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: ${message}`, { adapter: ADAPTER });
}
