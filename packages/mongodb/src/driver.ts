import {
  assertStoreOptions,
  type BackfillListener,
  backfillListener,
  checkClientShape,
  createKeywordAnalyzer,
  type Driver,
  type KeywordDriver,
  keysOf,
  type StoreCapabilities,
} from '@engram/core/driver';
import { MongoClient } from 'mongodb';
import { type Collections, checkNames, collections } from './collections.ts';
import type { Codec } from './encoding.ts';
import { errors, mongoError } from './errors.ts';
import { keywordDriver } from './keywords.ts';
import { DEFAULT_LEASE_MS, type MongoTx, WriteLocks } from './locks.ts';
import { messageDriver } from './messages.ts';
import { migrate } from './migrations.ts';
import { observationDriver } from './observations.ts';
import { settingsDriver } from './settings.ts';
import type { MongoDBStoreOptions } from './store.ts';
import { resourceDriver, threadDriver } from './threads.ts';
import { turnDriver } from './turns.ts';
import { vectorDriver } from './vectors.ts';
import { workingMemoryStrategy } from './working-memory.ts';

/** What the driver learns when it opens: its collections and what the server can do. */
export interface Connection {
  collections: Collections;
  /** How values are written for this server (see `encoding.ts`). */
  codec: Codec;
  /** Multi-document transactions are available and enabled. */
  transactions: boolean;
  locks: WriteLocks;
  /** FerretDB 1.x: updates are replacements (`writes.ts`), bulk writes a few updates a command (`bulkWrite`). */
  ferretdb1: boolean;
}

/**
 * The driver core builds `MongoDBStore` from. `open` connects, asks the server what it supports
 * and migrates. Only replica sets and sharded clusters (`setName` or `isdbgrid` in `hello`, with
 * sessions) have transactions: `write` is then a session transaction, elsewhere its commands run
 * in order under write locks (`locks.ts`). FerretDB 1.x (`ferretdbVersion` in `buildInfo`)
 * cannot store arrays inside arrays, runs each update as a read and a whole-document write, and
 * skips a `$set` of a sub-document holding the same values under other keys: it gets the
 * nested-array wrapping, the write locks and replacement writes.
 */
export class MongoDBDriver implements Driver<MongoTx> {
  readonly name = 'mongodb';
  readonly errors = errors;
  readonly client: MongoClient;
  readonly dbName: string;
  readonly collectionPrefix: string;
  private readonly ownsClient: boolean;
  private readonly lockLeaseMs: number;
  /** Filled in by `open`; the primitives read it only while the store is open. */
  private readonly connection = {} as Connection;

  /** Keyword recall: an index document per message, BM25 per resource in the client (`keywords.ts`). */
  readonly keywords: KeywordDriver<MongoTx>;
  readonly threads = threadDriver(this.connection);
  readonly messages: ReturnType<typeof messageDriver>;
  readonly resources = resourceDriver(this.connection);
  /** Compare-and-set on the document's `version`; under write locks, a lease from the start. */
  readonly workingMemory = workingMemoryStrategy(this.connection);
  /** Semantic recall vectors: scope filtered on the server, exact ranking in the client. */
  readonly vectors = vectorDriver(
    this.connection,
    (fn) => this.write(fn),
    async (tx, ids) => new Set((await this.messages.places(tx, [], ids, false)).messages.keys()),
  );
  /** Observation logs: compare-and-set swaps on `(key, generation, version)` (`observations.ts`). */
  readonly observations = observationDriver(this.connection, (fn) => this.write(fn));
  /** Store-level settings: one document per key, each put one replace with upsert (`settings.ts`). */
  readonly settings = settingsDriver(this.connection);
  /** Turn records: one document per turn (`turns.ts`). */
  readonly turns = turnDriver(this.connection);

  private readonly onBackfill: BackfillListener;

