import {
  MemoryError,
  type Message,
  type MessagePage,
  type MessagePatch,
  mergeMessageLists,
  type NormalizedAtomicUpdate,
  type NormalizedInclude,
  type NormalizedListMessages,
  type NormalizedListThreads,
  pageInfo,
  pageOffset,
  RETRY,
  type Resource,
  type RetryOptions,
  retryOptimistic,
  StoreBase,
  sortMessages,
  type Thread,
  type ThreadPage,
  type UpdateResourceArgs,
  type UpdateThreadArgs,
} from '@engram/core';
import { type ClientSession, MongoClient, type MongoClientOptions } from 'mongodb';
import { type Collections, checkNames, collections, type MessageDocument } from './collections.ts';
import { assertStorableString, type Codec } from './encoding.ts';
import { isDuplicateKey, threadNotFound as notFound, toMemoryError } from './errors.ts';
import { WriteLocks } from './locks.ts';
import {
  messagePatchSet,
  metadataSetPaths,
  newVersion,
  toMessage,
  toMessageDocument,
  toResource,
  toThread,
  toThreadDocument,
} from './mapping.ts';
import { migrate } from './migrations.ts';
import { besideFilter, messageFilter, messageSort, scope, threadFilter, threadSort } from './queries.ts';
import { updateResourceWorkingMemory, updateThreadWorkingMemory } from './working-memory.ts';

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
      /** A client you created. The store connects it when needed; `close()` leaves it open. */
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
  /** Bounds of the compare-and-set retries of working-memory updates. Default 50 attempts, 20 ms. */
  retry?: { attempts?: number; maxDelayMs?: number };
};

const ADAPTER = 'mongodb';
const DEFAULT_PREFIX = 'engram_';
const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 5_000;
/** Upserts that lost a duplicate-key race on a new `_id` are retried this many times in all. */
const UPSERT_ATTEMPTS = 5;

interface Connection {
  collections: Collections;
  /** How values are written for this server (see `encoding.ts`). */
  codec: Codec;
  /** True when multi-document transactions are available and enabled. */
  transactions: boolean;
  /** Serialises writers of one thread or resource where the server's updates are not atomic. */
  locks: WriteLocks;
}

