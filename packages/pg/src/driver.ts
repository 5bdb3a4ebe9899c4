import {
  type CompareAndSetWorkingMemory,
  createKeywordAnalyzer,
  type Driver,
  type Message,
  type MessageDriver,
  type Resource,
  type ResourceDriver,
  SERVER_CAPABILITIES,
  type Thread,
  type ThreadDriver,
} from '@engram/core/driver';
import type pg from 'pg';
import { Connection, RestartTransaction } from './connection.ts';
import { errorCode, errors } from './errors.ts';
import { indexMessages, indexTerms, PostgresKeywordDriver } from './keywords.ts';
import { messageArrays, threadParams, timestamp } from './mapping.ts';
import { PostgresObservationDriver } from './observations.ts';
import { checkOptions, type PostgresStoreOptions } from './options.ts';
import { PostgresSettingsDriver } from './settings.ts';
import * as sql from './sql.ts';
import { PostgresTurnDriver } from './turns.ts';
import { PostgresVectorDriver } from './vectors.ts';
import { workingMemory } from './working-memory.ts';

/** A write of `PostgresDriver`: a transaction on one pooled connection. */
export interface PostgresTx {
  client: pg.PoolClient;
  /** Threads to lock as well: where an earlier attempt of the write found its messages. */
  hints: Set<string>;
  /** The existing messages `places` found in the locked threads: the only rows `put` may replace. */
  locked: Set<string>;
}

/**
 * The PostgreSQL driver. Writes are transactions that lock thread rows before message rows, each in
 * one pass in id order (threads by `SELECT … FOR UPDATE`, messages by the insert or delete itself),
 * so writers of the same rows queue up instead of deadlocking.
 */
export class PostgresDriver implements Driver<PostgresTx> {
  readonly name = 'pg';
  /** Working memory is compare-and-set, then row-locked; batches and deletes are transactions. */
  readonly capabilities = SERVER_CAPABILITIES;
  readonly errors = errors;
  /** The schema, the prefix and the qualified table names. */
  readonly names: sql.Names;
  private readonly sql: sql.Statements;
  /** The pool, its statements and transactions. */
  readonly db: Connection;
  readonly vectors: PostgresVectorDriver;
  readonly observations: PostgresObservationDriver;
  readonly settings: PostgresSettingsDriver;
  readonly keywords: PostgresKeywordDriver;
  readonly turns: PostgresTurnDriver;
  readonly workingMemory: CompareAndSetWorkingMemory<string | null>;

  constructor(options: PostgresStoreOptions) {
    const { schemaName, prefix } = checkOptions(options);
    this.names = sql.names(schemaName, prefix);
    this.sql = sql.statements(this.names);
    this.db = new Connection(options, this.names);
    this.vectors = new PostgresVectorDriver(this.db, this.names, options.vectors);
    this.observations = new PostgresObservationDriver(this.db, this.names);
    this.settings = new PostgresSettingsDriver(this.db, this.names);
    this.turns = new PostgresTurnDriver(this.db, this.names);
    this.keywords = new PostgresKeywordDriver(this.db, this.names, createKeywordAnalyzer(options.keywords));
    this.workingMemory = workingMemory(this.db, this.sql);
  }

  readonly open = () => this.db.open();
  readonly close = () => this.db.close();

  /** A transaction, run again whole (`fn` too) after a deadlock or a `RestartTransaction`. */
  write<T>(fn: (tx: PostgresTx) => Promise<T>): Promise<T> {
    const hints = new Set<string>();
    return this.db.transaction((client) => fn({ client, hints, locked: new Set() }));
  }

  /** The first row of a prepared statement (see `Connection.query`), or `null`. */
  private async one<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R | null> {
    return (await this.db.query<R>(text, values, true))[0] ?? null;
  }

  /**
   * The rows of a page, window or count statement, prepared like the fixed statements: each reads
   * through an index on its thread or resource whatever the values, and a plan cached while the
   * tables were small is made again when `ANALYZE` updates their statistics.
   */
  private rows<R extends pg.QueryResultRow>({ text, values }: sql.Statement): Promise<R[]> {
    return this.db.query<R>(text, values, true);
  }

  private async count(statement: sql.Statement): Promise<number> {
    return (await this.rows<{ total: number }>(statement))[0]?.total ?? 0;
  }

  readonly threads: ThreadDriver<PostgresTx> = {
    get: (id) => this.one<Thread>(this.sql.getThread, [id]),
    insert: async (thread) => (await this.one(this.sql.insertThread, threadParams(thread))) !== null,
    upsert: async (thread) => {
      await this.one(this.sql.upsertThread, threadParams(thread));
    },
    update: ({ id, title, metadata }) =>
      this.one<Thread>(this.sql.updateThread, [id, title ?? null, JSON.stringify(metadata ?? {})]),
    touch: async (tx, bumps) => {
      if (bumps.size === 0) return;
      const newest = [...bumps.values()].map((date) => (date ? timestamp(date) : null));
      await tx.client.query(this.sql.touchThreads, [[...bumps.keys()], newest]);
    },
    delete: async (tx, id) => {
      await tx.client.query(this.sql.deleteThread, [id]);
    },
    readPage: async (query) => {
      const { page, count } = sql.listThreads(this.names, query);
      const [threads, known] = withoutTotal(await this.rows<Thread & Counted>(page));
      return { kind: 'page', threads, total: known ?? (() => this.count(count)) };
    },
  };

