import { MemoryError } from '../errors.ts';
import {
  assertArgs,
  assertDateRange,
  assertDirection,
  assertMessage,
  assertPaging,
  assertPatch,
  assertThread,
  invalid,
  isStorableMessage,
  STORAGE_ARGS,
} from './arguments.ts';
import type {
  AtomicWorkingMemoryUpdate,
  ListMessagesArgs,
  ListThreadsArgs,
  MemoryStorage,
  MessagePage,
  MessagePatch,
  ThreadPage,
  UpdateResourceArgs,
  UpdateThreadArgs,
} from './contract.ts';
import { copyMessage, copyThread } from './copy.ts';
import { CASCADE_DOMAINS, DOMAINS, type DomainHooks, type DomainName, type StoreDomains } from './domains.ts';
import type { Driver, MessageQuery, Places, ThreadQuery, WindowQuery } from './driver.ts';
import { createErrorMapper, type ErrorMapper } from './errors.ts';
import { MessageCountChanges, sortMessages } from './helpers.ts';
import { StoreLifecycle, storeClosedError } from './lifecycle.ts';
import { messagePage, threadPage } from './listing.ts';
import {
  messageOfAnotherResource,
  ownedThread,
  threadExists,
  threadNotFound,
  threadOfAnotherResource,
} from './ownership.ts';
import { purgeResource, type ResourceDeletion } from './purge.ts';
import type { Message, Resource, Thread } from './records.ts';
import { newestByThread } from './updated-at.ts';
import {
  assertCount,
  assertId,
  assertIds,
  assertJsonObject,
  assertOptionalId,
  assertText,
  describe,
  MAX_LISTING_COUNT,
} from './validate.ts';
import { newVersion, type WorkingMemoryCell, WorkingMemoryRunner } from './working-memory.ts';

/** Marks an error thrown by the caller's `update` function so it propagates unchanged. */
class UpdateFunctionError {
  constructor(readonly error: unknown) {}
}

/**
 * A `MemoryStorage` built from a driver (see `driver.ts`): every rule of the contract that is not
 * about one database lives here, once. Each public method validates its arguments, waits until
 * the store is open (one memoised open; `CONNECTION` after `close()`), composes the driver's
 * primitives — ownership refusals in the contract's order, the threads a write bumps, kept
 * counts, working-memory versions, the delete cascade across domains — and maps anything the
 * driver throws to a `MemoryError` with its classification.
 *
 * Adapters export a subclass only to name their store and take their options:
 * `class PostgresStore extends Store<PostgresDriver>`.
 */
export class Store<D extends Driver<unknown> = Driver<unknown>> implements MemoryStorage {
  readonly name: D['name'];
  private readonly lifecycle: StoreLifecycle;
  private readonly mapError: ErrorMapper;
  private readonly domains = new Map<DomainName, unknown>();
  private runner: WorkingMemoryRunner | undefined;

