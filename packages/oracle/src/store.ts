import * as core from '@engram/core/adapter';
import { loadDriver, type OracleConnection, type OracleDriver, type OraclePool } from './driver.ts';
import { errorCode, toMemoryError } from './errors.ts';
import {
  assertStorableDates,
  type MessageRow,
  type ResourceRow,
  rowToMessage,
  rowToResource,
  rowToThread,
  type ThreadRow,
} from './mapping.ts';
import { migrate, serverMajorVersion } from './migrations.ts';
import { Session } from './session.ts';
import * as sql from './sql.ts';
import { OracleVectors } from './vectors.ts';

/** How JSON metadata is stored: `'json'` (the JSON type, 21c+), `'clob'` (19c), or `'auto'`. */
export type OracleJsonType = 'json' | 'clob' | 'auto';

/** Options shared by both ways of connecting. */
export interface OracleStoreBaseOptions {
  /** Prepended to every table and index name. Default `'engram_'`. */
  tablePrefix?: string;
  /**
   * Storage of the `metadata` columns when `init()` creates the tables. `'auto'` (default) picks
   * the `JSON` type when the server is 21c or later and `CLOB CHECK (metadata IS JSON)` before.
   * Tables that already exist keep the type they were created with.
   */
  jsonType?: OracleJsonType;
}

/** Connect with credentials: the store creates (and on `close()` closes) its own pool. */
export interface OracleCredentialsOptions extends OracleStoreBaseOptions {
  user: string;
  password: string;
  /** Easy Connect (`host:1521/FREEPDB1`), a TNS alias or a full connect descriptor. */
  connectString: string;
  /**
   * Extra `oracledb.createPool()` attributes (`poolMax`, `queueTimeout`, TLS wallet, …). Defaults:
   * `poolMin: 0`, `poolMax: 8`, `connectTimeout: 10` and `transportConnectTimeout: 10` seconds,
   * `queueTimeout: 30000` ms.
   */
  poolAttributes?: Record<string, unknown>;
}

/**
 * Use a pool you created with `oracledb.createPool()`; `close()` leaves it open. Recognised by its
 * `getConnection()` method, so a pool from another copy of `oracledb` is accepted.
 */
export interface OraclePoolOptions extends OracleStoreBaseOptions {
  pool: OraclePool;
}

/** `OracleStore` options: credentials or an injected pool. */
export type OracleStoreOptions = OracleCredentialsOptions | OraclePoolOptions;

const DEFAULT_POOL = {
  poolMin: 0,
  poolMax: 8,
  poolIncrement: 1,
  connectTimeout: 10,
  transportConnectTimeout: 10,
  queueTimeout: 30_000,
  sessionCallback: setUpSession,
};

/** `sessionCallback` of pools the store creates: runs `SESSION_SETUP` once per new session. */
function setUpSession(connection: OracleConnection, _tag: string, done: (error?: unknown) => void): void {
  connection.execute(sql.SESSION_SETUP.sql, {}, {}).then(
    () => done(),
    (error: unknown) => done(error),
  );
}

/** Threads matched per statement in a window query (keeps bind counts small). */
const WINDOWS_PER_STATEMENT = 50;

/**
 * engram storage on Oracle Database (19c, 21c, 23ai/Free) through `oracledb` in thin mode.
 *
 * Every write is one transaction. Metadata merges and working-memory updates read the row with
 * `SELECT … FOR UPDATE`, compute the new value in JS (`shallowMerge` for metadata) and write it
 * back before committing, so no other session can interleave, in any process.
 */
export class OracleStore extends core.StoreBase {
  readonly name = 'oracle';
  /** Working-memory updates hold the row lock (`SELECT … FOR UPDATE`); batches and deletes are transactions. */
  readonly capabilities = core.SERVER_CAPABILITIES;

  private readonly options: OracleStoreOptions;
  private readonly names: sql.TableNames;
  private readonly driver: OracleDriver;
  private pool?: Promise<OraclePool>;
  private ready?: Promise<sql.Dialect>;
  private closed = false;
  private readonly vectorStore: OracleVectors;
  /** Set once connected to a server without the `VECTOR` type (before 23ai). */
  private vectorless = false;