  readonly messages: MessageDriver<PostgresTx> = {
    readPage: async (query) => {
      // Windows alone (`perPage: 0`, as recall reads them) carry the total themselves.
      const windowsOnly = query.perPage === 0 && query.dateRange === undefined;
      const [page, pageTotal] = withoutTotal(
        query.perPage === 0 ? [] : await this.rows<Message & Counted>(sql.pageMessages(this.names, query)),
      );
      const [windows, windowsTotal] = withoutTotal(
        query.include.length === 0
          ? []
          : await this.rows<Message & Counted>(sql.includeWindows(this.names, query, windowsOnly)),
      );
      const known = pageTotal ?? (windowsOnly ? windowsTotal : undefined);
      return { page, total: known ?? (() => this.count(sql.countMessages(this.names, query))), windows };
    },
    byIds: async (ids, tx) =>
      tx
        ? (await tx.client.query<Message>(this.sql.messagesById, [ids])).rows
        : this.db.query<Message>(this.sql.messagesById, [ids]),
    /**
     * Locks the threads, then (when any message existed) reads where the messages are, in a
     * statement whose view is taken after the thread locks were granted: a message that moved to
     * an unlocked thread in between makes the write start over, locking that thread too.
     */
    places: async (tx, threadIds, messageIds) => {
      const locked = await tx.client.query<{ id: string; resource_id: string; existing: boolean }>(
        this.sql.lockThreads,
        [[...new Set([...threadIds, ...tx.hints])], messageIds],
      );
      const threads = new Map(locked.rows.map((t) => [t.id, t.resource_id]));
      const messages = new Map<string, { threadId: string; resourceId: string }>();
      if (!locked.rows.some((t) => t.existing)) return { threads, messages };
      const { rows } = await tx.client.query<{ id: string; thread_id: string; resource_id: string }>(
        this.sql.placeMessages,
        [messageIds],
      );
      for (const row of rows) {
        tx.hints.add(row.thread_id);
        tx.locked.add(row.id);
        messages.set(row.id, { threadId: row.thread_id, resourceId: row.resource_id });
      }
      if (rows.some((row) => !threads.has(row.thread_id))) throw new RestartTransaction();
      return { threads, messages };
    },
    put: async (tx, messages) => {
      const values = [...messageArrays(messages), [...tx.locked]];
      const { rows } = await tx.client.query<{ written: number }>(this.sql.putMessages, values);
      // One of them exists but was not locked (another writer saved it since): start over.
      if (rows[0]?.written !== messages.length) throw new RestartTransaction();
      const index = indexMessages(this.names, messages, this.keywords.analyzer);
      await tx.client.query(index.text, index.values);
    },
    remove: async (tx, ids) => {
      await tx.client.query(this.sql.deleteMessages, [ids]);
    },
    count: async (tx, changes) => {
      const columns = (['threadId', 'resourceId', 'delta'] as const).map((key) => changes.map((c) => c[key]));
      if (changes.length > 0) await tx.client.query(this.sql.addCounts, columns);
    },
    /** One statement (see `sql.saveMessagesAtOnce`); `false` when it wrote nothing, or failed on NOT NULL. */
    save: async (messages) => {
      const values = [
        ...messageArrays(messages),
        [...new Set(messages.map((m) => m.threadId))],
        ...indexTerms(messages, this.keywords.analyzer),
      ];
      try {
        return (await this.one<{ ok: boolean }>(this.sql.saveMessagesAtOnce, values))?.ok === true;
      } catch (error) {
        if (errorCode(error) !== '23502' || (error as { column?: string }).column !== 'thread_id')
          throw error;
        return false;
      }
    },
  };

  readonly resources: ResourceDriver<PostgresTx> = {
    get: (id) => this.one<Resource>(this.sql.getResource, [id]),
    list: async (after, limit) =>
      (await this.db.query<{ id: string }>(this.sql.resourceIds, [after, limit])).map((r) => r.id),
    delete: async (tx, id) => {
      await tx.client.query(this.sql.deleteResource, [id]);
    },
    update: async ({ id, workingMemory, metadata, now }) => {
      const json = JSON.stringify(metadata ?? {});
      const values = [id, workingMemory ?? null, json, timestamp(now), workingMemory !== undefined];
      return (await this.one<Resource>(this.sql.upsertResource, values)) as Resource;
    },
  };
}

/** A row that may carry its statement's total (`sql.PAGE_TOTAL`, see `sql.pageMessages`). */
type Counted = { [sql.PAGE_TOTAL]?: number };

/** The rows without the total column, and the total they carried (`undefined` when none did). */
function withoutTotal<R extends object>(rows: (R & Counted)[]): [R[], number | undefined] {
  const total = rows[0]?.[sql.PAGE_TOTAL];
  return [rows.map(({ [sql.PAGE_TOTAL]: _, ...row }) => row as R), total];
}
