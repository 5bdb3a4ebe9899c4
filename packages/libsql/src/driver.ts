import {
  type CompareAndSetWorkingMemory,
  createKeywordAnalyzer,
  type Driver,
  type JsonObject,
  type MessageDriver,
  pageLimit,
  type ResourceDriver,
  retry,
  shallowMerge,
  type ThreadDriver,
} from '@engram/core/driver';
import { Connection, type Settings } from './connection.ts';
import { type Executor, exec, type Result, type Transaction } from './embedded.ts';
import { ADAPTER, errors, isBusyError } from './errors.ts';
import { indexStatements, LibSQLKeywords } from './keywords.ts';
import { messageRow, threadRow, toMessage, toResource, toThread } from './mapping.ts';
import { BATCH_REFUSED, migrate, SCHEMA_VERSION } from './migrations.ts';
import { LibSQLObservations } from './observations.ts';
import { LibSQLSettings } from './settings.ts';
import * as sql from './sql.ts';
import { LibSQLTurns } from './turns.ts';
import { LibSQLVectors } from './vectors.ts';

/** A stored working memory as core sees it: a string, or `null` (unset, or not a string). */
const memoryOf = (value: unknown) => (typeof value === 'string' ? value : null);

/**
 * The driver core builds `LibSQLStore` from: primitives over one `Connection`, each a statement
 * or a write transaction (`BEGIN IMMEDIATE` on embedded databases: the database's one write lock,
 * so what a write reads cannot change before it commits).
 */
export class LibSQLDriver implements Driver<Transaction> {
  readonly name = ADAPTER;
  readonly errors = errors;
  /** `processLocal` for `:memory:` (one database per store, invisible to other stores). */
  readonly capabilities: { atomicWorkingMemory: true; transactionalBatches: true; processLocal: boolean };
  readonly vectors: LibSQLVectors;
  readonly observations: LibSQLObservations;
  readonly keywords: LibSQLKeywords;
  readonly settings: LibSQLSettings;
  readonly turns: LibSQLTurns;
  private readonly connection: Connection;
  private readonly onBackfill: Settings['onBackfill'];

  constructor(options: Settings) {
    this.connection = new Connection(options);
    this.onBackfill = options.onBackfill;
    const { processLocal } = this.connection;
    this.capabilities = { atomicWorkingMemory: true, transactionalBatches: true, processLocal };
    this.vectors = new LibSQLVectors(this.connection, options.overFetch, options.cacheBytes);
    this.observations = new LibSQLObservations(this.connection);
    this.turns = new LibSQLTurns(this.connection);
    this.keywords = new LibSQLKeywords(this.connection, createKeywordAnalyzer(options.keywords));
    this.settings = new LibSQLSettings(this.connection);
  }

  /**
   * Opens the client and migrates, again on a new client after SQLITE_BUSY: processes opening a
   * new file at once can get it past the busy timeout (one switching the file to WAL while another
   * reads it). Migrations apply once either way.
   */
  open(): Promise<void> {
    return retry(
      () => this.connection.use((db) => migrate(db, SCHEMA_VERSION, this.keywords.analyzer, this.onBackfill)),
      {
        adapter: ADAPTER,
        retryable: isBusyError,
      },
    );
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  write<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.connection.write(fn);
  }

  /** Runs one statement on its own. */
  private run(statement: sql.Statement): Promise<Result> {
    return this.connection.use((client) => client.execute(statement));
  }

  /** The total a page's rows carry (`sql.PAGE_TOTAL`), or, for an empty page, `count`'s. */
  private async totalOf(page: Result['rows'], count: sql.Statement): Promise<number> {
    const row = page[0] ?? (await this.run(count)).rows[0];
    return Number(row?.[sql.PAGE_TOTAL] ?? row?.total ?? 0);
  }

  /** Runs read statements in one read transaction: their results come from one snapshot. */
  private read(statements: sql.Statement[]): Promise<Result[]> {
    return this.connection.use((client) => client.batch(statements, 'read'));
  }

  readonly threads: ThreadDriver<Transaction> = {
    get: async (id) => (await this.run(sql.selectThread(id))).rows.map(toThread)[0] ?? null,
    insert: async (thread) => (await this.run(sql.insertThread(threadRow(thread), false))).rowsAffected > 0,
    upsert: (thread) =>
      this.connection.use((client) => exec(client, sql.insertThread(threadRow(thread), true))),
    /** Replaces the title, merges the metadata and bumps `updated_at`, in one write transaction. */
    update: (change) =>
      this.write(async (tx) => {
        const [row] = (await tx.execute(sql.selectThread(change.id))).rows;
        if (!row) return null;
        const stored = toThread(row);
        const title = change.title ?? stored.title;
        const metadata = change.metadata ? shallowMerge(stored.metadata, change.metadata) : stored.metadata;
        const { rows } = await tx.execute(sql.updateThreadRow(stored.id, title, JSON.stringify(metadata)));
        return { ...stored, title, metadata, updatedAt: new Date(Number(rows[0]?.updated_at)) };
      }),
    touch: (tx, bumps) => exec(tx, sql.touchThreads(bumps)),
    delete: (tx, id) => exec(tx, ...sql.deleteThreadStatements(id)),
    readPage: async (query) => {
      if (sql.needsJsFilter(query.metadata)) {
        // Object and array filter values are compared as JSON by core (key order ignored); SQL
        // has already narrowed the rows to the right keys, types and scalar values.
        const { rows } = sql.listThreadsStatements(query);
        return { kind: 'candidates', threads: (await this.run(rows)).rows.map(toThread) };
      }
      const limit = pageLimit(query.page, query.perPage);
      const { rows, count } = sql.listThreadsStatements(query, limit);
      if (!limit) {
        const [page, counted] = await this.read([rows, count]);
        return {
          kind: 'page',
          threads: page?.rows.map(toThread) ?? [],
          total: Number(counted?.rows[0]?.total),
        };
      }
      const page = (await this.run(rows)).rows;
      return { kind: 'page', threads: page.map(toThread), total: await this.totalOf(page, count) };
    },
  };

