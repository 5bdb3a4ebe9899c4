import { type BackfillProgress, type KeywordAnalyzerOptions, Store } from '@engram/core/driver';
import type { MongoClient, MongoClientOptions } from 'mongodb';
import { MongoDBDriver, OPTION_KEYS } from './driver.ts';

/** Where the store gets its connection: a URL, or a `MongoClient` you own. */
export type MongoDBConnectionOptions =
  | {
      /** `mongodb://…` or `mongodb+srv://…`. The store creates, connects and closes its own client. */
      url: string;
      /** Extra options for the client the store creates from `url`. */
      clientOptions?: MongoClientOptions;
      client?: undefined;
    }
  | {
      /**
       * A client you created. The store connects it when needed; `close()` leaves it open.
       * Recognised by its methods (`connect`, `db`, `startSession`, `close`), so a client from
       * another copy of the `mongodb` package is accepted.
       */
      client: MongoClient;
      url?: undefined;
      clientOptions?: undefined;
    };

/** Options of `MongoDBStore`. */
export type MongoDBStoreOptions = MongoDBConnectionOptions & {
  /** The database holding the collections. */
  dbName: string;
  /** Prepended to every collection name. Letters, digits, `_`, `.`, `-`. Default `'engram_'`. */
  collectionPrefix?: string;
  /**
   * How long to look for a reachable server before failing with `CONNECTION`, in ms. Applies to
   * the client the store creates from `url` (unless `clientOptions` sets it). Default 5000.
   */
  serverSelectionTimeoutMS?: number;
  /**
   * `'auto'` (default) runs the writes of several documents (`saveMessages`, `deleteThread`, …)
   * in a transaction when the server supports them (a replica set or a sharded cluster);
   * `'never'` always runs them under write locks, as on standalone servers.
   */
  transactions?: 'auto' | 'never';
  /**
   * Per-document write locks. `'auto'` (default) turns them on where the server has no
   * transactions (a standalone server, FerretDB) and where its single-document updates are not
   * atomic (FerretDB 1.x); a replica set never needs them (see the README).
   */
  writeLocks?: 'auto' | 'always' | 'never';
  /**
   * How long a write lock is held before other writers presume its holder dead and break it, in
   * ms (a positive integer). Default 10000. A holder that stood still past it cannot overwrite
   * what others wrote since (see "How writes under a lock are fenced" in the README).
   */
  lockLeaseMs?: number;
  /**
   * The keyword index's analyzer (stop words, stemming; see `KeywordAnalyzer`). Default: English
   * stop words, Porter stemming. Changing it does not re-index stored messages. `false`: no
   * keyword index (saves cost less; keyword and hybrid recall are `UNSUPPORTED`); the next open
   * without it indexes every stored message again first.
   */
  keywords?: KeywordAnalyzerOptions | false;
  /**
   * Called as a schema upgrade fills in the keyword index for the messages already stored (after
   * each batch of 500, and at the end). Stopped, the upgrade resumes after the last batch done at
   * the next open (its place is kept in the locks collection). Errors it throws are ignored.
   */
  onBackfillProgress?: (progress: BackfillProgress) => void;
};

/**
 * engram storage on MongoDB (official `mongodb` driver): core's `Store` built from `MongoDBDriver`.
 * Connects lazily: the first call (usually `init()`) connects and applies the migrations.
 */
export class MongoDBStore extends Store<MongoDBDriver> {
  /** The keys `options` takes; any other is `INVALID_ARGUMENT` (see `ownOptions` for tools). */
  static readonly optionKeys = OPTION_KEYS;

  /** The driver client: the one passed in, or the one created from `url`. */
  readonly client: MongoClient;
  /** The database holding the collections. */
  readonly dbName: string;
  /** The prefix of every collection name. */
  readonly collectionPrefix: string;

  constructor(options: MongoDBStoreOptions) {
    super(new MongoDBDriver(options));
    ({ client: this.client, dbName: this.dbName, collectionPrefix: this.collectionPrefix } = this.driver);
  }
}