/** Throws `INVALID_ARGUMENT` for an id BSON could not store exactly (an unpaired surrogate). */
function storableIds(ids: Record<string, string | undefined>): void {
  for (const [field, id] of Object.entries(ids)) if (id !== undefined) assertStorableString(id, field);
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
  readonly supportsAtomicWorkingMemoryMerge = true;
  /** The driver client: the one passed in, or the one created from `url`. */
  readonly client: MongoClient;
  /** The database holding the collections. */
  readonly dbName: string;
  /** The prefix of every collection name. */
  readonly collectionPrefix: string;

  private readonly ownsClient: boolean;
  private readonly retry: RetryOptions;
  private ready: Promise<Connection> | undefined;
  private closed = false;

  constructor(private readonly options: MongoDBStoreOptions) {
    super();
    const prefix = options.collectionPrefix ?? DEFAULT_PREFIX;
    checkNames(options.dbName, prefix);
    this.dbName = options.dbName;
    this.collectionPrefix = prefix;
    this.retry = { adapter: ADAPTER, ...options.retry };
    if (options.client instanceof MongoClient) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (typeof options.url === 'string' && options.url !== '') {
      const timeout = options.serverSelectionTimeoutMS ?? DEFAULT_SERVER_SELECTION_TIMEOUT_MS;
      try {
        this.client = new MongoClient(options.url, {
          serverSelectionTimeoutMS: timeout,
          connectTimeoutMS: timeout,
          appName: 'engram',
          ...options.clientOptions,
        });
      } catch (error) {
        throw new MemoryError('INVALID_ARGUMENT', `mongodb: invalid url: ${(error as Error).message}`, {
          adapter: ADAPTER,
          cause: error,
        });
      }
      this.ownsClient = true;
    } else {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        'mongodb: pass either { url, dbName } or { client, dbName }',
        {
          adapter: ADAPTER,
        },
      );
    }
  }

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return toMemoryError(error, operation);
  }

  /** The collections, connected and migrated once; a failed attempt is retried by the next call. */
  private connect(): Promise<Connection> {
    if (this.closed) {
      return Promise.reject(
        new MemoryError('CONNECTION', 'mongodb: the store is closed', { adapter: ADAPTER }),
      );
    }
    this.ready ??= this.open().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async open(): Promise<Connection> {
    try {
      await this.client.connect();
      const db = this.client.db(this.dbName);
      const hello = await db.admin().command({ hello: 1 });
      const replicated = typeof hello.setName === 'string' || hello.msg === 'isdbgrid';
      const sessions = hello.logicalSessionTimeoutMinutes != null;
      // FerretDB 1.x (which reports `ferretdbVersion`) cannot store arrays inside arrays, and
      // its updates are a read and a whole-document write with nothing atomic in between.
      const build = await db.admin().command({ buildInfo: 1 });
      const ferretdb1 = typeof build.ferretdbVersion === 'string' && /^v?1\./.test(build.ferretdbVersion);
      const codec: Codec = { wrapNestedArrays: ferretdb1 };
      const mode = this.options.writeLocks ?? 'auto';
      const store = collections(db, this.collectionPrefix);
      await migrate(store);
      return {
        collections: store,
        codec,
        transactions: this.options.transactions !== 'never' && replicated && sessions,
        locks: new WriteLocks(mode === 'always' || (mode === 'auto' && ferretdb1) ? store.locks : undefined),
      };
    } catch (error) {
      throw toMemoryError(error, 'init');
    }
  }

  private async collections(): Promise<Collections> {
    return (await this.connect()).collections;
  }

  /** Runs `fn` in a transaction when the server has them, else directly (see the README). */
  private async atomically<T>(
    connection: Connection,
    fn: (c: Collections, session?: ClientSession) => Promise<T>,
  ): Promise<T> {
    const { collections, transactions } = connection;
    if (!transactions) return fn(collections);
    const session = this.client.startSession();
    try {
      return await session.withTransaction(() => fn(collections, session));
    } finally {
      await session.endSession();
    }
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

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<Thread | null> {
    storableIds({ threadId, resourceId });
    const c = await this.collections();
    const doc = await c.threads.findOne({ _id: threadId, ...scope(resourceId) });
    return doc ? toThread(doc) : null;
  }

  protected async doSaveThread(thread: Thread): Promise<Thread> {
    const { collections: c, codec, locks } = await this.connect();
    const { _id, ...fields } = toThreadDocument(thread, codec);
    await locks.hold([threadLock(_id)], () =>
      upsert(() => c.threads.updateOne({ _id }, { $set: fields }, { upsert: true }), this.retry),
    );
    return structuredClone(thread);
  }

  protected async doUpdateThread(args: UpdateThreadArgs): Promise<Thread> {
    storableIds({ id: args.id });
    const { collections: c, codec, locks } = await this.connect();
    const set: Record<string, unknown> = { updatedAt: new Date() };
    if (args.title !== undefined) {
      assertStorableString(args.title, 'title');
      set.title = args.title;
    }
    if (args.metadata) {
      Object.assign(set, metadataSetPaths(args.metadata, 'metadata', codec, true));
      // Working memory changes: concurrent compare-and-set writers must see a new version.
      if (Object.hasOwn(args.metadata, 'workingMemory')) set.version = newVersion();
    }
    const doc = await locks.hold([threadLock(args.id)], () =>
      c.threads.findOneAndUpdate({ _id: args.id }, { $set: set }, { returnDocument: 'after' }),
    );
    if (!doc) throw notFound(args.id);
    return toThread(doc);
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    storableIds({ threadId });
    // The thread goes first: a failure in between leaves messages no thread lists, which a second
    // deleteThread removes; concurrent saveMessages notice the missing thread and back out.
    await this.atomically(await this.connect(), async (c, session) => {
      await c.threads.deleteOne({ _id: threadId }, { session });
      await c.messages.deleteMany({ threadId }, { session });
    });
  }

  protected async doListThreads(args: NormalizedListThreads): Promise<ThreadPage> {
    storableIds({ resourceId: args.resourceId });
    const filter = threadFilter(args);
    const c = await this.collections();
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
    return { threads: docs.map(toThread), ...pageInfo(total, args.page, args.perPage) };
  }

  protected async doSaveMessages(messages: Message[]): Promise<Message[]> {
    // Everything is encoded and checked before the first query.
    const connection = await this.connect();
    const docs = messages.map((message, i) => toMessageDocument(message, `messages[${i}]`, connection.codec));
    const ids = docs.map((d) => d._id);
    const threadIds = [...new Set(messages.map((m) => m.threadId))];
    await this.atomically(connection, async (c, session) => {
      const owners = new Map(
        (
          await c.threads
            .find({ _id: { $in: threadIds } }, { projection: { resourceId: 1 }, session })
            .toArray()
        ).map((t) => [t._id, t.resourceId]),
      );
      for (const message of messages) {
        const owner = owners.get(message.threadId);
        if (owner === undefined) throw notFound(message.threadId);
        if (owner !== message.resourceId) {
          throw new MemoryError(
            'INVALID_ARGUMENT',
            `mongodb: message ${JSON.stringify(message.id)} names resource ${JSON.stringify(message.resourceId)}, but its thread belongs to another`,
            { adapter: ADAPTER },
          );
        }
      }
      const previous = await c.messages
        .find({ _id: { $in: ids } }, { projection: { threadId: 1 }, session })
        .toArray();
      const touched = [...new Set([...previous.map((p) => p.threadId), ...threadIds])];
      const write = () =>
        c.messages.bulkWrite(
          docs.map(({ _id, ...replacement }) => ({
            replaceOne: { filter: { _id }, replacement, upsert: true },
          })),
          { ordered: true, session },
        );
      if (session) await write();
      else await upsert(write, this.retry);
      const bumped = await connection.locks.hold(touched.map(threadLock), () =>
        c.threads.updateMany({ _id: { $in: touched } }, { $set: { updatedAt: new Date() } }, { session }),
      );
      if (bumped.matchedCount < touched.length) {
        await this.backOutDeletedThreads(c, threadIds, ids, session);
      }
    });
    return structuredClone(messages);
  }

  /**
   * After a batch is written, a thread deleted meanwhile (a concurrent `deleteThread` without a
   * transaction) would leave the batch's messages orphaned: remove them and report `NOT_FOUND`.
   */
  private async backOutDeletedThreads(
    c: Collections,
    threadIds: string[],
    ids: string[],
    session: ClientSession | undefined,
  ): Promise<void> {
    const alive = new Set(
      (await c.threads.find({ _id: { $in: threadIds } }, { projection: { _id: 1 }, session }).toArray()).map(
        (t) => t._id,
      ),
    );
    const gone = threadIds.filter((id) => !alive.has(id));
    if (gone.length === 0) return;
    if (!session) await c.messages.deleteMany({ _id: { $in: ids }, threadId: { $in: gone } });
    throw notFound(gone[0] as string, 'was deleted while its messages were being saved');
  }

  protected async doListMessages(args: NormalizedListMessages): Promise<MessagePage> {
    storableIds({ threadId: args.threadId, resourceId: args.resourceId });
    for (const [i, window] of args.include.entries()) storableIds({ [`include[${i}].id`]: window.id });
    const c = await this.collections();
    const filter = messageFilter(args.threadId, args.resourceId, args.dateRange);
    const [total, page, windows] = await Promise.all([
      c.messages.countDocuments(filter),
      args.perPage === 0
        ? []
        : c.messages
            .find(filter)
            .sort(messageSort(args.direction))
            .skip(pageOffset(args.page, args.perPage))
            .limit(args.perPage === false ? 0 : args.perPage)
            .toArray(),
      this.windows(c, args.include, args.resourceId),
    ]);
    return {
      messages: mergeMessageLists([page.map(toMessage), ...windows], args.direction),
      ...pageInfo(total, args.page, args.perPage),
    };
  }

  /** The include windows: each target with its neighbours in its own thread, two bounded queries each. */
  private async windows(
    c: Collections,
    include: NormalizedInclude[],
    resourceId: string | undefined,
  ): Promise<Message[][]> {
    if (include.length === 0) return [];
    const ids = [...new Set(include.map((w) => w.id))];
    const targets = new Map(
      (await c.messages.find({ _id: { $in: ids }, ...scope(resourceId) }).toArray()).map((d) => [d._id, d]),
    );
    const beside = (target: MessageDocument, side: 'before' | 'after', count: number) =>
      count === 0
        ? Promise.resolve([])
        : c.messages
            .find(besideFilter(target, side, resourceId))
            .sort(messageSort(side === 'before' ? 'DESC' : 'ASC'))
            .limit(count)
            .toArray();
    return Promise.all(
      include.map(async (window) => {
        const target = targets.get(window.id);
        if (!target) return [];
        const [before, after] = await Promise.all([
          beside(target, 'before', window.withPreviousMessages),
          beside(target, 'after', window.withNextMessages),
        ]);
        return [...before, target, ...after].map(toMessage);
      }),
    );
  }

  protected async doListMessagesById(ids: string[]): Promise<Message[]> {
    storableIds(Object.fromEntries(ids.map((id, i) => [`ids[${i}]`, id])));
    const c = await this.collections();
    return sortMessages((await c.messages.find({ _id: { $in: ids } }).toArray()).map(toMessage));
  }

  protected async doUpdateMessages(patches: MessagePatch[]): Promise<Message[]> {
    const connection = await this.connect();
    const { collections: c, codec } = connection;
    const updates = patches.map((patch, i) => {
      storableIds({ [`patches[${i}].id`]: patch.id });
      return { id: patch.id, set: messagePatchSet(patch, `patches[${i}]`, codec) };
    });
    const writes = updates.filter((u) => Object.keys(u.set).length > 0);
    if (writes.length > 0) {
      await c.messages.bulkWrite(
        writes.map((u) => ({ updateOne: { filter: { _id: u.id }, update: { $set: u.set } } })),
        { ordered: true },
      );
    }
    const ids = [...new Set(patches.map((p) => p.id))];
    const docs = await c.messages.find({ _id: { $in: ids } }).toArray();
    await this.touch(
      connection,
      docs.map((d) => d.threadId),
    );
    return sortMessages(docs.map(toMessage));
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    storableIds(Object.fromEntries(ids.map((id, i) => [`ids[${i}]`, id])));
    const connection = await this.connect();
    const c = connection.collections;
    const found = await c.messages.find({ _id: { $in: ids } }, { projection: { threadId: 1 } }).toArray();
    if (found.length === 0) return;
    await c.messages.deleteMany({ _id: { $in: found.map((d) => d._id) } });
    await this.touch(
      connection,
      found.map((d) => d.threadId),
    );
  }

  /** Bumps `updatedAt` of the given threads (absent ones are ignored). */
  private async touch({ collections: c, locks }: Connection, threadIds: string[]): Promise<void> {
    const ids = [...new Set(threadIds)];
    if (ids.length === 0) return;
    await locks.hold(ids.map(threadLock), () =>
      c.threads.updateMany({ _id: { $in: ids } }, { $set: { updatedAt: new Date() } }),
    );
  }

  protected async doGetResourceById(resourceId: string): Promise<Resource | null> {
    storableIds({ resourceId });
    const c = await this.collections();
    const doc = await c.resources.findOne({ _id: resourceId });
    return doc ? toResource(doc) : null;
  }

  protected async doUpdateResource(args: UpdateResourceArgs): Promise<Resource> {
    storableIds({ resourceId: args.resourceId });
    const { collections: c, codec, locks } = await this.connect();
    const now = new Date();
    const set: Record<string, unknown> = { updatedAt: now };
    const setOnInsert: Record<string, unknown> = { createdAt: now };
    const metadata = args.metadata ?? {};
    Object.assign(set, metadataSetPaths(metadata, 'metadata', codec, false));
    if (Object.keys(metadata).length === 0) setOnInsert.metadata = {};
    if (args.workingMemory === undefined) {
      setOnInsert.version = newVersion();
    } else {
      if (args.workingMemory !== null) assertStorableString(args.workingMemory, 'workingMemory');
      set.workingMemory = args.workingMemory;
      set.version = newVersion();
    }
    const doc = await locks.hold([resourceLock(args.resourceId)], () =>
      upsert(
        () =>
          c.resources.findOneAndUpdate(
            { _id: args.resourceId },
            { $set: set, $setOnInsert: setOnInsert },
            { upsert: true, returnDocument: 'after' },
          ),
        this.retry,
      ),
    );
    if (!doc)
      throw new MemoryError('STORAGE', 'mongodb: the upsert returned no document', { adapter: ADAPTER });
    return toResource(doc);
  }

  protected async doUpdateWorkingMemoryAtomically(args: NormalizedAtomicUpdate): Promise<string | null> {
    const { collections: c, locks } = await this.connect();
    if (args.scope === 'resource') {
      const { resourceId, update } = args;
      storableIds({ resourceId });
      return locks.hold([resourceLock(resourceId)], () =>
        updateResourceWorkingMemory(c, resourceId, update, this.retry),
      );
    }
    const { threadId, update } = args;
    storableIds({ threadId });
    return locks.hold([threadLock(threadId)], () =>
      updateThreadWorkingMemory(c, threadId, update, this.retry),
    );
  }
}

/** The write-lock key of a thread (see `locks.ts`). */
function threadLock(threadId: string): string {
  return `threads:${threadId}`;
}

/** The write-lock key of a resource. */
function resourceLock(resourceId: string): string {
  return `resources:${resourceId}`;
}

/**
 * Runs an upsert, retrying when it lost a race to insert the same new `_id` (MongoDB retries
 * such upserts itself since 4.2; other servers report the duplicate key).
 */
async function upsert<T>(write: () => Promise<T>, retry: RetryOptions): Promise<T> {
  return retryOptimistic(
    async () => {
      try {
        return await write();
      } catch (error) {
        if (isDuplicateKey(error)) return RETRY;
        throw error;
      }
    },
    { ...retry, attempts: UPSERT_ATTEMPTS },
  );
}
