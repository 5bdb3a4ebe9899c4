import type * as core from '@engram/core/adapter';
import {
  compareIds,
  messageOfAnotherResource,
  pageOffset,
  SERVER_CAPABILITIES,
  StoreBase,
  storedMessage,
  threadExists,
  threadNotFound,
  threadOfAnotherResource,
} from '@engram/core/adapter';
import type pg from 'pg';
import { beginWith, Connection, commitWith, RestartTransaction } from './connection.ts';
import { errorCode, toMemoryError } from './errors.ts';
import {
  copy,
  type MessageRow,
  messageArrays,
  optionalTimestamp,
  type ResourceRow,
  type ThreadRow,
  threadParams,
  timestamp,
  toMessage,
  toResource,
  toThread,
} from './mapping.ts';
import { checkOptions, DEFAULT_PREFIX, DEFAULT_SCHEMA, type PostgresStoreOptions } from './options.ts';
import * as sql from './sql.ts';
import { PostgresVectors } from './vectors.ts';

/**
 * engram storage on PostgreSQL (`pg`). Working-memory updates are a compare-and-set on the
 * value, then a row lock (`SELECT … FOR UPDATE`) after a lost race, so they are atomic across
 * processes and machines; metadata merges are single `jsonb ||` statements; a save of messages
 * is one statement when nothing races it.
 *
 * Connects lazily: the first call (usually `init()`) opens the pool and migrates the schema.
 */
export class PostgresStore extends StoreBase {
  readonly name = 'pg';
  /** Working-memory updates are compare-and-set, then row-locked; batches and deletes are transactions. */
  readonly capabilities = SERVER_CAPABILITIES;

  private readonly names: sql.Names;
  private readonly connection: Connection;
  /** Semantic recall vectors (pgvector or exact `real[]`; see `PostgresVectors`). */
  readonly vectors: PostgresVectors;

  constructor(options: PostgresStoreOptions) {
    super();
    const schemaName = options?.schemaName ?? DEFAULT_SCHEMA;
    const prefix = options?.tablePrefix ?? DEFAULT_PREFIX;
    checkOptions(options, schemaName, prefix);
    this.names = sql.names(schemaName, prefix);
    this.connection = new Connection(options, this.names);
    this.vectors = new PostgresVectors(
      this.connection,
      this.names,
      (operation, fn) => this.run(operation, fn),
      options.vectors,
    );
  }

  /** The schema the store writes to. */
  get schemaName(): string {
    return this.names.schemaName;
  }

  /** The prefix of every table and index name. */
  get tablePrefix(): string {
    return this.names.prefix;
  }

  /**
   * Whether the store sends its statements as named prepared statements (see the
   * `preparedStatements` option): the option when given, else detected when the store opens
   * (`false` until then).
   */
  get preparedStatements(): boolean {
    return this.connection.prepared;
  }

  protected toMemoryError(error: unknown, operation: string): core.MemoryError {
    return toMemoryError(error, operation);
  }

  protected async doInit(): Promise<void> {
    await this.connection.connect();
  }

  protected doClose(): Promise<void> {
    return this.connection.close();
  }