  readonly messages: MessageDriver<Transaction> = {
    readPage: async (query) => {
      const limit = pageLimit(query.page, query.perPage);
      const { rows, count } = sql.messagePageStatements(query, limit);
      if (limit && query.include.length === 0) {
        const page = (await this.run(rows)).rows;
        return { page: page.map(toMessage), total: await this.totalOf(page, count), windows: [] };
      }
      const windows = query.include.map((w) => sql.includeWindowStatement(w, query.resourceId));
      const [page, counted, ...included] = await this.read([rows, count, ...windows]);
      return {
        page: page?.rows.map(toMessage) ?? [],
        total: Number(counted?.rows[0]?.total),
        windows: included.flatMap((result) => result.rows.map(toMessage)),
      };
    },
    byIds: async (ids, tx) => {
      const statement = sql.messagesByIds(ids);
      const { rows } = await (tx ? tx.execute(statement) : this.run(statement));
      return rows.map(toMessage);
    },
    places: async (tx, threadIds, messageIds) => {
      const threads = new Map<string, string>();
      const messages = new Map<string, { threadId: string; resourceId: string }>();
      for (const row of (await tx.execute(sql.selectPlaces(threadIds, messageIds))).rows) {
        const [id, resourceId] = [String(row.id), String(row.resource_id)];
        if (row.kind === 't') threads.set(id, resourceId);
        else messages.set(id, { threadId: String(row.thread_id), resourceId });
      }
      return { threads, messages };
    },
    put: (tx, messages) =>
      exec(
        tx,
        sql.upsertMessages(messages.map(messageRow)),
        ...indexStatements(messages, this.keywords.analyzer),
      ),
    remove: (tx, ids) => exec(tx, sql.messagesByIds(ids, true)),
    count: (tx, changes) => exec(tx, ...sql.countStatements(changes)),
    /** New messages of one thread in one statement (`saveMessageBatch`); `false` when refused. */
    save: async (messages) => {
      const { threadId, resourceId } = messages[0]!;
      if (messages.some((m) => m.threadId !== threadId || m.resourceId !== resourceId)) return false;
      // Each message's id, role, content, type and createdAt: the thread and resource are the batch's.
      const rows = messages.map((m) => messageRow(m).filter((_, i) => i !== 1 && i !== 2));
      const save = sql.saveMessageBatch(threadId, resourceId, rows);
      const index = indexStatements(messages, this.keywords.analyzer, true);
      return this.connection
        .use((client) => client.batch([save, ...index], 'write'))
        .then(
          () => true,
          (error: unknown) => {
            if (error instanceof Error && error.message.includes(BATCH_REFUSED)) return false;
            throw error;
          },
        );
    },
  };

  readonly resources: ResourceDriver<Transaction> = {
    list: async (after, limit) =>
      (await this.run(sql.resourceIds(after, limit))).rows.map((r) => String(r.id)),
    get: async (id) => (await this.run(sql.selectResource(id))).rows.map(toResource)[0] ?? null,
    delete: (tx, id) => exec(tx, sql.deleteResource(id)),
    update: async ({ id, workingMemory, metadata, now }) => {
      const write = (db: Executor, merged?: JsonObject) =>
        db.execute(sql.writeResource(id, now.getTime(), { workingMemory, metadata: merged }));
      // Nothing to merge: one upsert, atomic on its own, no transaction and no read.
      const { rows } = await (metadata === undefined
        ? this.connection.use((client) => write(client))
        : this.write(async (tx) => {
            const [row] = (await tx.execute(sql.selectResource(id))).rows;
            return write(tx, shallowMerge(row ? toResource(row).metadata : {}, metadata));
          }));
      return toResource(rows[0]!);
    },
  };

  /**
   * Optimistic first: the value is read and the new one computed outside any lock, then written
   * only if the stored value is still the one read (one conditional statement, which holds the
   * write lock for that statement only). After a lost race, the read and the write run in one
   * write transaction, which holds every other writer off while `apply` runs.
   */
  readonly workingMemory: CompareAndSetWorkingMemory<null> = {
    kind: 'compareAndSet',
    read: async (cell) => {
      const [row] = (await this.run(sql.selectMemory(cell))).rows;
      return row ? { value: memoryOf(row.value), version: null } : null;
    },
    write: async (cell, expected, value) =>
      (await this.run(sql.writeMemory(cell, value, Date.now(), expected))).rows.length > 0,
    afterLostRace: {
      kind: 'locked',
      update: (cell, apply) =>
        this.write(async (tx) => {
          const row = (await tx.execute(sql.selectMemory(cell))).rows[0];
          if (!row && cell.scope === 'thread') return false;
          await tx.execute(sql.writeMemory(cell, apply(memoryOf(row?.value)), Date.now()));
          return true;
        }),
    },
  };
}
