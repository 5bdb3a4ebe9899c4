import { setTimeout } from 'node:timers/promises';
import type * as core from '@engram/core/adapter';
import {
  checkClientShape,
  MemoryError,
  messageOfAnotherResource,
  newestByThread,
  pageLimit,
  StoreBase,
  shallowMerge,
  sortMessages,
  storedMessage,
  threadExists,
  threadOfAnotherResource,
} from '@engram/core/adapter';
import type { Client, ResultSet, Row } from '@libsql/client';
import { Connection, type Executor } from './connection.ts';
import { CountChanges } from './counts.ts';
import { ADAPTER, isBusyError, toMemoryError } from './errors.ts';
import {
  batchRow,
  messageRow,
  resourceRow,
  threadRow,
  toMessage,
  toResource,
  toThread,
  workingMemoryOf,
} from './mapping.ts';
import { BATCH_REFUSED, migrate } from './migrations.ts';
import {
  CHUNK,
  chunks,
  compareAndSetResourceMemory,
  deleteMessagesByIds,
  deleteThreadStatements,
  includeWindowStatement,
  insertThread,
  listThreadsStatements,
  messagePageStatements,
  needsJsFilter,
  saveMessageBatch,
  selectMessagesByIds,
  selectMessageThreads,
  selectOwnersAndMessages,
  selectResource,
  selectResourceMemory,
  selectThread,
  selectThreadOwners,
  touchThreads,
  updateThreadRow,
  upsertMessage,
  upsertMessages,
  upsertResource,
  upsertThread,
  writeResourceMemory,
} from './sql.ts';
import { type LibSQLVectorOptions, LibSQLVectors } from './vectors.ts';

/**
 * Compare-and-sets a resource's working-memory update tries before it takes the write lock. A
 * lost race costs a read and a recomputation, no wait; the transaction holds the lock while the
 * new value is computed, so every other writer's statement waits on it (SQLite's busy handler
 * sleeps a millisecond or more). Eight processes merging into one resource ran about 1.2× the
 * raw serialised merge's throughput with one attempt and about 1.4× with three to six.
 */
const OPTIMISTIC_ATTEMPTS = 5;

/** The busy timeout used when none is given: how long a write waits for another writer's lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
/** How many times `init()` runs when a new file is busy (see `doInit`). */
const INIT_ATTEMPTS = 5;

/** Options of `LibSQLStore`: a URL to open, or a client you created and keep owning. */
export type LibSQLStoreOptions = (
  | {
      /** `file:path/to.db`, `:memory:`, or a libSQL server URL (`libsql://…`, `http(s)://…`, `ws(s)://…`). */
      url: string;
      /** Token for a libSQL server. */
      authToken?: string;
      /** How long a statement waits for another connection's lock before failing. Default 5000 ms. */
      busyTimeoutMs?: number;
      /**
       * SQLite's `synchronous` setting for a `file:` database (WAL mode). `'full'` (the default)
       * syncs the log to disk at every commit: a committed write survives a power loss.
       * `'normal'` skips that sync: commits cost no disk flush, the database stays consistent,
       * and a crash of this process loses nothing, but a power loss or OS crash can roll back
       * the last commits. Ignored for `:memory:` and server URLs.
       */
      synchronous?: 'full' | 'normal';
    }
  | {
      /**
       * An `@libsql/client` client. The store never closes it; create it with `timeout` set.
       * Recognised by its members (`execute`, `batch`, `transaction`, `reconnect`, `protocol`), so
       * a client from another copy of `@libsql/client` is accepted.
       */
      client: Client;
      /** Applied to the client's connection when it has no busy timeout. Default 5000 ms. */
      busyTimeoutMs?: number;
    }
) & {
  /** Semantic recall vectors: exact by default; `{ index: true }` opts into libSQL's ANN index. */
  vectors?: LibSQLVectorOptions;
};