  /**
   * One statement whose plan does not depend on the table statistics (lookups by primary key,
   * and the save of messages, shaped for it): a named prepared statement when enabled, so a
   * plan cached while the tables were small stays right as they grow.
   */
  private query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    return this.connection.query<R>(text, values, true);
  }

  /**
   * One statement whose best plan depends on how many rows match (pages, counts, `= ANY` of
   * ids): never prepared, so it is planned for the values and statistics of each call.
   */
  private ranged<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    return this.connection.query<R>(text, values);
  }

  private transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.connection.transaction(fn);
  }

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<core.Thread | null> {
    const statement = sql.getThread(this.names, threadId, resourceId);
    const [row] = await this.query<ThreadRow>(statement.text, statement.values);
    return row ? toThread(row) : null;
  }

  protected async doCreateThread(thread: core.Thread): Promise<core.Thread> {
    const inserted = await this.query(sql.insertThread(this.names), threadParams(thread));
    if (inserted.length === 0) throw threadExists('pg', thread.id);
    return copy(thread);
  }

  protected async doSaveThread(thread: core.Thread): Promise<core.Thread> {
    await this.query(sql.upsertThread(this.names), threadParams(thread));
    return copy(thread);
  }

  protected async doUpdateThread(args: core.UpdateThreadArgs): Promise<core.Thread> {
    const [row] = await this.query<ThreadRow>(sql.updateThread(this.names), [
      args.id,
      args.title ?? null,
      JSON.stringify(args.metadata ?? {}),
    ]);
    if (!row) throw threadNotFound('pg', args.id);
    return toThread(row);
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    await this.query(sql.deleteThread(this.names), [threadId]);
  }

  protected async readThreadPage(args: core.NormalizedListThreads): Promise<core.ThreadRead> {
    const list = sql.listThreads(this.names, args);
    const rows = await this.ranged<ThreadRow>(list.text, list.values);
    return {
      kind: 'page',
      threads: rows.map(toThread),
      total: () => this.count(sql.countThreads(this.names, args)),
    };
  }

  /** Runs a count statement. */
  private async count(statement: sql.Statement): Promise<number> {
    const [row] = await this.ranged<{ total: number }>(statement.text, statement.values);
    return row?.total ?? 0;
  }

  /**
   * One statement when nothing races it and nothing is refused (see `sql.saveMessagesAtOnce`).
   * When it writes nothing (a thread missing or of another resource, a message of another
   * resource, or a message another writer changed while the statement waited for a thread lock),
   * the save runs again as a transaction that locks first and writes after: it refuses the batch
   * with the error that applies under its locks, or saves it if the state changed since.
   */
  protected async doSaveMessages(messages: core.Message[]): Promise<core.Message[]> {
    // Rows are written in id order: the insert is the one ordered pass over the message locks.
    const sorted = [...messages].sort((a, b) => compareIds(a.id, b.id));
    const targets = [...new Set(messages.map((m) => m.threadId))];
    try {
      const [row] = await this.query<{ ok: boolean }>(sql.saveMessagesAtOnce(this.names), [
        ...messageArrays(sorted),
        targets,
      ]);
      if (row?.ok) return messages.map(storedMessage);
    } catch (error) {
      if (!isStaleMessage(error)) throw error;
    }
    return this.saveMessagesLocked(messages, sorted, targets);
  }

  /** The save as a transaction: threads locked by one statement, then one write statement. */
  private async saveMessagesLocked(
    messages: core.Message[],
    sorted: core.Message[],
    targets: string[],
  ): Promise<core.Message[]> {
    const ids = messages.map((m) => m.id);
    const hints = new Set<string>();
    await this.transaction(async (client) => {
      const threads = await client.query<{ id: string; resource_id: string }>(sql.lockThreads(this.names), [
        [...new Set([...targets, ...hints])],
        ids,
      ]);
      const owners = new Map(threads.rows.map((row) => [row.id, row.resource_id]));
      checkOwners(messages, owners);
      const result = await client.query<{ written: number; stolen: string[] }>(sql.saveMessages(this.names), [
        ...messageArrays(sorted),
        [...owners.keys()],
      ]);
      // Rows in locked threads: no other writer can change their resource before this ends.
      const stolen = result.rows[0]?.stolen ?? [];
      if (stolen.length > 0) throw messageOfAnotherResource('pg', stolen[0]!);
      // A message in a thread this transaction did not lock (moved there, or inserted by another
      // writer, after the statement that locked the threads began): start over locking it too.
      if (result.rows[0]?.written !== messages.length) {
        const moved = await client.query<{ thread_id: string }>(sql.threadsOfMessages(this.names), [ids]);
        for (const row of moved.rows) hints.add(row.thread_id);
        throw new RestartTransaction(
          'another writer moved or saved one of the messages while the transaction ran; try again',
        );
      }
    });
    return messages.map(storedMessage);
  }

  protected async readMessagePage(args: core.NormalizedListMessages): Promise<core.MessageRead> {
    let page: core.Message[] = [];
    if (args.perPage !== 0) {
      const limit = args.perPage === false ? null : args.perPage;
      const statement = sql.pageMessages(this.names, args, limit, pageOffset(args.page, args.perPage));
      page = (await this.ranged<MessageRow>(statement.text, statement.values)).map(toMessage);
    }
    let windows: core.Message[] = [];
    if (args.include.length > 0) {
      const statement = sql.includeWindows(this.names, args.include, args.resourceId);
      windows = (await this.ranged<MessageRow>(statement.text, statement.values)).map(toMessage);
    }
    return { page, total: () => this.count(sql.countMessages(this.names, args)), windows };
  }

  protected async doListMessagesById(ids: string[]): Promise<core.Message[]> {
    return (await this.ranged<MessageRow>(sql.messagesById(this.names), [ids])).map(toMessage);
  }

  protected async doUpdateMessages(patches: core.MessagePatch[]): Promise<core.Message[]> {
    // Several patches of one id apply in order: fold them into one before the single UPDATE.
    const byId = new Map<string, core.MessagePatch>();
    for (const patch of patches) {
      const merged: core.MessagePatch = { ...byId.get(patch.id), id: patch.id };
      for (const [key, value] of Object.entries(patch)) {
        if (value !== undefined) Object.assign(merged, { [key]: value });
      }
      byId.set(patch.id, merged);
    }
    const folded = [...byId.values()];
    const hints: RetryHints = { threads: new Set(), lockMessages: false };
    const rows = await this.transaction(async (client) => {
      const { locked } = await this.lockForWrite(client, [...byId.keys()], [], hints);
      const result = await client.query<MessageRow>(sql.updateMessages(this.names), [
        folded.map((p) => p.id),
        folded.map((p) => p.role ?? null),
        folded.map((p) => (p.content === undefined ? null : JSON.stringify(p.content))),
        folded.map((p) => p.type ?? null),
        folded.map((p) => optionalTimestamp(p.createdAt)),
        [...locked.keys()],
      ]);
      return result.rows;
    });
    return rows.map(toMessage);
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    const hints: RetryHints = { threads: new Set(), lockMessages: false };
    await this.transaction(async (client) => {
      const { locked } = await this.lockForWrite(client, ids, [], hints);
      if (locked.size === 0) return;
      await client.query(sql.deleteMessages(this.names), [[...locked.keys()]]);
    });
  }

  /**
   * Takes the locks a message write needs, always threads first (in id order), then messages
   * (in id order), so writers of the same rows queue up instead of deadlocking: one statement
   * locks the threads in `threadIds` and the ones the messages are in now, a second (with a
   * view taken after the thread locks were granted) locks the existing messages. If a message
   * moved to an unlocked thread in between, the transaction starts over, locking that thread
   * too (`hints` outlive an attempt). When none of the messages existed as the threads were
   * locked (a save of new messages), the second statement is skipped: the write then finds any
   * message inserted since and starts over. Returns the locked threads' resources, every thread
   * the write touches and the locked messages' thread and resource.
   */
  private async lockForWrite(
    client: pg.PoolClient,
    messageIds: string[],
    threadIds: string[],
    hints: RetryHints,
  ): Promise<{
    owners: Map<string, string>;
    touched: Set<string>;
    locked: Map<string, { threadId: string; resourceId: string }>;
  }> {
    const threads = await client.query<{ id: string; resource_id: string; existing: boolean }>(
      sql.lockThreads(this.names),
      [[...new Set([...threadIds, ...hints.threads])], messageIds],
    );
    const owners = new Map(threads.rows.map((row) => [row.id, row.resource_id]));
    const locked = new Map<string, { threadId: string; resourceId: string }>();
    if (hints.lockMessages || threads.rows.some((row) => row.existing)) {
      const messages = await client.query<{ id: string; thread_id: string; resource_id: string }>(
        sql.lockMessages(this.names),
        [messageIds],
      );
      for (const row of messages.rows) {
        locked.set(row.id, { threadId: row.thread_id, resourceId: row.resource_id });
      }
    }
    const touched = new Set(threadIds);
    for (const message of locked.values()) {
      if (!owners.has(message.threadId)) {
        for (const other of locked.values()) hints.threads.add(other.threadId);
        throw new RestartTransaction();
      }
      touched.add(message.threadId);
    }
    return { owners, touched, locked };
  }

  protected async doGetResourceById(resourceId: string): Promise<core.Resource | null> {
    const [row] = await this.query<ResourceRow>(sql.getResource(this.names), [resourceId]);
    return row ? toResource(row) : null;
  }

  protected async doUpdateResource(args: core.UpdateResourceArgs): Promise<core.Resource> {
    const [row] = await this.query<ResourceRow>(sql.upsertResource(this.names), [
      args.resourceId,
      args.workingMemory ?? null,
      JSON.stringify(args.metadata ?? {}),
      timestamp(new Date()),
      args.workingMemory !== undefined,
    ]);
    if (!row) throw new Error('the resource upsert returned no row');
    return toResource(row);
  }

  /**
   * First optimistically, in two statements and no transaction: read the value, then write the
   * new one only if the stored value is still the one read (a compare-and-set on the value, which
   * is all the update depends on, so the "version" is the stored value itself). When another
   * writer got there first, once more under a row lock (`SELECT … FOR UPDATE` in a transaction),
   * which always succeeds; so the update runs at most twice. Core sends a record that lost a race
   * in the last second straight to the lock.
   */
  protected readonly workingMemoryStrategy: core.CompareAndSetWorkingMemory<string | null> = {
    kind: 'compareAndSet',
    read: async (cell) => {
      if (cell.scope === 'resource') {
        const [row] = await this.query<{ working_memory: string | null }>(
          sql.readResourceMemory(this.names, false),
          [cell.resourceId],
        );
        return row ? { value: row.working_memory, version: row.working_memory } : null;
      }
      const [row] = await this.query<{ memory: unknown }>(sql.readThreadMemory(this.names, false), [
        cell.threadId,
      ]);
      if (!row) return null;
      const stored = row.memory === null || row.memory === undefined ? null : JSON.stringify(row.memory);
      return { value: typeof row.memory === 'string' ? row.memory : null, version: stored };
    },
    write: async (cell, expected, value) => {
      const now = timestamp(new Date());
      const written =
        cell.scope === 'resource'
          ? await this.query(sql.compareAndSetResourceMemory(this.names), [
              cell.resourceId,
              value,
              now,
              expected?.version ?? null,
              expected !== null,
            ])
          : await this.query(sql.compareAndSetThreadMemory(this.names), [
              cell.threadId,
              value,
              expected?.version ?? null,
            ]);
      return written.length === 1;
    },
    afterLostRace: {
      kind: 'locked',
      // The update under the row lock, in a transaction of two round trips (BEGIN with the
      // locking read, the write with COMMIT); creates a missing resource first.
      update: (cell, apply) =>
        this.connection.transaction(
          async (client) => {
            const now = timestamp(new Date());
            if (cell.scope === 'resource') {
              const read = sql.readResourceMemory(this.names, true);
              let locked = await beginWith<{ working_memory: string | null }>(client, read, [
                cell.resourceId,
              ]);
              if (locked.length === 0) {
                await client.query(sql.ensureResource(this.names), [cell.resourceId, now]);
                locked = (await client.query(read, [cell.resourceId])).rows;
              }
              const value = apply(locked[0]?.working_memory ?? null);
              await commitWith(client, sql.writeResourceMemory(this.names), [cell.resourceId, value, now]);
              return true;
            }
            const locked = await beginWith<{ memory: unknown }>(
              client,
              sql.readThreadMemory(this.names, true),
              [cell.threadId],
            );
            const found = locked[0];
            if (!found) {
              await client.query('ROLLBACK');
              return false;
            }
            const value = apply(typeof found.memory === 'string' ? found.memory : null);
            await commitWith(client, sql.writeThreadMemory(this.names), [cell.threadId, value]);
            return true;
          },
          { delimited: true },
        ),
    },
  };
}

/** What a message write learnt in an attempt that started over, for the next attempt. */
interface RetryHints {
  /** Threads to lock as well: the ones messages were found in. */
  threads: Set<string>;
  /** Lock the messages even when none existed as the threads were locked. */
  lockMessages: boolean;
}

/**
 * Throws `NOT_FOUND` for a message whose thread is not among `owners` (thread → resource), and
 * `INVALID_ARGUMENT` for one naming another resource than its thread's.
 */
function checkOwners(messages: core.Message[], owners: Map<string, string>): void {
  for (const message of messages) {
    const owner = owners.get(message.threadId);
    if (owner === undefined) throw threadNotFound('pg', message.threadId);
    if (owner !== message.resourceId) {
      throw threadOfAnotherResource('pg', message.id, message.resourceId);
    }
  }
}

/** The single-statement save found a message changed under it (see `sql.saveMessagesAtOnce`). */
function isStaleMessage(error: unknown): boolean {
  return errorCode(error) === '23502' && (error as { column?: unknown }).column === 'thread_id';
}