  constructor(private readonly options: MongoDBStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw mongoError('INVALID_ARGUMENT', 'options must be an object');
    }
    assertStoreOptions(options, OPTION_KEYS, 'mongodb');
    this.collectionPrefix = options.collectionPrefix ?? 'engram_';
    checkNames(options.dbName, this.collectionPrefix);
    this.dbName = options.dbName;
    this.lockLeaseMs = options.lockLeaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isSafeInteger(this.lockLeaseMs) || this.lockLeaseMs <= 0) {
      const message = `lockLeaseMs must be a positive integer of milliseconds, got ${String(this.lockLeaseMs)}`;
      throw mongoError('INVALID_ARGUMENT', message);
    }
    this.client = createClient(options);
    this.ownsClient = this.client !== options.client;
    this.keywords = keywordDriver(this.connection, createKeywordAnalyzer(options.keywords));
    this.onBackfill = backfillListener(options.onBackfillProgress, 'mongodb');
    this.messages = messageDriver(this.connection, this.keywords.analyzer);
  }

  /** `transactionalBatches` is learnt at `open`: `true` where `write` is a transaction (else, and until open, `false`). */
  get capabilities(): StoreCapabilities {
    return {
      atomicWorkingMemory: true,
      transactionalBatches: this.connection.transactions === true,
      processLocal: false,
    };
  }

  async open(): Promise<void> {
    await this.client.connect();
    const db = this.client.db(this.dbName);
    const hello = await db.admin().command({ hello: 1 });
    const build = await db.admin().command({ buildInfo: 1 });
    const ferretdb1 = typeof build.ferretdbVersion === 'string' && /^v?1\./.test(build.ferretdbVersion);
    const transactions =
      this.options.transactions !== 'never' &&
      (typeof hello.setName === 'string' || hello.msg === 'isdbgrid') &&
      hello.logicalSessionTimeoutMinutes != null;
    const store = collections(db, this.collectionPrefix);
    await migrate(store, this.keywords.analyzer, this.onBackfill);
    const writeLocks = this.options.writeLocks ?? 'auto';
    const locked = writeLocks === 'always' || (writeLocks === 'auto' && (ferretdb1 || !transactions));
    Object.assign(this.connection, {
      collections: store,
      codec: { wrapNestedArrays: ferretdb1 },
      transactions,
      locks: new WriteLocks(locked ? store.locks : undefined, this.lockLeaseMs),
      ferretdb1,
    } satisfies Connection);
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  /** A session transaction where the server has them; else the commands in order, under write locks. */
  async write<T>(fn: (tx: MongoTx) => Promise<T>): Promise<T> {
    if (!this.connection.transactions) return this.connection.locks.run(fn);
    const session = this.client.startSession();
    try {
      const tx: MongoTx = { session, lock: async () => undefined, fence: async () => undefined };
      return await session.withTransaction(() => fn(tx));
    } finally {
      await session.endSession();
    }
  }
}

export const OPTION_KEYS = keysOf<MongoDBStoreOptions>({
  url: true,
  clientOptions: true,
  client: true,
  dbName: true,
  collectionPrefix: true,
  serverSelectionTimeoutMS: true,
  transactions: true,
  writeLocks: true,
  lockLeaseMs: true,
  keywords: true,
  onBackfillProgress: true,
});

function createClient(options: MongoDBStoreOptions): MongoClient {
  if (options.client !== undefined) {
    // By shape, not instanceof: a client from another copy of the driver works the same.
    return checkClientShape<MongoClient>(options.client, {
      adapter: 'mongodb',
      option: 'client',
      expected: 'a MongoClient of the mongodb driver',
      members: { connect: 'function', db: 'function', startSession: 'function', close: 'function' },
    });
  }
  if (typeof options.url !== 'string' || options.url === '') {
    throw mongoError('INVALID_ARGUMENT', 'pass either { url, dbName } or { client, dbName }');
  }
  const timeout = options.serverSelectionTimeoutMS ?? 5_000;
  try {
    return new MongoClient(options.url, {
      serverSelectionTimeoutMS: timeout,
      connectTimeoutMS: timeout,
      appName: 'engram',
      ...options.clientOptions,
    });
  } catch (error) {
    throw mongoError('INVALID_ARGUMENT', `invalid url: ${(error as Error).message}`, error);
  }
}
