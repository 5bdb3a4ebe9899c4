import { MemoryError } from '../errors.ts';
import { DEFAULT_CAPABILITIES, type StoreCapabilities } from './capabilities.ts';
import type {
  AtomicWorkingMemoryUpdate,
  DateRange,
  ListMessagesArgs,
  ListThreadsArgs,
  MemoryStorage,
  MessagePage,
  MessagePatch,
  ThreadPage,
  UpdateResourceArgs,
  UpdateThreadArgs,
} from './contract.ts';
import { StoreLifecycle, storeClosedError } from './lifecycle.ts';
import { type MessageRead, messagePage, type ThreadRead, threadPage } from './listing.ts';
import { ownedThread } from './ownership.ts';
import type { Direction, JsonObject, Message, Resource, Thread } from './records.ts';
import {
  assertCount,
  assertDate,
  assertId,
  assertIds,
  assertJson,
  assertJsonObject,
  assertOptionalId,
  assertText,
  describe,
  isPlainObject,
  isStorableId,
  isStorableJson,
  isStorableText,
  MAX_LISTING_COUNT,
} from './validate.ts';
import {
  newVersion,
  type WorkingMemoryCell,
  WorkingMemoryRunner,
  type WorkingMemoryStrategy,
} from './working-memory-strategy.ts';

const ROLES = new Set(['user', 'assistant', 'system', 'tool']);

/** `listThreads` arguments with every default filled in. */
export interface NormalizedListThreads {
  resourceId?: string;
  metadata?: JsonObject;
  page: number;
  perPage: number | false;
  orderBy: 'createdAt' | 'updatedAt';
  direction: Direction;
}

/** An include window with its counts filled in. */
export interface NormalizedInclude {
  id: string;
  withPreviousMessages: number;
  withNextMessages: number;
}

/** `listMessages` arguments with every default filled in. */
export interface NormalizedListMessages {
  threadId: string;
  resourceId?: string;
  page: number;
  perPage: number | false;
  direction: Direction;
  dateRange?: DateRange;
  include: NormalizedInclude[];
}

/** `updateWorkingMemoryAtomically` arguments after validation: exactly one id for the scope. */
export type NormalizedAtomicUpdate =
  | { scope: 'resource'; resourceId: string; update: (current: string | null) => string | null }
  | { scope: 'thread'; threadId: string; update: (current: string | null) => string | null };

/**
 * `updateThread` arguments as `doUpdateThread` gets them. `workingMemoryVersion` is a fresh
 * version whenever `metadata` writes `workingMemory` (else `undefined`): a store with a
 * compare-and-set working-memory strategy stores it with the update, so a concurrent
 * compare-and-set notices the change; other stores ignore it.
 */
export interface NormalizedUpdateThread extends UpdateThreadArgs {
  workingMemoryVersion: string | undefined;
}

/** Marks an error thrown by the caller's `update` function so it propagates unchanged. */
class UpdateFunctionError {
  constructor(readonly error: unknown) {}
}

/**
 * The capabilities and the older capability fields of every `StoreBase`. They are accessors on
 * `StoreBase.prototype` (see the end of this file), declared here as properties so that a
 * subclass may declare any of them as a field or as a getter.
 */
export interface StoreBase {
  /**
   * What this store promises. Declare the keys that differ from `DEFAULT_CAPABILITIES`, e.g.
   * `override readonly capabilities = { ...DEFAULT_CAPABILITIES, atomicWorkingMemory: true }`
   * (a getter when it is only known once connected). Default: `DEFAULT_CAPABILITIES`, with
   * `atomicWorkingMemory` and `processLocal` taken from the older fields when a subclass declares
   * those instead.
   */
  readonly capabilities: StoreCapabilities;
  /** The older form of `capabilities.atomicWorkingMemory`; derived from it unless a subclass declares it. */
  readonly supportsAtomicWorkingMemoryMerge: boolean;
  /** The older form of `capabilities.processLocal`; derived from it unless a subclass declares it. */
  readonly processLocal: boolean;
}