  constructor(protected readonly driver: D) {
    this.name = driver.name;
    this.mapError = createErrorMapper({ adapter: driver.name, ...driver.errors });
    this.lifecycle = new StoreLifecycle(
      () => this.name,
      () => this.run('init', () => driver.open()),
      () => this.run('close', () => driver.close()),
    );
    if (driver.capabilities.atomicWorkingMemory && !driver.workingMemory) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `${driver.name}: the driver declares capabilities.atomicWorkingMemory but supplies no workingMemory strategy`,
        { adapter: driver.name },
      );
    }
    const list = driver.resources.list?.bind(driver.resources);
    if (list) {
      this.listResourceIds = (args = {}) => {
        assertArgs(args, 'listResourceIds', STORAGE_ARGS.listResourceIds);
        const { after, limit = 1_000 } = args;
        if (after !== undefined) assertId(after, 'after');
        if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LISTING_COUNT) {
          throw invalid(`limit must be an integer from 1 to ${MAX_LISTING_COUNT}, got ${describe(limit)}`);
        }
        return this.run('listResourceIds', () => list(after ?? null, limit));
      };
    }
  }

  /** Present when the driver lists resources (`resources.list`); see `MemoryStorage.listResourceIds`. */
  readonly listResourceIds?: (args?: { after?: string; limit?: number }) => Promise<string[]>;

  /** What this store promises (the driver's declaration; read again each time, it may be learnt at open). */
  get capabilities(): D['capabilities'] {
    return this.driver.capabilities;
  }

  /** Vector search for semantic recall, when the driver declares the domain. */
  get vectors(): StoreDomains['vectors'] {
    return domainOf(this, this.driver, this.domains, 'vectors');
  }

  /** The keyword index for keyword and hybrid recall, when the driver declares the domain. */
  get keywords(): StoreDomains['keywords'] {
    return domainOf(this, this.driver, this.domains, 'keywords');
  }

  /** Observation logs for observational memory, when the driver declares the domain. */
  get observations(): StoreDomains['observations'] {
    return domainOf(this, this.driver, this.domains, 'observations');
  }

  /** Turn records (what each model call was given), when the driver declares the domain. */
  get turns(): StoreDomains['turns'] {
    return domainOf(this, this.driver, this.domains, 'turns');
  }

  /**
   * Named JSON objects kept for the whole store, when the driver declares the domain (`Memory`
   * records its configuration there). Not part of a resource: `deleteResource`, export and import
   * leave settings alone.
   */
  get settings(): StoreDomains['settings'] {
    return domainOf(this, this.driver, this.domains, 'settings');
  }

  /** The cascade hooks of every domain the driver declares. */
  private hooks(): DomainHooks<unknown>[] {
    return CASCADE_DOMAINS.flatMap((name) => this.driver[name] ?? []);
  }

  /** Runs a driver operation once the store is open, mapping what it throws (for the domains too). */
  async run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      if (operation !== 'init' && operation !== 'close') await this.lifecycle.ready(operation);
      return await fn();
    } catch (error) {
      if (error instanceof UpdateFunctionError) throw error.error;
      throw this.mapError(error, operation);
    }
  }

  /** The result of a call that needs no backend (an empty batch), unless the store is closed. */
  private async noop<T>(operation: string, value: T): Promise<T> {
    if (this.lifecycle.closed) throw storeClosedError(this.name, operation);
    return value;
  }

  /** `INVALID_ARGUMENT` for a date outside the driver's `dates`. */
  private assertDates(dates: readonly (readonly [Date | undefined, string])[]): void {
    const range = this.driver.dates;
    if (!range) return;
    for (const [date, field] of dates) {
      if (date === undefined) continue;
      const t = date.getTime();
      if (t < range.min.getTime() || t > range.max.getTime()) {
        throw new MemoryError(
          'INVALID_ARGUMENT',
          `${this.name}: ${field} ${date.toISOString()} is outside the dates this store can hold (${range.min.toISOString()} to ${range.max.toISOString()})`,
          { adapter: this.name, details: { field } },
        );
      }
    }
  }

  /** Connects and migrates once (memoised); optional, since every operation does it first. */
  init(): Promise<void> {
    return this.lifecycle.ready('init');
  }

  /** Idempotent; afterwards every call, `init()` included, rejects with `CONNECTION`. */
  close(): Promise<void> {
    return this.lifecycle.close();
  }

  async getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    assertArgs(args, 'getThreadById', STORAGE_ARGS.getThreadById);
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    const thread = await this.run('getThreadById', () => this.driver.threads.get(args.threadId));
    return thread && (args.resourceId === undefined || thread.resourceId === args.resourceId) ? thread : null;
  }

  async createThread(thread: Thread): Promise<Thread> {
    assertThread(thread, 'createThread');
    this.assertDates([
      [thread.createdAt, 'thread.createdAt'],
      [thread.updatedAt, 'thread.updatedAt'],
    ]);
    const inserted = await this.run('createThread', () => this.driver.threads.insert(thread, newVersion()));
    if (!inserted) throw threadExists(this.name, thread.id);
    return copyThread(thread);
  }

  async saveThread(thread: Thread): Promise<Thread> {
    assertThread(thread, 'saveThread');
    this.assertDates([
      [thread.createdAt, 'thread.createdAt'],
      [thread.updatedAt, 'thread.updatedAt'],
    ]);
    await this.run('saveThread', () => this.driver.threads.upsert(thread, newVersion()));
    return copyThread(thread);
  }

  async updateThread(args: UpdateThreadArgs): Promise<Thread> {
    assertArgs(args, 'updateThread', STORAGE_ARGS.updateThread);
    assertId(args.id, 'id');
    if (args.title !== undefined && typeof args.title !== 'string') {
      throw invalid(`title must be a string, got ${describe(args.title)}`);
    }
    if (args.title !== undefined) assertText(args.title, 'title', true);
    if (args.metadata !== undefined) assertJsonObject(args.metadata, 'metadata');
    const touchesMemory = args.metadata !== undefined && Object.hasOwn(args.metadata, 'workingMemory');
    const change = {
      id: args.id,
      title: args.title,
      metadata: args.metadata,
      version: touchesMemory ? newVersion() : undefined,
    };
    const thread = await this.run('updateThread', () => this.driver.threads.update(change));
    if (!thread) throw threadNotFound(this.name, args.id);
    return thread;
  }

  /** Removes the thread, its messages and what every domain keeps for them, in one write. */
  async deleteThread(args: { threadId: string }): Promise<void> {
    assertArgs(args, 'deleteThread', STORAGE_ARGS.deleteThread);
    assertId(args.threadId, 'threadId');
    const { threadId } = args;
    await this.run('deleteThread', () =>
      this.driver.write(async (tx) => {
        // The thread first (locked where the backend locks): a write of a domain into it that
        // holds it too (a turn record) then ends before the cascade reads, or finds it gone.
        await this.driver.messages.places(tx, [threadId], []);
        for (const hooks of this.hooks()) await hooks.deleteByThread(tx, threadId);
        await this.driver.threads.delete(tx, threadId);
      }),
    );
  }

  async listThreads(args: ListThreadsArgs = {}): Promise<ThreadPage> {
    assertArgs(args, 'listThreads', STORAGE_ARGS.listThreads);
    assertOptionalId(args.resourceId, 'resourceId');
    if (args.metadata !== undefined) assertJsonObject(args.metadata, 'metadata');
    if (args.dateRange !== undefined) assertDateRange(args.dateRange);
    const paging = assertPaging(args.page, args.perPage, 100);
    if (args.orderBy !== undefined && args.orderBy !== 'createdAt' && args.orderBy !== 'updatedAt') {
      throw invalid(`orderBy must be 'createdAt' or 'updatedAt', got ${describe(args.orderBy)}`);
    }
    const query: ThreadQuery = {
      resourceId: args.resourceId,
      metadata: args.metadata,
      dateRange: args.dateRange,
      ...paging,
      orderBy: args.orderBy ?? 'createdAt',
      direction: assertDirection(args.direction, 'DESC'),
    };
    return this.run('listThreads', async () => threadPage(await this.driver.threads.readPage(query), query));
  }

  /**
   * The driver's one-step save when it has one and nothing is refused; else one write that reads
   * where the threads and ids stand, refuses the batch in the contract's order, and stores the
   * messages, the count changes and the thread bumps.
   */
  async saveMessages(messages: Message[]): Promise<Message[]> {
    if (!Array.isArray(messages)) throw invalid(`messages must be an array, got ${describe(messages)}`);
    const seen = new Set<string>();
    messages.forEach((message, i) => {
      if (!isStorableMessage(message)) assertMessage(message, `messages[${i}]`);
      if (seen.has(message.id)) throw invalid(`message id ${JSON.stringify(message.id)} appears twice`);
      seen.add(message.id);
    });
    if (messages.length === 0) return this.noop('saveMessages', []);
    this.assertDates(messages.map((m, i) => [m.createdAt, `messages[${i}].createdAt`] as const));
    const { messages: driver, threads } = this.driver;
    const newest = newestByThread(messages);
    await this.run('saveMessages', async () => {
      if (driver.save && (await driver.save(messages, newest))) return;
      await this.driver.write(async (tx) => {
        const threadIds = [...newest.keys()];
        const places = await driver.places(tx, threadIds, [...seen], true);
        this.refuseSave(messages, places);
        const bumps = new Map<string, Date | undefined>(newest);
        const counts = new MessageCountChanges();
        for (const message of messages) {
          const before = places.messages.get(message.id);
          if (before) {
            if (!bumps.has(before.threadId)) bumps.set(before.threadId, undefined);
            counts.add(before.threadId, before.resourceId, -1);
          }
          counts.add(message.threadId, message.resourceId, 1);
        }
        await driver.put(tx, messages);
        await this.count(tx, counts);
        await threads.touch(tx, bumps);
      });
    });
    return messages.map(copyMessage);
  }

  /**
   * The refusals of a save, in the contract's order: every thread must exist (`NOT_FOUND`) and
   * belong to the message's resource (`INVALID_ARGUMENT`), then no id may be a message of another
   * resource (`CONFLICT`).
   */
  private refuseSave(messages: Message[], places: Places): void {
    for (const message of messages) {
      const owner = places.threads.get(message.threadId);
      if (owner === undefined) throw threadNotFound(this.name, message.threadId);
      if (owner !== message.resourceId)
        throw threadOfAnotherResource(this.name, message.id, message.resourceId);
    }
    for (const message of messages) {
      const before = places.messages.get(message.id);
      if (before && before.resourceId !== message.resourceId)
        throw messageOfAnotherResource(this.name, message.id);
    }
  }

  /** Hands the net count changes to a driver that keeps counts; no call when nothing changed. */
  private async count(tx: unknown, counts: MessageCountChanges): Promise<void> {
    const changes = counts.changes();
    if (changes.length > 0) await this.driver.messages.count?.(tx, changes);
  }

  async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    assertArgs(args, 'listMessages', STORAGE_ARGS.listMessages);
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    const paging = assertPaging(args.page, args.perPage, 40);
    if (args.dateRange !== undefined) assertDateRange(args.dateRange);
    if (args.include !== undefined && !Array.isArray(args.include)) {
      throw invalid(`include must be an array, got ${describe(args.include)}`);
    }
    const include = (args.include ?? []).map((window, i): WindowQuery => {
      assertArgs(window, `include[${i}]`, STORAGE_ARGS.include);
      assertId(window.id, `include[${i}].id`);
      return {
        id: window.id,
        withPreviousMessages:
          assertCount(window.withPreviousMessages, `include[${i}].withPreviousMessages`) ?? 0,
        withNextMessages: assertCount(window.withNextMessages, `include[${i}].withNextMessages`) ?? 0,
      };
    });
    const query: MessageQuery = {
      threadId: args.threadId,
      resourceId: args.resourceId,
      ...paging,
      direction: assertDirection(args.direction, 'ASC'),
      dateRange: args.dateRange,
      include,
    };
    return this.run('listMessages', async () =>
      messagePage(await this.driver.messages.readPage(query), query),
    );
  }

  async listMessagesById(args: { ids: string[] }): Promise<Message[]> {
    assertArgs(args, 'listMessagesById', STORAGE_ARGS.listMessagesById);
    assertIds(args.ids, 'ids');
    if (args.ids.length === 0) return this.noop('listMessagesById', []);
    const ids = [...new Set(args.ids)];
    return sortMessages(await this.run('listMessagesById', () => this.driver.messages.byIds(ids)));
  }

  /**
   * Patches of one id are folded into one (later fields win); then the driver's one-step update
   * when it has one, else one write that locks the messages, reads them, stores them patched and
   * bumps their threads.
   */
  async updateMessages(patches: MessagePatch[]): Promise<Message[]> {
    if (!Array.isArray(patches)) throw invalid(`patches must be an array, got ${describe(patches)}`);
    patches.forEach((patch, i) => {
      assertPatch(patch, `patches[${i}]`);
    });
    if (patches.length === 0) return this.noop('updateMessages', []);
    this.assertDates(patches.map((p, i) => [p.createdAt, `patches[${i}].createdAt`] as const));
    const folded = new Map<string, MessagePatch>();
    for (const patch of patches) {
      const into: MessagePatch = { ...folded.get(patch.id), id: patch.id };
      if (patch.role !== undefined) into.role = patch.role;
      if (patch.content !== undefined) into.content = patch.content;
      if (patch.type !== undefined) into.type = patch.type;
      if (patch.createdAt !== undefined) into.createdAt = patch.createdAt;
      folded.set(patch.id, into);
    }
    const { messages: driver, threads } = this.driver;
    const updated = await this.run('updateMessages', async () => {
      if (driver.update) return driver.update([...folded.values()]);
      return this.driver.write(async (tx) => {
        // Only the messages `places` found, in the threads this write holds: one saved since into
        // a thread it does not hold is left alone (the update came first). Writing it too could
        // store again a message a delete removed in between, or, where rows are locked, wait for
        // its thread while a delete holding the thread waits for the row.
        const places = await driver.places(tx, [], [...folded.keys()]);
        const ids = [...folded.keys()].filter((id) => places.messages.has(id));
        if (ids.length === 0) return [];
        const changed = (await driver.byIds(ids, tx)).map((stored): Message => {
          const patch = folded.get(stored.id) as MessagePatch;
          return {
            ...stored,
            role: patch.role ?? stored.role,
            content: patch.content === undefined ? stored.content : patch.content,
            type: patch.type ?? stored.type,
            createdAt: patch.createdAt ?? stored.createdAt,
          };
        });
        if (changed.length === 0) return [];
        await driver.put(tx, changed);
        await threads.touch(tx, newestByThread(changed));
        return changed.map(copyMessage);
      });
    });
    return sortMessages(updated);
  }

  /** One write: the messages, what every domain keeps for them, their counts and thread bumps. */
  async deleteMessages(ids: string[]): Promise<void> {
    assertIds(ids, 'ids');
    if (ids.length === 0) return this.noop('deleteMessages', undefined);
    const { messages: driver, threads } = this.driver;
    await this.run('deleteMessages', () =>
      this.driver.write(async (tx) => {
        const places = await driver.places(tx, [], [...new Set(ids)]);
        const found = [...places.messages.keys()];
        if (found.length === 0) return;
        for (const hooks of this.hooks()) await hooks.deleteByMessages(tx, found);
        await driver.remove(tx, found);
        const counts = new MessageCountChanges();
        const bumps = new Map<string, Date | undefined>();
        for (const { threadId, resourceId } of places.messages.values()) {
          counts.add(threadId, resourceId, -1);
          bumps.set(threadId, undefined);
        }
        await this.count(tx, counts);
        await threads.touch(tx, bumps);
      }),
    );
  }

  async getResourceById(args: { resourceId: string }): Promise<Resource | null> {
    assertArgs(args, 'getResourceById', STORAGE_ARGS.resource);
    assertId(args.resourceId, 'resourceId');
    return this.run('getResourceById', () => this.driver.resources.get(args.resourceId));
  }

  async updateResource(args: UpdateResourceArgs): Promise<Resource> {
    assertArgs(args, 'updateResource', STORAGE_ARGS.updateResource);
    assertId(args.resourceId, 'resourceId');
    const { workingMemory, metadata } = args;
    if (workingMemory !== undefined && workingMemory !== null && typeof workingMemory !== 'string') {
      throw invalid(`workingMemory must be a string or null, got ${describe(workingMemory)}`);
    }
    if (typeof workingMemory === 'string') assertText(workingMemory, 'workingMemory', true);
    if (metadata !== undefined) assertJsonObject(metadata, 'metadata');
    const change = {
      id: args.resourceId,
      ...(workingMemory === undefined ? {} : { workingMemory, version: newVersion() }),
      metadata,
      now: new Date(),
    };
    return this.run('updateResource', () => this.driver.resources.update(change));
  }

  /**
   * Removes every record of the resource (see `purgeResource` for the order): its threads with
   * their messages, vectors and observation logs, then its resource-scope observation log and the
   * resource row. `UNSUPPORTED`, with nothing changed, when the driver lacks `resources.delete`
   * or a domain keeping resource rows lacks `deleteByResource`.
   */
  async deleteResource(args: { resourceId: string }): Promise<ResourceDeletion> {
    assertArgs(args, 'deleteResource', STORAGE_ARGS.resource);
    assertId(args.resourceId, 'resourceId');
    return purgeResource(this, this.driver, args.resourceId);
  }

  /**
   * Writes the resource exactly as given (dates included), replacing a stored one: the old row is
   * deleted, then the new one written with `createdAt` and set to `updatedAt`. Not atomic; calling
   * it again completes one that stopped part-way. `UNSUPPORTED` without `resources.delete`.
   */
  async restoreResource(resource: Resource): Promise<Resource> {
    assertArgs(resource, 'restoreResource');
    assertId(resource.id, 'resource.id');
    const { workingMemory, metadata, createdAt, updatedAt } = resource;
    if (workingMemory !== null && typeof workingMemory !== 'string') {
      throw invalid(`workingMemory must be a string or null, got ${describe(workingMemory)}`);
    }
    if (typeof workingMemory === 'string') assertText(workingMemory, 'workingMemory', true);
    assertJsonObject(metadata, 'metadata');
    for (const [date, field] of [
      [createdAt, 'createdAt'],
      [updatedAt, 'updatedAt'],
    ] as const) {
      if (!(date instanceof Date) || Number.isNaN(date.getTime()))
        throw invalid(`resource.${field} must be a valid Date, got ${describe(date)}`);
    }
    this.assertDates([
      [createdAt, 'resource.createdAt'],
      [updatedAt, 'resource.updatedAt'],
    ]);
    const { resources } = this.driver;
    const deleteRow = resources.delete?.bind(resources);
    if (!deleteRow) {
      throw new MemoryError('UNSUPPORTED', `${this.name}: restoreResource needs resources.delete`, {
        adapter: this.name,
        details: { operation: 'restoreResource' },
      });
    }
    return this.run('restoreResource', async () => {
      await this.driver.write((tx) => deleteRow(tx, resource.id));
      const change = { id: resource.id, workingMemory, metadata, version: newVersion(), now: createdAt };
      await resources.update(change);
      return resources.update({ id: resource.id, now: updatedAt });
    });
  }

  /**
   * The atomic read-modify-write of one working memory, through the driver's strategy and core's
   * runner (the one retry policy). The value `update` returns is checked here, once.
   */
  async updateWorkingMemoryAtomically(args: AtomicWorkingMemoryUpdate): Promise<string | null> {
    assertArgs(args, 'updateWorkingMemoryAtomically', STORAGE_ARGS.updateWorkingMemoryAtomically);
    if (typeof args.update !== 'function') throw invalid('update must be a function');
    let cell: WorkingMemoryCell;
    if (args.scope === 'resource') {
      assertId(args.resourceId, 'resourceId');
      cell = { scope: 'resource', resourceId: args.resourceId };
    } else if (args.scope === 'thread') {
      assertId(args.threadId, 'threadId');
      cell = { scope: 'thread', threadId: args.threadId };
    } else {
      throw invalid(`scope must be 'resource' or 'thread', got ${describe(args.scope)}`);
    }
    assertOptionalId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    const strategy = this.driver.workingMemory;
    if (!this.capabilities.atomicWorkingMemory || !strategy) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${this.name}: updateWorkingMemoryAtomically is not supported: the store declares capabilities.atomicWorkingMemory: ${this.capabilities.atomicWorkingMemory}`,
        { adapter: this.name, details: { operation: 'updateWorkingMemoryAtomically' } },
      );
    }
    if (args.threadId !== undefined && args.resourceId !== undefined) {
      await ownedThread(this, 'updateWorkingMemoryAtomically', args.threadId, args.resourceId);
    }
    const update = args.update;
    const apply = (current: string | null): string | null => {
      let next: unknown;
      try {
        next = update(current);
        if (next !== null && typeof next !== 'string') {
          throw invalid(`update must return a string or null, got ${describe(next)}`);
        }
        if (typeof next === 'string') assertText(next, 'the working memory returned by update', true);
      } catch (error) {
        throw new UpdateFunctionError(error);
      }
      return next;
    };
    this.runner ??= new WorkingMemoryRunner(this.name, strategy);
    const runner = this.runner;
    return this.run('updateWorkingMemoryAtomically', () => runner.run(cell, apply));
  }
}

/**
 * The validated store-side object of a domain the driver declares, made once per driver object
 * (a driver may declare a domain only once it knows, through a getter). A function rather than a
 * method, so reading a domain is no call on the store.
 */
function domainOf<K extends DomainName>(
  store: Store,
  driver: Driver<unknown>,
  cache: Map<DomainName, unknown>,
  name: K,
): StoreDomains[K] {
  const inner = driver[name];
  if (!inner || DOMAINS[name].offered?.(inner as never) === false) return undefined;
  let wrapped = cache.get(name) as { inner: unknown; outer: StoreDomains[K] } | undefined;
  if (wrapped?.inner !== inner) {
    const outer = DOMAINS[name].wrap(
      store.name,
      inner,
      (operation, fn) => store.run(operation, fn),
      (threadId, fn) =>
        driver.write(async (tx) => {
          const places = await driver.messages.places(tx, [threadId], []);
          await fn(tx, places.threads.get(threadId));
        }),
    );
    wrapped = { inner, outer };
    cache.set(name, wrapped);
  }
  return wrapped.outer;
}

/** Builds a `MemoryStorage` from a driver. */
export function createStore<D extends Driver<unknown>>(driver: D): Store<D> {
  return new Store(driver);
}