  constructor(options: OracleStoreOptions) {
    super();
    if (typeof options !== 'object' || options === null) {
      throw new core.MemoryError('INVALID_ARGUMENT', 'oracle: OracleStore expects an options object', {
        adapter: 'oracle',
      });
    }
    const jsonType = options.jsonType ?? 'auto';
    if (jsonType !== 'json' && jsonType !== 'clob' && jsonType !== 'auto') {
      throw new core.MemoryError('INVALID_ARGUMENT', `oracle: jsonType must be 'json', 'clob' or 'auto'`, {
        adapter: 'oracle',
      });
    }
    if (
      !('pool' in options) &&
      !(options.user && options.connectString && typeof options.password === 'string')
    ) {
      throw new core.MemoryError(
        'INVALID_ARGUMENT',
        'oracle: OracleStore needs { user, password, connectString } or { pool }',
        { adapter: 'oracle' },
      );
    }
    if ('pool' in options) {
      // By shape, not instanceof: a pool from another copy of `oracledb` works the same.
      core.checkClientShape<OraclePool>(options.pool, {
        adapter: 'oracle',
        option: 'pool',
        expected: 'an oracledb pool (oracledb.createPool())',
        members: { getConnection: 'function' },
      });
    }
    this.options = options;
    this.names = sql.tableNames(options.tablePrefix ?? 'engram_');
    this.driver = loadDriver();
    this.vectorStore = new OracleVectors(
      {
        dialect: () => this.dialect(),
        read: (fn) => this.withSession(fn),
        write: (fn) => this.transaction(fn),
      },
      (operation, fn) => this.run(operation, fn),
    );
  }

  /**
   * Exact vector search for semantic recall on Oracle 23ai (see `OracleVectors`). Declared until
   * the store has connected to an older server (no `VECTOR` type), then `undefined`, so suites
   * and callers see the capability the server actually has; calls made before that fail with
   * `UNSUPPORTED`.
   */
  get vectors(): OracleVectors | undefined {
    return this.vectorless ? undefined : this.vectorStore;
  }

  protected toMemoryError(error: unknown, operation: string): core.MemoryError {
    return toMemoryError(error, operation);
  }

  // ------------------------------------------------------------------------------------------
  // Connections

  private getPool(): Promise<OraclePool> {
    if (this.closed) {
      return Promise.reject(
        new core.MemoryError('CONNECTION', 'oracle: the store is closed', { adapter: 'oracle' }),
      );
    }
    if (!this.pool) {
      const options = this.options;
      if ('pool' in options) {
        this.pool = Promise.resolve(options.pool);
      } else {
        const created = this.driver.createPool({
          ...DEFAULT_POOL,
          ...options.poolAttributes,
          user: options.user,
          password: options.password,
          connectString: options.connectString,
        });
        this.pool = created;
        created.catch(() => {
          if (this.pool === created) this.pool = undefined;
        });
      }
    }
    return this.pool;
  }