/**
 * The base class of engram's adapters. Public methods validate and normalise their arguments
 * once, call the adapter's protected `do*` method, and turn anything the driver throws into a
 * `MemoryError` through the adapter's `toMemoryError`. Core composes `listMessages`,
 * `listThreads` and `updateWorkingMemoryAtomically` from primitives the adapter supplies
 * (`readMessagePage`, `readThreadPage`, and a `workingMemoryStrategy` only when it declares
 * `capabilities.atomicWorkingMemory`; otherwise `updateWorkingMemoryAtomically` rejects with
 * `UNSUPPORTED`, after validation); adapters implement the other `do*` methods.
 *
 * It also owns the lifecycle (see `StoreLifecycle`): every operation first awaits one memoised
 * `doInit()` (so `init()` is optional), and after `close()` every call rejects with `CONNECTION`.
 * `doInit()` runs once per successful open and `doClose()` at most once.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface's members are implemented as accessors on the prototype, below the class
export abstract class StoreBase implements MemoryStorage {
  abstract readonly name: string;

  private readonly lifecycle = new StoreLifecycle(
    () => this.name,
    () => this.run('init', () => this.doInit()),
    () => this.run('close', () => this.doClose()),
  );

  /** Turns a driver error into a `MemoryError` naming this adapter and the operation. */
  protected abstract toMemoryError(error: unknown, operation: string): MemoryError;

  protected abstract doInit(): Promise<void>;
  protected abstract doClose(): Promise<void>;
  protected abstract doGetThreadById(threadId: string, resourceId?: string): Promise<Thread | null>;
  /** Insert-only: throws `threadExists(…)` (`CONFLICT`) when the id is taken, atomically. */
  protected abstract doCreateThread(thread: Thread): Promise<Thread>;
  protected abstract doSaveThread(thread: Thread): Promise<Thread>;
  protected abstract doUpdateThread(args: NormalizedUpdateThread): Promise<Thread>;
  protected abstract doDeleteThread(threadId: string): Promise<void>;
  /**
   * The threads of one `listThreads` call: the page and a count, or, where the query cannot
   * compare metadata values exactly, every candidate in order (core filters and pages them).
   */
  protected abstract readThreadPage(query: NormalizedListThreads): Promise<ThreadRead>;
  /** Default: `readThreadPage`, composed into a page by core. */
  protected async doListThreads(args: NormalizedListThreads): Promise<ThreadPage> {
    return threadPage(await this.readThreadPage(args), args);
  }
  protected abstract doSaveMessages(messages: Message[]): Promise<Message[]>;
  /**
   * The reads behind one `listMessages` call: the page, the total and the include windows (in
   * one snapshot where the database allows it). Core merges, orders and pages them.
   */
  protected abstract readMessagePage(query: NormalizedListMessages): Promise<MessageRead>;
  /** Default: `readMessagePage`, composed into a page by core. */
  protected async doListMessages(args: NormalizedListMessages): Promise<MessagePage> {
    return messagePage(await this.readMessagePage(args), args);
  }
  protected abstract doListMessagesById(ids: string[]): Promise<Message[]>;
  protected abstract doUpdateMessages(patches: MessagePatch[]): Promise<Message[]>;
  protected abstract doDeleteMessages(ids: string[]): Promise<void>;
  protected abstract doGetResourceById(resourceId: string): Promise<Resource | null>;
  protected abstract doUpdateResource(args: UpdateResourceArgs): Promise<Resource>;
  /**
   * How this store makes working-memory updates atomic (see `WorkingMemoryStrategy`): core runs
   * it for `updateWorkingMemoryAtomically` when the store declares
   * `capabilities.atomicWorkingMemory`. A store may instead override the whole operation,
   * `doUpdateWorkingMemoryAtomically`, where its database does it faster (say, a server-side
   * merge), with the reason next to the override.
   */
  protected readonly workingMemoryStrategy?: WorkingMemoryStrategy;
  private workingMemoryRunner: WorkingMemoryRunner | undefined;

  /**
   * The atomic update; called only when the store declares `capabilities.atomicWorkingMemory`.
   * Default: runs `workingMemoryStrategy`.
   */
  protected doUpdateWorkingMemoryAtomically(args: NormalizedAtomicUpdate): Promise<string | null> {
    const strategy = this.workingMemoryStrategy;
    if (!strategy) throw unsupportedAtomic(this, false);
    const cell: WorkingMemoryCell =
      args.scope === 'resource'
        ? { scope: 'resource', resourceId: args.resourceId }
        : { scope: 'thread', threadId: args.threadId };
    this.workingMemoryRunner ??= new WorkingMemoryRunner(() => this.name);
    return this.workingMemoryRunner.run(strategy, cell, args.update);
  }

  /**
   * Refuses dates this backend cannot store (e.g. Oracle's years 1–9999) with `INVALID_ARGUMENT`.
   * Called with every date a write would store, after core's validation and before the store
   * opens, so such input is refused the same way whether or not the database is reachable.
   * Default: every valid `Date` is storable.
   */
  protected assertStorableDates(_dates: readonly (readonly [Date | undefined, string])[]): void {}

  /**
   * Runs an adapter operation, mapping every foreign error to a `MemoryError`. Every operation
   * but `init` and `close` first waits until the store is open (and rejects once it is closed).
   */
  protected async run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      if (operation !== 'init' && operation !== 'close') await this.lifecycle.ready(operation);
      return await fn();
    } catch (error) {
      if (error instanceof UpdateFunctionError) throw error.error;
      if (error instanceof MemoryError) throw error;
      throw this.toMemoryError(error, operation);
    }
  }

  /** The result of a call that needs no backend (an empty batch), unless the store is closed. */
  private async noop<T>(operation: string, value: T): Promise<T> {
    if (this.lifecycle.closed) throw storeClosedError(this.name, operation);
    return value;
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
    assertArgs(args, 'getThreadById');
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    return this.run('getThreadById', () => this.doGetThreadById(args.threadId, args.resourceId));
  }

  async createThread(thread: Thread): Promise<Thread> {
    assertThread(thread, 'createThread');
    this.assertStorableDates([
      [thread.createdAt, 'thread.createdAt'],
      [thread.updatedAt, 'thread.updatedAt'],
    ]);
    return this.run('createThread', () => this.doCreateThread(thread));
  }

  async saveThread(thread: Thread): Promise<Thread> {
    assertThread(thread, 'saveThread');
    this.assertStorableDates([
      [thread.createdAt, 'thread.createdAt'],
      [thread.updatedAt, 'thread.updatedAt'],
    ]);
    return this.run('saveThread', () => this.doSaveThread(thread));
  }

  async updateThread(args: UpdateThreadArgs): Promise<Thread> {
    assertArgs(args, 'updateThread');
    assertId(args.id, 'id');
    if (args.title !== undefined && typeof args.title !== 'string') {
      throw invalid(`title must be a string, got ${describe(args.title)}`);
    }
    if (args.title !== undefined) assertText(args.title, 'title', true);
    if (args.metadata !== undefined) assertJsonObject(args.metadata, 'metadata');
    const touchesMemory = args.metadata !== undefined && Object.hasOwn(args.metadata, 'workingMemory');
    const normalized: NormalizedUpdateThread = {
      ...args,
      workingMemoryVersion: touchesMemory ? newVersion() : undefined,
    };
    return this.run('updateThread', () => this.doUpdateThread(normalized));
  }

  async deleteThread(args: { threadId: string }): Promise<void> {
    assertArgs(args, 'deleteThread');
    assertId(args.threadId, 'threadId');
    return this.run('deleteThread', () => this.doDeleteThread(args.threadId));
  }

  async listThreads(args: ListThreadsArgs = {}): Promise<ThreadPage> {
    assertArgs(args, 'listThreads');
    assertOptionalId(args.resourceId, 'resourceId');
    if (args.metadata !== undefined) assertJsonObject(args.metadata, 'metadata');
    const paging = assertPaging(args.page, args.perPage, 100);
    if (args.orderBy !== undefined && args.orderBy !== 'createdAt' && args.orderBy !== 'updatedAt') {
      throw invalid(`orderBy must be 'createdAt' or 'updatedAt', got ${describe(args.orderBy)}`);
    }
    const normalized: NormalizedListThreads = {
      resourceId: args.resourceId,
      metadata: args.metadata,
      ...paging,
      orderBy: args.orderBy ?? 'createdAt',
      direction: assertDirection(args.direction, 'DESC'),
    };
    return this.run('listThreads', () => this.doListThreads(normalized));
  }

  async saveMessages(messages: Message[]): Promise<Message[]> {
    if (!Array.isArray(messages)) throw invalid(`messages must be an array, got ${describe(messages)}`);
    const seen = new Set<string>();
    messages.forEach((message, i) => {
      if (!isStorableMessage(message)) assertMessage(message, `messages[${i}]`);
      if (seen.has(message.id)) throw invalid(`message id ${JSON.stringify(message.id)} appears twice`);
      seen.add(message.id);
    });
    if (messages.length === 0) return this.noop('saveMessages', []);
    this.assertStorableDates(messages.map((m, i) => [m.createdAt, `messages[${i}].createdAt`] as const));
    return this.run('saveMessages', () => this.doSaveMessages(messages));
  }

  async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    assertArgs(args, 'listMessages');
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    const paging = assertPaging(args.page, args.perPage, 40);
    if (args.dateRange !== undefined) assertDateRange(args.dateRange);
    if (args.include !== undefined && !Array.isArray(args.include)) {
      throw invalid(`include must be an array, got ${describe(args.include)}`);
    }
    const include = (args.include ?? []).map((window, i): NormalizedInclude => {
      assertArgs(window, `include[${i}]`);
      assertId(window.id, `include[${i}].id`);
      return {
        id: window.id,
        withPreviousMessages:
          assertCount(window.withPreviousMessages, `include[${i}].withPreviousMessages`) ?? 0,
        withNextMessages: assertCount(window.withNextMessages, `include[${i}].withNextMessages`) ?? 0,
      };
    });
    const normalized: NormalizedListMessages = {
      threadId: args.threadId,
      resourceId: args.resourceId,
      ...paging,
      direction: assertDirection(args.direction, 'ASC'),
      dateRange: args.dateRange,
      include,
    };
    return this.run('listMessages', () => this.doListMessages(normalized));
  }

  async listMessagesById(args: { ids: string[] }): Promise<Message[]> {
    assertArgs(args, 'listMessagesById');
    assertIds(args.ids, 'ids');
    if (args.ids.length === 0) return this.noop('listMessagesById', []);
    return this.run('listMessagesById', () => this.doListMessagesById([...new Set(args.ids)]));
  }

  async updateMessages(patches: MessagePatch[]): Promise<Message[]> {
    if (!Array.isArray(patches)) throw invalid(`patches must be an array, got ${describe(patches)}`);
    patches.forEach((patch, i) => {
      assertPatch(patch, `patches[${i}]`);
    });
    if (patches.length === 0) return this.noop('updateMessages', []);
    this.assertStorableDates(patches.map((p, i) => [p.createdAt, `patches[${i}].createdAt`] as const));
    return this.run('updateMessages', () => this.doUpdateMessages(patches));
  }

  async deleteMessages(ids: string[]): Promise<void> {
    assertIds(ids, 'ids');
    if (ids.length === 0) return this.noop('deleteMessages', undefined);
    return this.run('deleteMessages', () => this.doDeleteMessages([...new Set(ids)]));
  }

  async getResourceById(args: { resourceId: string }): Promise<Resource | null> {
    assertArgs(args, 'getResourceById');
    assertId(args.resourceId, 'resourceId');
    return this.run('getResourceById', () => this.doGetResourceById(args.resourceId));
  }

  async updateResource(args: UpdateResourceArgs): Promise<Resource> {
    assertArgs(args, 'updateResource');
    assertId(args.resourceId, 'resourceId');
    if (
      args.workingMemory !== undefined &&
      args.workingMemory !== null &&
      typeof args.workingMemory !== 'string'
    ) {
      throw invalid(`workingMemory must be a string or null, got ${describe(args.workingMemory)}`);
    }
    if (typeof args.workingMemory === 'string') assertText(args.workingMemory, 'workingMemory', true);
    if (args.metadata !== undefined) assertJsonObject(args.metadata, 'metadata');
    return this.run('updateResource', () => this.doUpdateResource(args));
  }

  async updateWorkingMemoryAtomically(args: AtomicWorkingMemoryUpdate): Promise<string | null> {
    assertArgs(args, 'updateWorkingMemoryAtomically');
    if (typeof args.update !== 'function') throw invalid('update must be a function');
    const update = (current: string | null): string | null => {
      let next: unknown;
      try {
        next = args.update(current);
      } catch (error) {
        throw new UpdateFunctionError(error);
      }
      if (next !== null && typeof next !== 'string') {
        throw new UpdateFunctionError(invalid(`update must return a string or null, got ${describe(next)}`));
      }
      if (typeof next === 'string') {
        try {
          assertText(next, 'the working memory returned by update', true);
        } catch (error) {
          throw new UpdateFunctionError(error);
        }
      }
      return next;
    };
    let normalized: NormalizedAtomicUpdate;
    if (args.scope === 'resource') {
      assertId(args.resourceId, 'resourceId');
      normalized = { scope: 'resource', resourceId: args.resourceId, update };
    } else if (args.scope === 'thread') {
      assertId(args.threadId, 'threadId');
      normalized = { scope: 'thread', threadId: args.threadId, update };
    } else {
      throw invalid(`scope must be 'resource' or 'thread', got ${describe(args.scope)}`);
    }
    const implemented =
      this.workingMemoryStrategy !== undefined ||
      this.doUpdateWorkingMemoryAtomically !== StoreBase.prototype.doUpdateWorkingMemoryAtomically;
    if (!this.capabilities.atomicWorkingMemory || !implemented) throw unsupportedAtomic(this, implemented);
    assertOptionalId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    if (args.threadId !== undefined && args.resourceId !== undefined) {
      await ownedThread(this, 'updateWorkingMemoryAtomically', args.threadId, args.resourceId);
    }
    return this.run('updateWorkingMemoryAtomically', () => this.doUpdateWorkingMemoryAtomically(normalized));
  }
}

