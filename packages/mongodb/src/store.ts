import type * as core from '@engram/core/adapter';
import {
  checkClientShape,
  MemoryError,
  pageOffset,
  redactDriverError,
  StoreBase,
  threadExists,
} from '@engram/core/adapter';
import { MongoClient, type MongoClientOptions } from 'mongodb';
import { checkNames } from './collections.ts';
import {
  atomically,
  type Connection,
  openConnection,
  resourceLock,
  storableIds,
  threadLock,
  upsert,
} from './connection.ts';
import { assertStorableString } from './encoding.ts';
import { isDuplicateKey, threadNotFound, toMemoryError } from './errors.ts';
import { DEFAULT_LEASE_MS } from './locks.ts';
import {
  assertDocumentSize,
  metadataSetPaths,
  newVersion,
  toResource,
  toThread,
  toThreadDocument,
} from './mapping.ts';
import * as messages from './messages.ts';
import { scope, threadFilter, threadSort } from './queries.ts';
import { MongoDBVectors } from './vectors.ts';
import { workingMemoryStrategy } from './working-memory.ts';
import { assertReplaced, updateFields } from './writes.ts';

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
   * `'auto'` (default) runs `saveMessages` and `deleteThread` in a transaction when the server
   * supports them (a replica set or a sharded cluster); `'never'` always uses the ordered,
   * validate-first writes that standalone servers get.
   */
  transactions?: 'auto' | 'never';
  /**
   * Per-document write locks for servers whose single-document updates are not atomic. `'auto'`
   * (default) turns them on for FerretDB 1.x only; MongoDB never needs them (see the README).
   */
  writeLocks?: 'auto' | 'always' | 'never';
  /**
   * How long a write lock is held before other writers presume its holder dead and break it, in
   * ms (a positive integer). Default 10000. A holder that stood still past it cannot overwrite
   * what others wrote since (see "How writes under a lock are fenced" in the README); a short
   * lease lets tests stop a writer for longer than it in seconds.
   */
  lockLeaseMs?: number;
  /** Bounds of the compare-and-set retries of working-memory updates. Default 50 attempts, 20 ms. */
  retry?: { attempts?: number; maxDelayMs?: number };
};

const ADAPTER = 'mongodb';
const DEFAULT_PREFIX = 'engram_';
const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 5_000;

function createClient(options: MongoDBStoreOptions): MongoClient {
  if (options.client !== undefined) {
    // By shape, not instanceof: a client from another copy of the driver works the same.
    return checkClientShape<MongoClient>(options.client, {
      adapter: ADAPTER,
      option: 'client',
      expected: 'a MongoClient of the mongodb driver',
      members: { connect: 'function', db: 'function', startSession: 'function', close: 'function' },
    });
  }
  if (typeof options.url !== 'string' || options.url === '') {
    throw new MemoryError('INVALID_ARGUMENT', 'mongodb: pass either { url, dbName } or { client, dbName }', {
      adapter: ADAPTER,
    });
  }
  const timeout = options.serverSelectionTimeoutMS ?? DEFAULT_SERVER_SELECTION_TIMEOUT_MS;
  try {
    return new MongoClient(options.url, {
      serverSelectionTimeoutMS: timeout,
      connectTimeoutMS: timeout,
      appName: 'engram',
      ...options.clientOptions,
    });
  } catch (error) {
    throw new MemoryError('INVALID_ARGUMENT', `mongodb: invalid url: ${(error as Error).message}`, {
      adapter: ADAPTER,
      cause: redactDriverError(error),
    });
  }
}

function lockLease(ms: number | undefined): number {
  if (ms === undefined) return DEFAULT_LEASE_MS;
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `mongodb: lockLeaseMs must be a positive integer of milliseconds, got ${String(ms)}`,
      { adapter: ADAPTER },
    );
  }
  return ms;
}

/**
 * engram storage on MongoDB (official `mongodb` driver). Working-memory updates are
 * compare-and-set writes on a per-document `version` token, retried with a bound, so they are
 * atomic across processes and machines; metadata merges are single `$set` updates of one
 * `metadata.<key>` path per key. Dates are BSON dates; content and metadata are documents.
 *
 * Connects lazily: the first call (usually `init()`) connects and applies the migrations.
 */
