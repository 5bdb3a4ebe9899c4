import * as core from '@engram/core/driver';
import { ORACLE_ERRORS } from './errors.ts';
import { indexMessages, oracleKeywords } from './keywords.ts';
import * as rows from './mapping.ts';
import { migrate, serverMajorVersion } from './migrations.ts';
import { oracleObservations } from './observations.ts';
import { loadOracledb, type OracleConnection, type OraclePool } from './oracledb.ts';
import { executeOptions, Session } from './session.ts';
import { oracleSettings } from './settings.ts';
import * as sql from './sql.ts';
import type { OracleStoreOptions } from './store.ts';
import { oracleTurns } from './turns.ts';
import { oracleVectors } from './vectors.ts';

/** Attributes of a pool the driver creates, before the caller's `poolAttributes`. */
const DEFAULT_POOL = {
  poolMin: 0,
  poolMax: 8,
  poolIncrement: 1,
  connectTimeout: 10,
  transportConnectTimeout: 10,
  queueTimeout: 30_000,
  /** Runs `SESSION_SETUP` once per new session. */
  sessionCallback: (connection: OracleConnection, _tag: string, done: (error?: unknown) => void) => {
    connection.execute(sql.SESSION_SETUP.sql, {}, {}).then(() => done(), done);
  },
};

/** Targets per statement in a window query (keeps bind counts small). */
const WINDOWS_PER_STATEMENT = 50;

/**
 * The engram driver for Oracle Database (19c, 21c, 23ai/Free) through `oracledb` in thin mode.
 * A unit of work is a transaction on one pooled connection (the `Session` is the `tx`); writes
 * that compute from what is stored read the row with `SELECT … FOR UPDATE` first.
 */
export class OracleDriver implements core.Driver<Session> {
  readonly name = 'oracle';
  /** Working-memory updates hold the row lock; batches and deletes are transactions. */
  readonly capabilities = core.SERVER_CAPABILITIES;
  readonly errors = ORACLE_ERRORS;
  /** What a `TIMESTAMP(3)` column holds: years 1–9999. */
  readonly dates = { min: new Date(rows.MIN_TIMESTAMP), max: new Date(rows.MAX_TIMESTAMP) };
  /** The statements' view of the schema, set by `open()`. */
  dialect!: sql.Dialect;

  private readonly oracledb = loadOracledb();
  private readonly executeOptions = executeOptions(this.oracledb);
  private readonly names: sql.TableNames;
  private pool: OraclePool | undefined;
  private readonly vectorDriver = oracleVectors(this);
  /** Observation logs for observational memory (every server version). */
  readonly observations = oracleObservations(this);
  /** Store-level settings (the recorded memory configuration), one `MERGE` a put. */
  readonly settings = oracleSettings(this);
  /** Turn records (every server version). */
  readonly turns = oracleTurns(this);
  /** Keyword and hybrid recall: postings and BM25 in SQL (every server version; `keywords.ts`). */
  readonly keywords: core.KeywordDriver<Session>;
  private readonly onBackfill: core.BackfillListener;

  /** `options` as `OracleStore` checked them. */
  constructor(private readonly options: OracleStoreOptions) {
    this.names = sql.tableNames(options.tablePrefix ?? 'engram_');
    this.keywords = oracleKeywords(this, core.createKeywordAnalyzer(options.keywords));
    this.onBackfill = core.backfillListener(options.onBackfillProgress, 'oracle');
    if ('pool' in options) this.pool = options.pool;
  }

  /** Vector search (23ai): declared until `open()` found a server without the `VECTOR` type. */
  get vectors(): core.VectorDriver<Session> | undefined {
    return this.dialect && !this.dialect.vectors ? undefined : this.vectorDriver;
  }

  /** Creates the pool (unless one was injected) and migrates the schema. */
  async open(): Promise<void> {
    const options = this.options;
    if (!this.pool && !('pool' in options)) {
      const { user, password, connectString, poolAttributes: own } = options;
      this.pool = await this.oracledb.createPool({ ...DEFAULT_POOL, ...own, user, password, connectString });
    }
    this.dialect = await this.read(async (session) => {
      const major = serverMajorVersion(session);
      const requested = options.jsonType ?? 'auto';
      const preferred = requested === 'auto' ? (major >= 21 ? 'json' : 'clob') : requested;
      return {
        names: this.names,
        json: await migrate(session, this.names, preferred, this.oracledb.DB_TYPE_CLOB, {
          analyzer: this.keywords.analyzer,
          progress: this.onBackfill,
        }),
        clobType: this.oracledb.DB_TYPE_CLOB,
        vectorType: this.oracledb.DB_TYPE_VECTOR,
        vectors: major >= 23,
      };
    });
  }

  /** Closes the pool the driver created; an injected one stays open. */
  async close(): Promise<void> {
    if (!this.pool || 'pool' in this.options) return;
    await this.pool.close(5).catch((error: unknown) => {
      if (core.driverCode(error) !== 'NJS-065') throw error; // already closed
    });
  }