/** The value of `key` when a subclass (or the instance) declares it, else `undefined`. */
function declaredBelowBase(
  store: StoreBase,
  key: 'supportsAtomicWorkingMemoryMerge' | 'processLocal',
): unknown {
  for (let o: object | null = store; o !== null && o !== StoreBase.prototype; o = Object.getPrototypeOf(o)) {
    if (Object.hasOwn(o, key)) return store[key];
  }
  return undefined;
}

/** An accessor whose setter turns an assigned field into an own property of the instance. */
function overridable<K extends keyof StoreBase>(
  key: K,
  get: (store: StoreBase) => StoreBase[K],
): PropertyDescriptor {
  return {
    configurable: true,
    get(this: StoreBase) {
      return get(this);
    },
    set(this: StoreBase, value: StoreBase[K]) {
      Object.defineProperty(this, key, { value, enumerable: true, configurable: true, writable: true });
    },
  };
}

Object.defineProperties(StoreBase.prototype, {
  capabilities: overridable('capabilities', (store) => {
    const atomic = declaredBelowBase(store, 'supportsAtomicWorkingMemoryMerge');
    const local = declaredBelowBase(store, 'processLocal');
    return {
      ...DEFAULT_CAPABILITIES,
      ...(typeof atomic === 'boolean' ? { atomicWorkingMemory: atomic } : {}),
      ...(typeof local === 'boolean' ? { processLocal: local } : {}),
    };
  }),
  supportsAtomicWorkingMemoryMerge: overridable(
    'supportsAtomicWorkingMemoryMerge',
    (store) => store.capabilities.atomicWorkingMemory,
  ),
  processLocal: overridable('processLocal', (store) => store.capabilities.processLocal),
});