export class MongoDBStore extends StoreBase {
  readonly name = ADAPTER;
  /**
   * Working-memory updates are compare-and-set on a version token. `transactionalBatches` is
   * learnt when the store connects: `true` where `saveMessages` and `deleteThread` run in a
   * transaction (a replica set or sharded cluster, `transactions: 'auto'`), `false` on a
   * standalone server, FerretDB or with `transactions: 'never'` — and `false` until connected
   * (call `init()` first to read it).
   */
  override get capabilities(): core.StoreCapabilities {
    return {
      atomicWorkingMemory: true,
      transactionalBatches: this.transactions,
      processLocal: false,
    };
  }
  /** Whether the open connection runs batches in transactions; `false` until connected. */
  private transactions = false;
  /** The driver client: the one passed in, or the one created from `url`. */
  readonly client: MongoClient;
  /** The database holding the collections. */
  readonly dbName: string;
  /** The prefix of every collection name. */
  readonly collectionPrefix: string;

  private readonly ownsClient: boolean;
  private readonly retry: core.RetryOptions;
  private readonly lockLeaseMs: number;
  /** Compare-and-set on the document's `version` token (see `working-memory.ts`). */
  protected readonly workingMemoryStrategy: core.WorkingMemoryStrategy;
  private ready: Promise<Connection> | undefined;
  private closed = false;
  /** Semantic recall vectors: scope filtered on the server, exact ranking in the client. */
  readonly vectors = new MongoDBVectors(
    () => this.connect(),
    (operation, fn) => this.run(operation, fn),
  );