  private async withSession<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    const pool = await this.getPool();
    const session = new Session(await pool.getConnection(), this.driver);
    try {
      return await fn(session);
    } finally {
      await session.release();
    }
  }

  /** Runs `fn` in one transaction: committed when it returns, rolled back when it throws. */
  private transaction<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    return this.withSession(async (session) => {
      try {
        const result = await fn(session);
        await session.commit();
        return result;
      } catch (error) {
        await session.rollbackQuietly();
        throw error;
      }
    });
  }

  /** Migrates once per store (memoised); every operation waits for it. */
  private dialect(): Promise<sql.Dialect> {
    if (!this.ready) {
      const ready = this.migrateSchema().catch((error: unknown) => {
        if (this.ready === ready) this.ready = undefined;
        throw toMemoryError(error, 'init');
      });
      this.ready = ready;
    }
    return this.ready;
  }

  private async migrateSchema(): Promise<sql.Dialect> {
    return this.withSession(async (session) => {
      const major = serverMajorVersion(session);
      const requested = this.options.jsonType ?? 'auto';
      const preferred: sql.JsonStorage = requested === 'auto' ? (major >= 21 ? 'json' : 'clob') : requested;
      const json = await migrate(session, this.names, preferred);
      this.vectorless = major < 23;
      return {
        names: this.names,
        json,
        clobType: this.driver.DB_TYPE_CLOB,
        vectorType: this.driver.DB_TYPE_VECTOR,
        vectors: major >= 23,
      };
    });
  }

  protected async doInit(): Promise<void> {
    await this.dialect();
  }

  protected async doClose(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    if (!pool || 'pool' in this.options) return;
    let created: OraclePool;
    try {
      created = await pool;
    } catch {
      return;
    }
    try {
      await created.close(5);
    } catch (error) {
      if (errorCode(error) !== 'NJS-065') throw error; // already closed
    }
  }

  // ------------------------------------------------------------------------------------------
  // Threads

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<core.Thread | null> {
    const d = await this.dialect();
    const rows = await this.withSession((s) => s.rows<ThreadRow>(sql.selectThread(d, threadId, resourceId)));
    return rows[0] ? rowToThread(rows[0]) : null;
  }

  protected override assertStorableDates(dates: readonly (readonly [Date | undefined, string])[]): void {
    assertStorableDates(dates);
  }

  protected async doCreateThread(thread: core.Thread): Promise<core.Thread> {
    const d = await this.dialect();
    try {
      await this.transaction((s) => s.run(sql.insertThread(d, thread)));
    } catch (error) {
      if (errorCode(error) === 'ORA-00001') throw core.threadExists(this.name, thread.id);
      throw error;
    }
    return structuredClone(thread);
  }

  protected async doSaveThread(thread: core.Thread): Promise<core.Thread> {
    const d = await this.dialect();
    const statement = sql.upsertThread(d, thread);
    await this.transaction((s) => s.upsert(statement));
    return structuredClone(thread);
  }

  protected async doUpdateThread(args: core.UpdateThreadArgs): Promise<core.Thread> {
    const d = await this.dialect();
    return this.transaction(async (s) => {
      const stored = await this.lockThread(d, s, args.id);
      const next: core.Thread = {
        ...stored,
        title: args.title ?? stored.title,
        metadata: args.metadata ? core.shallowMerge(stored.metadata, args.metadata) : stored.metadata,
        // Read under the row lock: raised, never set back.
        updatedAt: core.bumpedUpdatedAt(stored.updatedAt, new Date()),
      };
      await s.run(sql.updateThreadRow(d, next));
      return next;
    });
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    const d = await this.dialect();
    await this.transaction(async (s) => {
      await s.run(sql.deleteThreadMessages(d, threadId));
      await s.run(sql.deleteThreadRow(d, threadId));
    });
  }

  protected async readThreadPage(args: core.NormalizedListThreads): Promise<core.ThreadRead> {
    const d = await this.dialect();
    const filter = { resourceId: args.resourceId };
    const order = { orderBy: args.orderBy, direction: args.direction };
    return this.withSession(async (s) => {
      if (args.metadata && Object.keys(args.metadata).length > 0) {
        // Metadata keys are arbitrary strings, and SQL/JSON paths cannot be bound: core matches them.
        const rows = await s.rows<ThreadRow>(sql.listThreads(d, filter, order, { offset: 0 }));
        return { kind: 'candidates', threads: rows.map(rowToThread) };
      }
      const total = await this.count(s, sql.countThreads(d, filter));
      let threads: core.Thread[] = [];
      if (args.perPage !== 0) {
        const paging = core.pageLimit(args.page, args.perPage) ?? { offset: 0 };
        threads = (await s.rows<ThreadRow>(sql.listThreads(d, filter, order, paging))).map(rowToThread);
      }
      return { kind: 'page', threads, total };
    });
  }

  // ------------------------------------------------------------------------------------------
  // Messages

  protected async doSaveMessages(messages: core.Message[]): Promise<core.Message[]> {
    const d = await this.dialect();
    const upserts = messages.map((message) => sql.upsertMessage(d, message));
    const threadIds = [...new Set(messages.map((m) => m.threadId))];
    await this.transaction(async (s) => {
      const owners = new Map<string, string>();
      for (const chunk of sql.chunks(threadIds)) {
        const rows = await s.rows<{ ID: string; RESOURCE_ID: string }>(sql.selectThreadOwners(d, chunk));
        for (const row of rows) owners.set(row.ID, row.RESOURCE_ID);
      }
      for (const message of messages) {
        const owner = owners.get(message.threadId);
        if (owner === undefined) {
          throw new core.MemoryError(
            'NOT_FOUND',
            `thread ${JSON.stringify(message.threadId)} does not exist`,
            {
              adapter: this.name,
            },
          );
        }
        if (owner !== message.resourceId) {
          throw core.threadOfAnotherResource(this.name, message.id, message.resourceId);
        }
      }
      const touched = new Set(threadIds);
      const locked = await this.lockMessages(
        d,
        s,
        messages.map((m) => m.id),
      );
      const messageOwners = new Map(locked.map((row) => [row.ID, row.RESOURCE_ID]));
      for (const message of messages) {
        const owner = messageOwners.get(message.id);
        if (owner !== undefined && owner !== message.resourceId) {
          throw core.messageOfAnotherResource(this.name, message.id);
        }
      }
      for (const previous of locked) touched.add(previous.THREAD_ID);
      // A message of another resource inserted after the lock is left alone by the MERGE (0
      // rows): refused the same way, and the transaction rolls back the whole batch.
      for (const [i, upsert] of upserts.entries()) {
        if ((await s.upsert(upsert)) === 0) throw core.messageOfAnotherResource(this.name, messages[i]!.id);
      }
      await this.touch(d, s, touched, new Date(), core.newestByThread(messages));
    });
    return messages.map((message) => structuredClone(message));
  }

  protected async readMessagePage(args: core.NormalizedListMessages): Promise<core.MessageRead> {
    const d = await this.dialect();
    const filter: sql.MessageFilter = {
      threadId: args.threadId,
      resourceId: args.resourceId,
      dateRange: args.dateRange,
    };
    return this.withSession(async (s) => {
      const total = await this.count(s, sql.countMessages(d, filter));
      let page: core.Message[] = [];
      if (args.perPage !== 0) {
        const paging = core.pageLimit(args.page, args.perPage) ?? { offset: 0 };
        page = (await s.rows<MessageRow>(sql.listMessages(d, filter, args.direction, paging))).map(
          rowToMessage,
        );
      }
      return { page, total, windows: await this.windows(d, s, args) };
    });
  }

  /** The include windows: each target (in scope) plus its neighbours in its own thread. */
  private async windows(
    d: sql.Dialect,
    s: Session,
    args: core.NormalizedListMessages,
  ): Promise<core.Message[]> {
    if (args.include.length === 0) return [];
    const targets = new Map<string, core.Message>();
    for (const chunk of sql.chunks([...new Set(args.include.map((w) => w.id))])) {
      const rows = await s.rows<MessageRow>(sql.selectMessagesByIds(d, chunk, args.resourceId));
      for (const row of rows) targets.set(row.ID, rowToMessage(row));
    }
    const requests: sql.WindowRequest[] = [];
    for (const window of args.include) {
      const target = targets.get(window.id);
      if (target)
        requests.push({ target, before: window.withPreviousMessages, after: window.withNextMessages });
    }
    const found: core.Message[] = [...targets.values()];
    for (const chunk of sql.chunks(requests, WINDOWS_PER_STATEMENT)) {
      const statement = sql.selectWindows(d, chunk, args.resourceId);
      if (statement) found.push(...(await s.rows<MessageRow>(statement)).map(rowToMessage));
    }
    return found;
  }

  protected async doListMessagesById(ids: string[]): Promise<core.Message[]> {
    const d = await this.dialect();
    return this.withSession((s) => this.readMessages(d, s, ids));
  }

  protected async doUpdateMessages(patches: core.MessagePatch[]): Promise<core.Message[]> {
    const d = await this.dialect();
    const updates = patches.map((patch) => ({ id: patch.id, statement: sql.updateMessageRow(d, patch) }));
    const ids = [...new Set(patches.map((p) => p.id))];
    return this.transaction(async (s) => {
      const threadOf = new Map((await this.lockMessages(d, s, ids)).map((row) => [row.ID, row.THREAD_ID]));
      const touched = new Set<string>();
      for (const update of updates) {
        const threadId = threadOf.get(update.id);
        if (threadId === undefined) continue;
        if (update.statement) await s.run(update.statement);
        touched.add(threadId);
      }
      const updated = await this.readMessages(d, s, ids);
      await this.touch(d, s, touched, new Date(), core.newestByThread(updated));
      const byId = new Map(updated.map((m) => [m.id, m]));
      return core.sortMessages(patches.flatMap((p) => byId.get(p.id) ?? []));
    });
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    const d = await this.dialect();
    await this.transaction(async (s) => {
      const touched = new Set((await this.lockMessages(d, s, ids)).map((row) => row.THREAD_ID));
      if (touched.size === 0) return;
      for (const chunk of sql.chunks(ids)) await s.run(sql.deleteMessagesByIds(d, chunk));
      await this.touch(d, s, touched, new Date());
    });
  }

  // ------------------------------------------------------------------------------------------
  // Resources and working memory

  protected async doGetResourceById(resourceId: string): Promise<core.Resource | null> {
    const d = await this.dialect();
    const rows = await this.withSession((s) => s.rows<ResourceRow>(sql.selectResource(d, resourceId)));
    return rows[0] ? rowToResource(rows[0]) : null;
  }

  protected async doUpdateResource(args: core.UpdateResourceArgs): Promise<core.Resource> {
    const d = await this.dialect();
    return this.transaction(async (s) => {
      const now = new Date();
      const stored = await this.lockResource(d, s, args.resourceId, now);
      const next: core.Resource = {
        ...stored,
        workingMemory: args.workingMemory === undefined ? stored.workingMemory : args.workingMemory,
        metadata: args.metadata ? core.shallowMerge(stored.metadata, args.metadata) : stored.metadata,
        updatedAt: now,
      };
      await s.run(sql.updateResourceRow(d, next));
      return next;
    });
  }

  /** Read and write under a row lock (`SELECT … FOR UPDATE`) in one transaction. */
  protected readonly workingMemoryStrategy: core.LockedWorkingMemory = {
    kind: 'locked',
    update: async (cell, apply) => {
      const d = await this.dialect();
      return this.transaction(async (s) => {
        const now = new Date();
        if (cell.scope === 'resource') {
          const stored = await this.lockResource(d, s, cell.resourceId, now);
          const next = apply(stored.workingMemory);
          await s.run(sql.updateResourceRow(d, { ...stored, workingMemory: next, updatedAt: now }));
          return true;
        }
        const rows = await s.rows<ThreadRow>(sql.selectThreadForUpdate(d, cell.threadId));
        if (!rows[0]) return false;
        const thread = rowToThread(rows[0]);
        const current = thread.metadata.workingMemory;
        const next = apply(typeof current === 'string' ? current : null);
        const metadata: core.JsonObject = core.shallowMerge(thread.metadata, { workingMemory: next });
        const updatedAt = core.bumpedUpdatedAt(thread.updatedAt, now);
        await s.run(sql.updateThreadRow(d, { ...thread, metadata, updatedAt }));
        return true;
      });
    },
  };

  // ------------------------------------------------------------------------------------------
  // Shared steps

  private async count(s: Session, statement: sql.Statement): Promise<number> {
    const rows = await s.rows<{ TOTAL: number }>(statement);
    return Number(rows[0]?.TOTAL ?? 0);
  }

  /** Reads and row-locks a thread, or throws `NOT_FOUND`. */
  private async lockThread(d: sql.Dialect, s: Session, threadId: string): Promise<core.Thread> {
    const rows = await s.rows<ThreadRow>(sql.selectThreadForUpdate(d, threadId));
    if (!rows[0]) throw core.threadNotFound(this.name, threadId);
    return rowToThread(rows[0]);
  }

  /**
   * Reads and row-locks a resource, creating an empty one first when it is missing. A
   * concurrent creator makes the insert fail with ORA-00001 once it commits: the row exists
   * then, and the locked read below waits for and sees it.
   */
  private async lockResource(
    d: sql.Dialect,
    s: Session,
    resourceId: string,
    now: Date,
  ): Promise<core.Resource> {
    try {
      await s.run(sql.insertMissingResource(d, resourceId, now));
    } catch (error) {
      if (errorCode(error) !== 'ORA-00001') throw error;
    }
    const rows = await s.rows<ResourceRow>(sql.selectResourceForUpdate(d, resourceId));
    if (!rows[0]) throw new Error(`resource ${JSON.stringify(resourceId)} vanished while being locked`);
    return rowToResource(rows[0]);
  }

  /** Row-locks the listed messages that exist and returns their thread ids. */
  private async lockMessages(d: sql.Dialect, s: Session, ids: readonly string[]): Promise<LockedMessage[]> {
    const found: LockedMessage[] = [];
    for (const chunk of sql.chunks(ids)) {
      found.push(...(await s.rows<LockedMessage>(sql.selectMessageThreadsForUpdate(d, chunk))));
    }
    return found;
  }

  private async readMessages(d: sql.Dialect, s: Session, ids: readonly string[]): Promise<core.Message[]> {
    const found: core.Message[] = [];
    for (const chunk of sql.chunks(ids)) {
      found.push(...(await s.rows<MessageRow>(sql.selectMessagesByIds(d, chunk))).map(rowToMessage));
    }
    return core.sortMessages(found);
  }

  /**
   * Bumps `updated_at` of these threads (core's `bumpedUpdatedAt`): to `now`, or to the newest
   * `createdAt` written into a thread (`newest`) when that is later; one statement per stamp.
   */
  private async touch(
    d: sql.Dialect,
    s: Session,
    threadIds: Set<string>,
    now: Date,
    newest = new Map<string, Date>(),
  ): Promise<void> {
    const byStamp = new Map<number, string[]>();
    for (const id of threadIds) {
      const stamp = core.bumpedUpdatedAt(now, now, newest.has(id) ? [newest.get(id)!] : []).getTime();
      byStamp.set(stamp, [...(byStamp.get(stamp) ?? []), id]);
    }
    for (const [stamp, ids] of byStamp) {
      for (const chunk of sql.chunks(ids)) await s.run(sql.touchThreads(d, chunk, new Date(stamp)));
    }
  }
}

/** A message row locked by a write: its id, thread and resource. */
interface LockedMessage {
  ID: string;
  THREAD_ID: string;
  RESOURCE_ID: string;
}