/** The `UNSUPPORTED` of `updateWorkingMemoryAtomically`, naming what the store lacks. */
function unsupportedAtomic(store: StoreBase, implemented: boolean): MemoryError {
  return new MemoryError(
    'UNSUPPORTED',
    `${store.name}: updateWorkingMemoryAtomically is not supported: the store declares capabilities.atomicWorkingMemory: ${store.capabilities.atomicWorkingMemory}${implemented ? '' : ' and implements no doUpdateWorkingMemoryAtomically (nor a workingMemoryStrategy)'}`,
    { adapter: store.name, details: { operation: 'updateWorkingMemoryAtomically' } },
  );
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

function assertArgs(args: unknown, operation: string): void {
  if (!isPlainObject(args)) throw invalid(`${operation} expects an arguments object, got ${describe(args)}`);
}

/**
 * Validates `page` and `perPage` (each an integer from 0 to `MAX_LISTING_COUNT`, `perPage` also
 * `false`) and their row offset `page × perPage`, which must not pass `MAX_LISTING_COUNT` either.
 */
function assertPaging(
  page: unknown,
  perPage: unknown,
  defaultPerPage: number,
): { page: number; perPage: number | false } {
  const p = assertCount(page, 'page') ?? 0;
  const size = perPage === false ? false : (assertCount(perPage, 'perPage') ?? defaultPerPage);
  if (size !== false && p * size > MAX_LISTING_COUNT) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `page × perPage (the row offset) must be at most ${MAX_LISTING_COUNT}, got ${p} × ${size}; with perPage ${size}, page is at most ${Math.floor(MAX_LISTING_COUNT / size)}`,
      { details: { field: 'page', min: 0, max: Math.floor(MAX_LISTING_COUNT / size) } },
    );
  }
  return { page: p, perPage: size };
}