  constructor(private readonly options: MongoDBStoreOptions) {
    super();
    const prefix = options.collectionPrefix ?? DEFAULT_PREFIX;
    checkNames(options.dbName, prefix);
    this.dbName = options.dbName;
    this.collectionPrefix = prefix;
    this.retry = { adapter: ADAPTER, ...options.retry };
    this.lockLeaseMs = lockLease(options.lockLeaseMs);
    this.workingMemoryStrategy = workingMemoryStrategy(() => this.connect(), this.retry);
    this.client = createClient(options);
    this.ownsClient = this.client !== options.client;
  }

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return toMemoryError(error, operation);
  }

  /** Connected and migrated once; a failed attempt is retried by the next call. */
  private connect(): Promise<Connection> {
    if (this.closed) {
      return Promise.reject(
        new MemoryError('CONNECTION', 'mongodb: the store is closed', { adapter: ADAPTER }),
      );
    }
    this.ready ??= openConnection(this.client, {
      dbName: this.dbName,
      collectionPrefix: this.collectionPrefix,
      transactions: this.options.transactions ?? 'auto',
      writeLocks: this.options.writeLocks ?? 'auto',
      lockLeaseMs: this.lockLeaseMs,
    })
      .then((connection) => {
        this.transactions = connection.transactions;
        return connection;
      })
      .catch((error: unknown) => {
        this.ready = undefined;
        throw toMemoryError(error, 'init');
      });
    return this.ready;
  }

  protected async doInit(): Promise<void> {
    await this.connect();
  }

  protected async doClose(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ready = undefined;
    if (this.ownsClient) await this.client.close();
  }

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<core.Thread | null> {
    storableIds({ threadId, resourceId });
    const { collections: c } = await this.connect();
    const doc = await c.threads.findOne({ _id: threadId, ...scope(resourceId) });
    return doc ? toThread(doc) : null;
  }

  protected async doCreateThread(thread: core.Thread): Promise<core.Thread> {
    const { collections: c, codec } = await this.connect();
    // An insert: the unique `_id` makes it atomic, on MongoDB and on FerretDB alike.
    try {
      await c.threads.insertOne(toThreadDocument(thread, codec));
    } catch (error) {
      if (isDuplicateKey(error)) throw threadExists(ADAPTER, thread.id);
      throw error;
    }
    return structuredClone(thread);
  }

  protected async doSaveThread(thread: core.Thread): Promise<core.Thread> {
    const { collections: c, codec, locks } = await this.connect();
    // A whole replacement with a fresh version: no CAS writer can miss it, and every server compares
    // a replacement with its keys (a `$set` of the fields can be skipped, see `writes.ts`).
    const { _id, ...fields } = toThreadDocument(thread, codec);
    // Fenced too: a late replacement sent beside another writer's could be interleaved with it.
    const result = await locks.hold([threadLock(_id)], (fence) =>
      upsert(async () => {
        await fence();
        return c.threads.replaceOne({ _id }, fields, { upsert: true });
      }, this.retry),
    );
    assertReplaced(result, 'saveThread');
    return structuredClone(thread);
  }

  protected async doUpdateThread(args: core.NormalizedUpdateThread): Promise<core.Thread> {
    storableIds({ id: args.id });
    const { collections: c, codec, locks, replaceUpdates } = await this.connect();
    const set: Record<string, unknown> = {};
    if (args.title !== undefined) {
      assertStorableString(args.title, 'title');
      set.title = args.title;
    }
    if (args.metadata) {
      Object.assign(set, metadataSetPaths(args.metadata, 'metadata', codec, true));
      // Working memory changes: concurrent compare-and-set writers must see a new version.
      if (args.workingMemoryVersion !== undefined) set.version = args.workingMemoryVersion;
    }
    assertDocumentSize(set, 'the thread update');
    // `updatedAt` is raised, never set back (core's `bumpedUpdatedAt`), to the time under the lock.
    const doc = await locks.hold([threadLock(args.id)], (fence) =>
      updateFields(
        c.threads,
        args.id,
        { set, later: { updatedAt: new Date() } },
        replaceUpdates,
        'updateThread',
        fence,
      ),
    );
    if (!doc) throw threadNotFound(args.id);
    return toThread(doc);
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    storableIds({ threadId });
    // The thread goes first: a failure in between leaves messages no thread lists, which a second
    // deleteThread removes; a concurrent saveMessages notices the missing thread and backs out.
    await atomically(await this.connect(), async (c, session) => {
      await c.threads.deleteOne({ _id: threadId }, { session });
      const ids = await c.messages.distinct('_id', { threadId }, { session });
      await c.messages.deleteMany({ threadId }, { session });
      await messages.deleteVectorsOf(c, ids, session);
    });
  }

  protected async readThreadPage(args: core.NormalizedListThreads): Promise<core.ThreadRead> {
    storableIds({ resourceId: args.resourceId });
    const filter = threadFilter(args);
    const { collections: c } = await this.connect();
    const [total, docs] = await Promise.all([
      c.threads.countDocuments(filter),
      args.perPage === 0
        ? []
        : c.threads
            .find(filter)
            .sort(threadSort(args))
            .skip(pageOffset(args.page, args.perPage))
            .limit(args.perPage === false ? 0 : args.perPage)
            .toArray(),
    ]);
    return { kind: 'page', threads: docs.map(toThread), total };
  }

  protected async doSaveMessages(batch: core.Message[]): Promise<core.Message[]> {
    return messages.saveMessages(await this.connect(), batch, this.retry);
  }

  protected async readMessagePage(args: core.NormalizedListMessages): Promise<core.MessageRead> {
    return messages.readMessagePage((await this.connect()).collections, args);
  }

  protected async doListMessagesById(ids: string[]): Promise<core.Message[]> {
    return messages.listMessagesById((await this.connect()).collections, ids);
  }

  protected async doUpdateMessages(patches: core.MessagePatch[]): Promise<core.Message[]> {
    return messages.updateMessages(await this.connect(), patches);
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    return messages.deleteMessages(await this.connect(), ids);
  }

  protected async doGetResourceById(resourceId: string): Promise<core.Resource | null> {
    storableIds({ resourceId });
    const { collections: c } = await this.connect();
    const doc = await c.resources.findOne({ _id: resourceId });
    return doc ? toResource(doc) : null;
  }

  protected async doUpdateResource(args: core.UpdateResourceArgs): Promise<core.Resource> {
    storableIds({ resourceId: args.resourceId });
    const { collections: c, codec, locks, replaceUpdates } = await this.connect();
    const now = new Date();
    const metadata = args.metadata ?? {};
    const set: Record<string, unknown> = {
      updatedAt: now,
      ...metadataSetPaths(metadata, 'metadata', codec, false),
    };
    // `$setOnInsert` of `metadata` would conflict with `$set` of `metadata.<key>`.
    const setOnInsert: Record<string, unknown> = { createdAt: now };
    if (Object.keys(metadata).length === 0) setOnInsert.metadata = {};
    if (args.workingMemory === undefined) {
      setOnInsert.version = newVersion();
    } else {
      if (args.workingMemory !== null) assertStorableString(args.workingMemory, 'workingMemory');
      set.workingMemory = args.workingMemory;
      set.version = newVersion();
    }
    assertDocumentSize(set, 'the resource update');
    const doc = await locks.hold([resourceLock(args.resourceId)], (fence) =>
      upsert(
        () =>
          updateFields(
            c.resources,
            args.resourceId,
            { set, setOnInsert, upsert: true },
            replaceUpdates,
            'updateResource',
            fence,
          ),
        this.retry,
      ),
    );
    if (!doc)
      throw new MemoryError('STORAGE', 'mongodb: the upsert returned no document', { adapter: ADAPTER });
    return toResource(doc);
  }
}