function invalidOption(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: ${message}`, { adapter: ADAPTER });
}

function notFound(threadId: string): MemoryError {
  return new MemoryError('NOT_FOUND', `${ADAPTER}: thread ${JSON.stringify(threadId)} does not exist`, {
    adapter: ADAPTER,
  });
}

/** True when the one-statement save refused a batch (it wrote nothing). */
function isBatchRefused(error: unknown): boolean {
  return error instanceof Error && error.message.includes(BATCH_REFUSED);
}

function total(result: ResultSet): number {
  return Number(result.rows[0]?.total ?? 0);
}

/**
 * engram storage on libSQL / SQLite: an embedded `file:` database (the default for local
 * agents), `:memory:`, or a libSQL server.
 *
 * Read-modify-writes (metadata merges, working-memory updates, message saves) are atomic across
 * processes: single statements (a compare-and-set of a resource's working memory, a save of one
 * thread's new messages), or write transactions (`BEGIN IMMEDIATE` on embedded databases).
 */
export class LibSQLStore extends StoreBase {
  readonly name = ADAPTER;
  /**
   * Write transactions make working-memory updates atomic and batches all-or-nothing;
   * `processLocal` for `:memory:` (one database per store, invisible to other stores).
   */
  readonly capabilities: {
    readonly atomicWorkingMemory: true;
    readonly transactionalBatches: true;
    readonly processLocal: boolean;
  };

  private readonly connection: Connection;
  /** Vector search for semantic recall, exact unless `vectors.index` (see `LibSQLVectors`). */
  readonly vectors: LibSQLVectors;

  constructor(options: LibSQLStoreOptions) {
    super();
    if (options === null || typeof options !== 'object') throw invalidOption('options must be an object');
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 1) {
      throw invalidOption(`busyTimeoutMs must be a positive integer, got ${String(options.busyTimeoutMs)}`);
    }
    if ('client' in options && options.client !== undefined) {
      // By shape, not instanceof: a client from another copy of `@libsql/client` works the same.
      const client = checkClientShape<Client>(options.client, {
        adapter: 'libsql',
        option: 'client',
        expected: 'an @libsql/client client (createClient())',
        members: {
          execute: 'function',
          batch: 'function',
          transaction: 'function',
          reconnect: 'function',
          protocol: 'string',
        },
      });
      this.connection = new Connection({ kind: 'injected', client, busyTimeoutMs });
    } else if ('url' in options && typeof options.url === 'string' && options.url.length > 0) {
      const synchronous = options.synchronous ?? 'full';
      if (synchronous !== 'full' && synchronous !== 'normal') {
        throw invalidOption(`synchronous must be 'full' or 'normal', got ${String(options.synchronous)}`);
      }
      this.connection = new Connection({
        kind: 'url',
        url: options.url,
        authToken: options.authToken,
        busyTimeoutMs,
        synchronous,
      });
    } else {
      throw invalidOption('pass either { url } (file:…, :memory: or libsql://…) or { client }');
    }
    this.capabilities = {
      atomicWorkingMemory: true,
      transactionalBatches: true,
      processLocal: this.connection.processLocal,
    };
    this.vectors = new LibSQLVectors(
      this.connection,
      (operation, fn) => this.run(operation, fn),
      options.vectors,
    );
  }

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return toMemoryError(error, operation);
  }

  /** Opens the client and migrates; `StoreBase` runs it once, before the first operation. */
  protected async doInit(): Promise<void> {
    // Processes opening a new file at once can get SQLITE_BUSY past the busy timeout (one
    // switching the file to WAL while another reads it); the connection has dropped that client,
    // so init runs again on a new one, and migrations apply once either way.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.connection.use((client) => migrate(client));
      } catch (error) {
        if (!isBusyError(error) || attempt >= INIT_ATTEMPTS) throw error;
        await setTimeout(25 * attempt + Math.random() * 25);
      }
    }
  }

  protected doClose(): Promise<void> {
    return this.connection.close();
  }

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<core.Thread | null> {
    const result = await this.connection.use((client) => client.execute(selectThread(threadId)));
    const row = result.rows[0];
    if (!row) return null;
    const thread = toThread(row);
    return resourceId !== undefined && thread.resourceId !== resourceId ? null : thread;
  }

  protected async doCreateThread(thread: core.Thread): Promise<core.Thread> {
    const result = await this.connection.use((client) => client.execute(insertThread(threadRow(thread))));
    if (result.rowsAffected === 0) throw threadExists(ADAPTER, thread.id);
    return structuredClone(thread);
  }

  protected async doSaveThread(thread: core.Thread): Promise<core.Thread> {
    await this.connection.use((client) => client.execute(upsertThread(threadRow(thread))));
    return structuredClone(thread);
  }

  protected doUpdateThread(args: core.UpdateThreadArgs): Promise<core.Thread> {
    return this.connection.write((tx) => this.updateThreadIn(tx, args));
  }

  private async updateThreadIn(tx: Executor, args: core.UpdateThreadArgs): Promise<core.Thread> {
    const row = (await tx.execute(selectThread(args.id))).rows[0];
    if (!row) throw notFound(args.id);
    const stored = toThread(row);
    const title = args.title ?? stored.title;
    const metadata = args.metadata ? shallowMerge(stored.metadata, args.metadata) : stored.metadata;
    const written = await tx.execute(updateThreadRow(stored.id, title, JSON.stringify(metadata)));
    return { ...stored, title, metadata, updatedAt: new Date(Number(written.rows[0]?.updated_at)) };
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    await this.connection.use((client) => client.batch(deleteThreadStatements(threadId), 'write'));
  }

  protected async readThreadPage(args: core.NormalizedListThreads): Promise<core.ThreadRead> {
    if (needsJsFilter(args.metadata)) {
      // Object and array filter values are compared as JSON by core (key order ignored); SQL has
      // already narrowed the rows to the right keys, types and scalar values.
      const { rows } = listThreadsStatements(args);
      const result = await this.connection.use((client) => client.execute(rows));
      return { kind: 'candidates', threads: result.rows.map(toThread) };
    }
    const { rows, count } = listThreadsStatements(args, pageLimit(args.page, args.perPage));
    const [page, counted] = await this.connection.use((client) => client.batch([rows, count], 'read'));
    return { kind: 'page', threads: page!.rows.map(toThread), total: total(counted!) };
  }

  protected async doSaveMessages(messages: core.Message[]): Promise<core.Message[]> {
    const first = messages[0]!;
    const oneThread = messages.every(
      (m) => m.threadId === first.threadId && m.resourceId === first.resourceId,
    );
    if (oneThread) {
      // The usual save, new messages of one thread: one statement (see `saveMessageBatch`).
      const rows = messages.map(batchRow);
      const statement = saveMessageBatch(first.threadId, first.resourceId, rows);
      const saved = await this.connection.use((client) =>
        client.execute(statement).then(
          () => true,
          (error: unknown) => {
            if (isBatchRefused(error)) return false;
            throw error;
          },
        ),
      );
      if (saved) return messages.map(storedMessage);
    }
    // Several threads, or a batch the statement refused (a missing or foreign thread, an id
    // stored already): the full save refuses it with the reason, or replaces and moves messages.
    return this.saveMessagesChecked(messages);
  }

  /** Any batch, in one write transaction: reads owners and stored ids first, then writes. */
  private saveMessagesChecked(messages: core.Message[]): Promise<core.Message[]> {
    return this.connection.write(async (tx) => {
      const threadIds = [...new Set(messages.map((m) => m.threadId))];
      const ids = messages.map((m) => m.id);
      const owners = new Map<string, string>();
      const previous = new Map<string, { threadId: string; resourceId: string }>();
      const remember = (row: Row, kind: 't' | 'm') => {
        if (kind === 't') owners.set(String(row.id), String(row.resource_id));
        else
          previous.set(String(row.id), {
            threadId: String(row.thread_id),
            resourceId: String(row.resource_id),
          });
      };
      if (threadIds.length + ids.length <= CHUNK) {
        // The usual save: the threads and the messages' current places in one read.
        for (const row of (await tx.execute(selectOwnersAndMessages(threadIds, ids))).rows) {
          remember(row, row.kind === 't' ? 't' : 'm');
        }
      } else {
        for (const part of chunks(threadIds)) {
          for (const row of (await tx.execute(selectThreadOwners(part))).rows) remember(row, 't');
        }
        for (const part of chunks(ids)) {
          for (const row of (await tx.execute(selectMessageThreads(part))).rows) remember(row, 'm');
        }
      }
      for (const message of messages) {
        const owner = owners.get(message.threadId);
        if (owner === undefined) throw notFound(message.threadId);
        if (owner !== message.resourceId) {
          throw threadOfAnotherResource(ADAPTER, message.id, message.resourceId);
        }
      }
      const touched = new Set(threadIds);
      const counts = new CountChanges();
      // Read under this transaction's write lock: no other writer can slip in before the upsert.
      for (const message of messages) {
        const before = previous.get(message.id);
        if (before && before.resourceId !== message.resourceId) {
          throw messageOfAnotherResource(ADAPTER, message.id);
        }
      }
      for (const message of messages) {
        const before = previous.get(message.id);
        if (before) {
          touched.add(before.threadId);
          counts.add(before.threadId, before.resourceId, -1);
        }
        counts.add(message.threadId, message.resourceId, 1);
      }
      // One multi-row statement per chunk instead of one statement per message.
      for (const part of chunks(messages)) await tx.execute(upsertMessages(part.map(messageRow)));
      await counts.apply(tx);
      await this.touch(tx, touched, newestByThread(messages));
      return messages.map(storedMessage);
    });
  }

  protected async readMessagePage(args: core.NormalizedListMessages): Promise<core.MessageRead> {
    const { rows, count } = messagePageStatements({ ...args, limit: pageLimit(args.page, args.perPage) });
    const windows = args.include.map((w) =>
      includeWindowStatement({
        id: w.id,
        before: w.withPreviousMessages,
        after: w.withNextMessages,
        resourceId: args.resourceId,
      }),
    );
    // One read transaction: the page, its total and the windows come from one snapshot.
    const results = await this.connection.use((client) => client.batch([rows, count, ...windows], 'read'));
    const [page, counted, ...included] = results;
    return {
      page: page!.rows.map(toMessage),
      total: total(counted!),
      windows: included.flatMap((result) => result.rows.map(toMessage)),
    };
  }

  protected doListMessagesById(ids: string[]): Promise<core.Message[]> {
    return this.connection.use((client) => this.messagesByIds(client, ids));
  }

  private async messagesByIds(db: Executor, ids: string[]): Promise<core.Message[]> {
    const found: core.Message[] = [];
    for (const part of chunks(ids))
      found.push(...(await db.execute(selectMessagesByIds(part))).rows.map(toMessage));
    return ids.length > CHUNK ? sortMessages(found) : found;
  }

  protected doUpdateMessages(patches: core.MessagePatch[]): Promise<core.Message[]> {
    return this.connection.write(async (tx) => {
      const ids = [...new Set(patches.map((p) => p.id))];
      const stored = new Map((await this.messagesByIds(tx, ids)).map((m) => [m.id, m]));
      const changed = new Map<string, core.Message>();
      for (const patch of patches) {
        const current = changed.get(patch.id) ?? stored.get(patch.id);
        if (!current) continue;
        changed.set(patch.id, {
          ...current,
          role: patch.role ?? current.role,
          content: patch.content === undefined ? current.content : patch.content,
          type: patch.type ?? current.type,
          createdAt: patch.createdAt ?? current.createdAt,
        });
      }
      if (changed.size === 0) return [];
      await tx.batch([...changed.values()].map((m) => upsertMessage(messageRow(m))));
      const written = [...changed.values()];
      await this.touch(tx, new Set(written.map((m) => m.threadId)), newestByThread(written));
      return this.messagesByIds(tx, [...changed.keys()]);
    });
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    await this.connection.write(async (tx) => {
      const touched = new Set<string>();
      const counts = new CountChanges();
      for (const part of chunks(ids)) {
        for (const row of (await tx.execute(selectMessageThreads(part))).rows) {
          touched.add(String(row.thread_id));
          counts.add(String(row.thread_id), String(row.resource_id), -1);
        }
        await tx.execute(deleteMessagesByIds(part));
      }
      await counts.apply(tx);
      await this.touch(tx, touched);
    });
  }

  protected async doGetResourceById(resourceId: string): Promise<core.Resource | null> {
    const result = await this.connection.use((client) => client.execute(selectResource(resourceId)));
    const row = result.rows[0];
    return row ? toResource(row) : null;
  }

  protected doUpdateResource(args: core.UpdateResourceArgs): Promise<core.Resource> {
    if (args.metadata === undefined) {
      // Nothing to merge: one upsert, atomic on its own, no transaction and no read.
      return this.connection.use(async (client) => {
        const statement = writeResourceMemory(
          args.resourceId,
          args.workingMemory ?? null,
          args.workingMemory !== undefined,
          Date.now(),
          true,
        );
        const row = (await client.execute(statement)).rows[0];
        if (!row) throw new Error('the resource upsert returned no row');
        return toResource(row);
      });
    }
    return this.connection.write((tx) => this.updateResourceIn(tx, args));
  }

  /** Reads the resource and writes it back with the metadata merged, in the caller's transaction. */
  private async updateResourceIn(tx: Executor, args: core.UpdateResourceArgs): Promise<core.Resource> {
    const now = new Date();
    const row = (await tx.execute(selectResource(args.resourceId))).rows[0];
    const stored: core.Resource = row
      ? toResource(row)
      : { id: args.resourceId, workingMemory: null, metadata: {}, createdAt: now, updatedAt: now };
    const next: core.Resource = {
      ...stored,
      workingMemory: args.workingMemory === undefined ? stored.workingMemory : args.workingMemory,
      metadata: args.metadata ? shallowMerge(stored.metadata, args.metadata) : stored.metadata,
      updatedAt: now,
    };
    await tx.execute(upsertResource(resourceRow(next)));
    return next;
  }

  /**
   * Under the write lock of a transaction (`BEGIN IMMEDIATE` on embedded databases), except that
   * a resource's working memory is first tried optimistically, in two statements and no
   * transaction: read the value and compute the new one outside any lock, then write it only if
   * the stored value is still the one read (a compare-and-set in one statement, which holds the
   * write lock for that statement only). Only after `OPTIMISTIC_ATTEMPTS` lost races does it read
   * and write in the transaction, so `apply` runs at most `OPTIMISTIC_ATTEMPTS + 1` times and the
   * value of its last call is the one stored.
   */
  protected readonly workingMemoryStrategy: core.LockedWorkingMemory = {
    kind: 'locked',
    update: async (cell, apply) => {
      for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS && cell.scope === 'resource'; attempt++) {
        const { resourceId } = cell;
        const written = await this.connection.use(async (client) => {
          const row = (await client.execute(selectResourceMemory(resourceId))).rows[0];
          const current = workingMemoryOf(row);
          const next = apply(current);
          const statement = compareAndSetResourceMemory(
            resourceId,
            row !== undefined,
            current,
            next,
            Date.now(),
          );
          return (await client.execute(statement)).rowsAffected === 1;
        });
        if (written) return true;
      }
      return this.connection.write(async (tx) => {
        if (cell.scope === 'resource') {
          // Read under this transaction's write lock, then one upsert of the new value.
          const row = (await tx.execute(selectResourceMemory(cell.resourceId))).rows[0];
          const next = apply(workingMemoryOf(row));
          await tx.execute(writeResourceMemory(cell.resourceId, next, true, Date.now(), false));
          return true;
        }
        const row = (await tx.execute(selectThread(cell.threadId))).rows[0];
        if (!row) return false;
        const stored = toThread(row).metadata.workingMemory;
        const next = apply(typeof stored === 'string' ? stored : null);
        await this.updateThreadIn(tx, { id: cell.threadId, metadata: { workingMemory: next } });
        return true;
      });
    },
  };

  /** Bumps `updated_at` of these threads; `newest`: the newest `createdAt` written into each. */
  private async touch(tx: Executor, threadIds: Set<string>, newest = new Map<string, Date>()): Promise<void> {
    const ms = new Map([...newest].map(([id, date]) => [id, date.getTime()]));
    for (const ids of chunks([...threadIds])) await tx.execute(touchThreads(ids, ms));
  }
}