function assertDirection(direction: unknown, fallback: Direction): Direction {
  if (direction === undefined) return fallback;
  if (direction !== 'ASC' && direction !== 'DESC') {
    throw invalid(`direction must be 'ASC' or 'DESC', got ${describe(direction)}`);
  }
  return direction;
}

function assertDateRange(range: unknown): asserts range is DateRange {
  assertArgs(range, 'dateRange');
  const { start, end } = range as DateRange;
  if (start !== undefined) assertDate(start, 'dateRange.start');
  if (end !== undefined) assertDate(end, 'dateRange.end');
}

function assertThread(thread: unknown, operation: string): asserts thread is Thread {
  assertArgs(thread, operation);
  const t = thread as Thread;
  assertId(t.id, 'thread.id');
  assertId(t.resourceId, 'thread.resourceId');
  if (typeof t.title !== 'string') throw invalid(`thread.title must be a string, got ${describe(t.title)}`);
  assertText(t.title, 'thread.title', true);
  assertJsonObject(t.metadata, 'thread.metadata');
  assertWorkingMemoryField(t.metadata);
  assertDate(t.createdAt, 'thread.createdAt');
  assertDate(t.updatedAt, 'thread.updatedAt');
}

/** Thread-scoped working memory must be a string (or null) where it is stored. */
export function assertWorkingMemoryField(metadata: JsonObject): void {
  const value = metadata.workingMemory;
  if (value !== undefined && value !== null && typeof value !== 'string') {
    throw invalid(`metadata.workingMemory must be a string, got ${describe(value)}`);
  }
}

