import {
  compareIds,
  MemoryError,
  type Message,
  type MessagePage,
  type MessagePatch,
  mergeMessageLists,
  type NormalizedAtomicUpdate,
  type NormalizedListMessages,
  type NormalizedListThreads,
  pageInfo,
  pageOffset,
  type Resource,
  StoreBase,
  type Thread,
  type ThreadPage,
  type UpdateResourceArgs,
  type UpdateThreadArgs,
} from '@engram/core';
import type pg from 'pg';
import { Connection, RestartTransaction } from './connection.ts';
import { CountChanges } from './counts.ts';
import { toMemoryError } from './errors.ts';
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
 * engram storage on PostgreSQL (`pg`). Working-memory updates lock the row in a transaction
 * (`SELECT … FOR UPDATE`), so they are atomic across processes and machines; metadata merges
 * are single `jsonb ||` statements.
 *
 * Connects lazily: the first call (usually `init()`) opens the pool and migrates the schema.
 */
export class PostgresStore extends StoreBase {
  readonly name = 'pg';
  readonly supportsAtomicWorkingMemoryMerge = true;

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

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return toMemoryError(error, operation);
  }

  protected async doInit(): Promise<void> {
    await this.connection.connect();
  }

  protected doClose(): Promise<void> {
    return this.connection.close();
  }

  private query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    return this.connection.query<R>(text, values);
  }

  private transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.connection.transaction(fn);
  }

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<Thread | null> {
    const statement = sql.getThread(this.names, threadId, resourceId);
    const [row] = await this.query<ThreadRow>(statement.text, statement.values);
    return row ? toThread(row) : null;
  }

  protected async doSaveThread(thread: Thread): Promise<Thread> {
    await this.query(sql.upsertThread(this.names), threadParams(thread));
    return copy(thread);
  }

  protected async doUpdateThread(args: UpdateThreadArgs): Promise<Thread> {
    const [row] = await this.query<ThreadRow>(sql.updateThread(this.names), [
      args.id,
      args.title ?? null,
      JSON.stringify(args.metadata ?? {}),
      timestamp(new Date()),
    ]);
    if (!row) throw notFound(args.id);
    return toThread(row);
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    await this.query(sql.deleteThread(this.names), [threadId]);
  }

  protected async doListThreads(args: NormalizedListThreads): Promise<ThreadPage> {
    const list = sql.listThreads(this.names, args);
    const rows = await this.query<ThreadRow>(list.text, list.values);
    const total = await this.total(rows.length, args.page, args.perPage, () =>
      sql.countThreads(this.names, args),
    );
    return { threads: rows.map(toThread), ...pageInfo(total, args.page, args.perPage) };
  }

  /**
   * The row count behind a page: known from the page itself when it is partly filled (or the
   * first page), otherwise counted.
   */
  private async total(
    rowsOnPage: number,
    page: number,
    perPage: number | false,
    count: () => sql.Statement,
  ): Promise<number> {
    const offset = pageOffset(page, perPage);
    if (
      perPage === false ||
      (rowsOnPage < perPage && rowsOnPage > 0) ||
      (rowsOnPage === 0 && offset === 0 && perPage > 0)
    ) {
      return offset + rowsOnPage;
    }
    const statement = count();
    const [row] = await this.query<{ total: number }>(statement.text, statement.values);
    return row?.total ?? 0;
  }

  protected async doSaveMessages(messages: Message[]): Promise<Message[]> {
    const ids = messages.map((m) => m.id);
    const hints: RetryHints = { threads: new Set(), lockMessages: false };
    await this.transaction(async (client) => {
      const { owners, touched, locked } = await this.lockForWrite(
        client,
        ids,
        messages.map((m) => m.threadId),
        hints,
      );
      const counts = new CountChanges();
      for (const message of messages) {
        const owner = owners.get(message.threadId);
        if (owner === undefined) throw notFound(message.threadId);
        if (owner !== message.resourceId) {
          throw new MemoryError(
            'INVALID_ARGUMENT',
            `pg: message ${JSON.stringify(message.id)} names resource ${JSON.stringify(message.resourceId)}, but its thread belongs to another`,
            { adapter: this.name },
          );
        }
        counts.add(message.threadId, message.resourceId, 1);
      }
      for (const old of locked.values()) counts.add(old.threadId, old.resourceId, -1);
      // Rows are written in id order so concurrent batches lock them in the same order.
      const sorted = [...messages].sort((a, b) => compareIds(a.id, b.id));
      const result = await client.query<{ written: number }>(sql.saveMessages(this.names), [
        ...messageArrays(sorted),
        [...locked.keys()],
        ...counts.arrays(),
        timestamp(new Date()),
        [...touched],
      ]);
      // A message inserted by another writer after the locks were taken: start over, so its
      // thread is locked and counted too.
      if (result.rows[0]?.written !== messages.length) {
        const moved = await client.query<{ thread_id: string }>(sql.threadsOfMessages(this.names), [ids]);
        for (const row of moved.rows) hints.threads.add(row.thread_id);
        hints.lockMessages = true;
        throw new RestartTransaction(
          'another writer saved one of the messages while the transaction ran; try again',
        );
      }
    });
    return messages.map(copy);
  }

  protected async doListMessages(args: NormalizedListMessages): Promise<MessagePage> {
    let page: Message[] = [];
    if (args.perPage !== 0) {
      const limit = args.perPage === false ? null : args.perPage;
      const statement = sql.pageMessages(this.names, args, limit, pageOffset(args.page, args.perPage));
      page = (await this.query<MessageRow>(statement.text, statement.values)).map(toMessage);
    }
    const total = await this.total(page.length, args.page, args.perPage, () =>
      sql.countMessages(this.names, args),
    );
    let windows: Message[] = [];
    if (args.include.length > 0) {
      const statement = sql.includeWindows(this.names, args.include, args.resourceId);
      windows = (await this.query<MessageRow>(statement.text, statement.values)).map(toMessage);
    }
    return {
      messages: mergeMessageLists([page, windows], args.direction),
      ...pageInfo(total, args.page, args.perPage),
    };
  }

  protected async doListMessagesById(ids: string[]): Promise<Message[]> {
    return (await this.query<MessageRow>(sql.messagesById(this.names), [ids])).map(toMessage);
  }

  protected async doUpdateMessages(patches: MessagePatch[]): Promise<Message[]> {
    // Several patches of one id apply in order: fold them into one before the single UPDATE.
    const byId = new Map<string, MessagePatch>();
    for (const patch of patches) {
      const merged: MessagePatch = { ...byId.get(patch.id), id: patch.id };
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
        timestamp(new Date()),
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
      await client.query(sql.deleteMessages(this.names), [[...locked.keys()], timestamp(new Date())]);
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

  protected async doGetResourceById(resourceId: string): Promise<Resource | null> {
    const [row] = await this.query<ResourceRow>(sql.getResource(this.names), [resourceId]);
    return row ? toResource(row) : null;
  }

  protected async doUpdateResource(args: UpdateResourceArgs): Promise<Resource> {
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

  protected async doUpdateWorkingMemoryAtomically(args: NormalizedAtomicUpdate): Promise<string | null> {
    return this.transaction(async (client) => {
      const now = timestamp(new Date());
      if (args.scope === 'resource') {
        await client.query(sql.ensureResource(this.names), [args.resourceId, now]);
        const locked = await client.query<{ workingMemory: string | null }>(
          sql.lockResourceMemory(this.names),
          [args.resourceId],
        );
        const next = args.update(locked.rows[0]?.workingMemory ?? null);
        await client.query(sql.writeResourceMemory(this.names), [args.resourceId, next, now]);
        return next;
      }
      const locked = await client.query<{ memory: unknown }>(sql.lockThreadMemory(this.names), [
        args.threadId,
      ]);
      const row = locked.rows[0];
      if (!row) throw notFound(args.threadId);
      const next = args.update(typeof row.memory === 'string' ? row.memory : null);
      await client.query(sql.writeThreadMemory(this.names), [args.threadId, next, now]);
      return next;
    });
  }
}

/** What a message write learnt in an attempt that started over, for the next attempt. */
interface RetryHints {
  /** Threads to lock as well: the ones messages were found in. */
  threads: Set<string>;
  /** Lock the messages even when none existed as the threads were locked. */
  lockMessages: boolean;
}

function notFound(threadId: string): MemoryError {
  return new MemoryError('NOT_FOUND', `pg: thread ${JSON.stringify(threadId)} does not exist`, {
    adapter: 'pg',
  });
}