  /** Runs `fn` on one pooled connection, without committing. */
  async read<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    const connection = await (this.pool as OraclePool).getConnection();
    const session = new Session(connection, this.executeOptions);
    try {
      return await fn(session);
    } finally {
      // A dropped connection cannot be released; the pool discards it.
      await connection.close().catch(() => undefined);
    }
  }

  /** Runs `fn` in one transaction: committed when it returns, rolled back when it throws. */
  write<T>(fn: (session: Session) => Promise<T>): Promise<T> {
    return this.read(async (session) => {
      try {
        const result = await fn(session);
        await session.connection.commit();
        return result;
      } catch (error) {
        await session.connection.rollback().catch(() => undefined); // the first error is the one to report
        throw error;
      }
    });
  }

  readonly threads: core.ThreadDriver<Session> = {
    get: async (id) => {
      const [row] = await this.read((s) => s.rows<rows.ThreadRow>(sql.selectThread(this.dialect, id)));
      return row ? rows.rowToThread(row) : null;
    },
    insert: (thread) =>
      this.write((s) => s.run(sql.insertThread(this.dialect, thread))).then(
        () => true,
        (error: unknown) => {
          if (core.driverCode(error) === 'ORA-00001') return false;
          throw error;
        },
      ),
    upsert: async (thread) => {
      await this.write((s) => s.upsert(sql.upsertThread(this.dialect, thread)));
    },
    update: (change) => this.write((s) => this.updateThread(s, change.id, () => change)),
    /** One statement per stamp: the time of the write, or the newest `createdAt` when later. */
    touch: async (s, bumps) => {
      const now = new Date();
      const byStamp = new Map<number, string[]>();
      for (const [id, newest] of bumps) {
        const stamp = core.bumpedUpdatedAt(now, now, newest ? [newest] : []).getTime();
        byStamp.set(stamp, [...(byStamp.get(stamp) ?? []), id]);
      }
      for (const [stamp, ids] of byStamp) {
        const at = new Date(stamp);
        for (const chunk of sql.chunks(ids)) await s.run(sql.touchThreads(this.dialect, chunk, at));
      }
    },
    delete: async (s, id) => {
      await s.run(sql.deleteThread(this.dialect, id));
    },
    readPage: (query) =>
      this.read(async (s) => {
        const list = async (paging: sql.Paging) =>
          (await s.rows<rows.ThreadRow>(sql.listThreads(this.dialect, query, paging))).map(rows.rowToThread);
        if (query.metadata && Object.keys(query.metadata).length > 0) {
          // Metadata keys are arbitrary strings, and SQL/JSON paths cannot be bound: core matches them.
          return { kind: 'candidates', threads: await list(undefined) };
        }
        const total = await s.count(sql.countThreads(this.dialect, query));
        const threads = query.perPage === 0 ? [] : await list(core.pageLimit(query.page, query.perPage));
        return { kind: 'page', threads, total };
      }),
  };

  readonly messages: core.MessageDriver<Session> = {
    readPage: (query) =>
      this.read(async (s) => {
        const total = await s.count(sql.countMessages(this.dialect, query));
        const paging = core.pageLimit(query.page, query.perPage);
        const statement = sql.listMessages(this.dialect, query, query.direction, paging);
        const page =
          query.perPage === 0 ? [] : (await s.rows<rows.MessageRow>(statement)).map(rows.rowToMessage);
        return { page, total, windows: await this.windows(s, query) };
      }),
    byIds: async (ids, tx) => {
      const read = (s: Session) =>
        s.rowsByChunk<rows.MessageRow>(ids, (chunk) => sql.selectMessagesByIds(this.dialect, chunk));
      return (await (tx ? read(tx) : this.read(read))).map(rows.rowToMessage);
    },
    /** Locks the threads, then the messages, each in id order (one chunk after another). */
    places: async (s, threadIds, messageIds) => {
      type Row = Record<'ID' | 'THREAD_ID' | 'RESOURCE_ID', string>;
      const lock = (table: 'threads' | 'messages', ids: string[]) =>
        s.rowsByChunk<Row>([...ids].sort(core.compareIds), (part) =>
          sql.selectForUpdate(this.dialect, table, part),
        );
      const threads = await lock('threads', threadIds);
      const messages = await lock('messages', messageIds);
      return {
        threads: new Map(threads.map((r) => [r.ID, r.RESOURCE_ID])),
        messages: new Map(messages.map((r) => [r.ID, { threadId: r.THREAD_ID, resourceId: r.RESOURCE_ID }])),
      };
    },
    /** A message of another resource inserted after `places` is left alone by the `MERGE`: refused. */
    put: async (s, messages) => {
      for (const message of messages) {
        if ((await s.upsert(sql.upsertMessage(this.dialect, message))) === 0) {
          throw core.messageOfAnotherResource(this.name, message.id);
        }
      }
      await indexMessages(s, this.dialect, messages, this.keywords.analyzer);
    },
    remove: async (s, ids) => {
      for (const chunk of sql.chunks(ids)) await s.run(sql.deleteMessagesByIds(this.dialect, chunk));
    },
  };

  readonly resources: core.ResourceDriver<Session> = {
    delete: async (s, id) => {
      await s.run(sql.deleteResource(this.dialect, id));
    },
    get: async (id) => {
      const [row] = await this.read((s) => s.rows<rows.ResourceRow>(sql.selectResource(this.dialect, id)));
      return row ? rows.rowToResource(row) : null;
    },
    list: async (after, limit) => {
      const statement = sql.selectResourceIds(this.dialect, after, limit);
      return (await this.read((s) => s.rows<{ ID: string }>(statement))).map((row) => row.ID);
    },
    update: (change) => this.write((s) => this.updateResource(s, change.id, change.now, () => change)),
  };

  /** Read and write under the row lock (`SELECT … FOR UPDATE`), in one transaction. */
  readonly workingMemory: core.LockedWorkingMemory = {
    kind: 'locked',
    update: (cell, apply) =>
      this.write(async (s) => {
        if (cell.scope === 'resource') {
          await this.updateResource(s, cell.resourceId, new Date(), (stored) => ({
            workingMemory: apply(stored.workingMemory),
          }));
          return true;
        }
        const updated = await this.updateThread(s, cell.threadId, ({ metadata }) => {
          const current = metadata.workingMemory;
          return { metadata: { workingMemory: apply(typeof current === 'string' ? current : null) } };
        });
        return updated !== null;
      }),
  };

  /**
   * Reads and row-locks a thread and writes it back with `change(stored)` applied (the title
   * replaced, the metadata shallow-merged) and `updatedAt` raised; `null` when it does not exist.
   */
  private async updateThread(
    s: Session,
    id: string,
    change: (stored: core.Thread) => { title?: string; metadata?: core.JsonObject },
  ): Promise<core.Thread | null> {
    const [row] = await s.rows<rows.ThreadRow>(sql.selectThread(this.dialect, id, true));
    if (!row) return null;
    const stored = rows.rowToThread(row);
    const { title, metadata } = change(stored);
    const next: core.Thread = {
      ...stored,
      title: title ?? stored.title,
      metadata: metadata ? core.shallowMerge(stored.metadata, metadata) : stored.metadata,
      updatedAt: core.bumpedUpdatedAt(stored.updatedAt, new Date()),
    };
    await s.run(sql.upsertThread(this.dialect, next));
    return next;
  }

  /**
   * Reads and row-locks a resource and writes it back with `change(stored)` applied, creating an
   * empty one first when it is missing. A concurrent creator makes that insert fail with
   * ORA-00001 once it commits: the row exists then, and the locked read waits for and sees it.
   */
  private async updateResource(
    s: Session,
    id: string,
    now: Date,
    change: (stored: core.Resource) => { workingMemory?: string | null; metadata?: core.JsonObject },
  ): Promise<core.Resource> {
    await s.run(sql.insertMissingResource(this.dialect, id, now)).catch((error: unknown) => {
      if (core.driverCode(error) !== 'ORA-00001') throw error;
    });
    const [row] = await s.rows<rows.ResourceRow>(sql.selectResource(this.dialect, id, true));
    if (!row) throw new Error(`resource ${JSON.stringify(id)} vanished while being locked`);
    const stored = rows.rowToResource(row);
    const { workingMemory, metadata } = change(stored);
    const next: core.Resource = {
      ...stored,
      workingMemory: workingMemory === undefined ? stored.workingMemory : workingMemory,
      metadata: metadata ? core.shallowMerge(stored.metadata, metadata) : stored.metadata,
      updatedAt: now,
    };
    await s.run(sql.updateResourceRow(this.dialect, next));
    return next;
  }

  /** The include windows: each target (in scope) plus its neighbours in its own thread. */
  private async windows(s: Session, { include, resourceId }: core.MessageQuery): Promise<core.Message[]> {
    const targets = await s.rowsByChunk<rows.MessageRow>([...new Set(include.map((w) => w.id))], (chunk) =>
      sql.selectMessagesByIds(this.dialect, chunk, resourceId),
    );
    const byId = new Map(targets.map((row) => [row.ID, rows.rowToMessage(row)]));
    const requests = include.flatMap((w): sql.WindowRequest[] => {
      const target = byId.get(w.id);
      return target ? [{ target, before: w.withPreviousMessages, after: w.withNextMessages }] : [];
    });
    const found = [...byId.values()];
    for (const chunk of sql.chunks(requests, WINDOWS_PER_STATEMENT)) {
      const statement = sql.selectWindows(this.dialect, chunk, resourceId);
      if (statement) found.push(...(await s.rows<rows.MessageRow>(statement)).map(rows.rowToMessage));
    }
    return found;
  }
}