/**
 * True for a message `assertMessage` accepts, checked without building a field name per check:
 * a batch of valid messages (the usual case) costs no strings; anything else goes through
 * `assertMessage`, which names the problem.
 */
function isStorableMessage(message: unknown): message is Message {
  if (!isPlainObject(message)) return false;
  const m = message as unknown as Message;
  return (
    isStorableId(m.id) &&
    isStorableId(m.threadId) &&
    isStorableId(m.resourceId) &&
    ROLES.has(m.role) &&
    m.content !== undefined &&
    isStorableJson(m.content, 0) &&
    typeof m.type === 'string' &&
    isStorableText(m.type, true) &&
    m.createdAt instanceof Date &&
    !Number.isNaN(m.createdAt.getTime())
  );
}

function assertMessage(message: unknown, field: string): asserts message is Message {
  assertArgs(message, field);
  const m = message as Message;
  assertId(m.id, `${field}.id`);
  assertId(m.threadId, `${field}.threadId`);
  assertId(m.resourceId, `${field}.resourceId`);
  if (!ROLES.has(m.role)) throw invalid(`${field}.role must be user, assistant, system or tool`);
  if (m.content === undefined) throw invalid(`${field}.content is missing`);
  assertJson(m.content, `${field}.content`);
  if (typeof m.type !== 'string') throw invalid(`${field}.type must be a string, got ${describe(m.type)}`);
  assertText(m.type, `${field}.type`, true);
  assertDate(m.createdAt, `${field}.createdAt`);
}

function assertPatch(patch: unknown, field: string): asserts patch is MessagePatch {
  assertArgs(patch, field);
  const p = patch as MessagePatch;
  assertId(p.id, `${field}.id`);
  if (p.role !== undefined && !ROLES.has(p.role)) {
    throw invalid(`${field}.role must be user, assistant, system or tool`);
  }
  if (p.content !== undefined) assertJson(p.content, `${field}.content`);
  if (p.type !== undefined && typeof p.type !== 'string') throw invalid(`${field}.type must be a string`);
  if (p.type !== undefined) assertText(p.type, `${field}.type`, true);
  if (p.createdAt !== undefined) assertDate(p.createdAt, `${field}.createdAt`);
  for (const key of ['threadId', 'resourceId']) {
    if (Object.hasOwn(p, key)) {
      throw invalid(`${field}.${key}: updateMessages cannot move a message; save it again with saveMessages`);
    }
  }
}
