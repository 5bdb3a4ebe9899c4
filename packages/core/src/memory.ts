import { randomUUID } from 'node:crypto';
import { MemoryError } from './errors.ts';
import { type MemoryOptions, type ResolvedMemoryOptions, resolveMemoryOptions } from './memory-options.ts';
import type { ListThreadsArgs, MemoryStorage, ThreadPage } from './storage/contract.ts';
import type { JsonObject, Message, Thread, WorkingMemoryScope } from './storage/records.ts';
import { assertId, assertJsonObject, assertOptionalId, describe, isPlainObject } from './storage/validate.ts';
import { fallbackLockFor } from './working-memory/fallback-lock.ts';
import { mergeWorkingMemory, parsePatch } from './working-memory/merge.ts';
import { type ResolvedSchema, resolveSchema, type SchemaCheck } from './working-memory/schema.ts';
import { defaultWorkingMemoryTemplate } from './working-memory/template.ts';

/** A message to save: `id` (a UUID), `createdAt` and `type` (`'text'`) may be left out. */
export type MessageInput = Omit<Message, 'id' | 'createdAt' | 'type'> & {
  id?: string;
  createdAt?: Date;
  type?: string;
};

/** Which working memory a call addresses; which id is needed depends on the configured scope. */
export interface WorkingMemoryTarget {
  /** Needed for thread scope (the thread must exist). */
  threadId?: string;
  /** Needed for resource scope. When both ids are given they must agree. */
  resourceId?: string;
}

/** Per-call switch: `readOnly: true` refuses the write even if the memory allows writes. */
export interface WriteControl {
  readOnly?: boolean;
}

/** The working-memory template as shown to a model. */
export interface WorkingMemoryTemplate {
  format: 'markdown' | 'json';
  /** The Markdown template, or the JSON Schema of the document as a string. */
  content: string;
}

/** Arguments of `new Memory(…)`. */
export interface MemoryConfig {
  storage: MemoryStorage;
  options?: MemoryOptions;
}

type Location =
  | { scope: 'resource'; resourceId: string }
  | { scope: 'thread'; threadId: string; thread: Thread };

type Edit = (current: string | null) => string | null;

/** Thrown inside an atomic update to abandon it (nothing is written). */
class Abandon {
  constructor(readonly reason: 'stale' | 'async') {}
}

let lastStamp = 0;

/** Strictly increasing timestamps within this process (ms). */
function nextStamp(): Date {
  const now = Date.now();
  lastStamp = now > lastStamp ? now : lastStamp + 1;
  return new Date(lastStamp);
}

/**
 * Threads, messages and working memory on top of any `MemoryStorage`.
 *
 * Working memory is a Markdown document (template mode, replace semantics) or a JSON object
 * checked by a schema (schema mode, merge semantics), kept per resource (default) or per thread.
 */
export class Memory {
  /** The storage given at construction. */
  readonly storage: MemoryStorage;
  /** The options with every default filled in. */
  readonly options: ResolvedMemoryOptions;
  private readonly schema: ResolvedSchema | null;
  private asyncSchema = false;

  /**
   * Throws `INVALID_ARGUMENT` for bad options (for example both `template` and `schema`, or a
   * schema that is neither a Standard Schema nor a JSON Schema object) and `UNSUPPORTED` for
   * `semanticRecall`, which is not available yet.
   */
  constructor(config: MemoryConfig) {
    if (typeof config !== 'object' || config === null) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `new Memory expects { storage, options? }, got ${describe(config)}`,
      );
    }
    const storage = config.storage;
    if (typeof storage !== 'object' || storage === null || typeof storage.getThreadById !== 'function') {
      throw new MemoryError('INVALID_ARGUMENT', 'new Memory needs a storage implementing MemoryStorage');
    }
    this.storage = storage;
    this.options = resolveMemoryOptions(config.options);
    const source = this.options.workingMemory.schema;
    this.schema = source === undefined ? null : resolveSchema(source);
  }

  // ── threads ────────────────────────────────────────────────────────────────────────────────

  /**
   * Creates (or overwrites, keeping its `createdAt`) a thread. `threadId` defaults to a UUID;
   * `metadata.workingMemory` is the thread's initial thread-scoped working memory. A thread id
   * already used by another resource is refused with `CONFLICT`.
   */
  async createThread(
    args: { resourceId: string; threadId?: string; title?: string; metadata?: JsonObject } & WriteControl,
  ): Promise<Thread> {
    assertArgs(args, 'createThread');
    assertId(args.resourceId, 'resourceId');
    assertOptionalId(args.threadId, 'threadId');
    if (args.title !== undefined && typeof args.title !== 'string') {
      throw invalid(`title must be a string, got ${describe(args.title)}`);
    }
    const metadata = args.metadata ?? {};
    assertJsonObject(metadata, 'metadata');
    if (Object.hasOwn(metadata, 'workingMemory')) this.assertWritable(args.readOnly, 'createThread');
    const id = args.threadId ?? randomUUID();
    const existing = args.threadId === undefined ? null : await this.storage.getThreadById({ threadId: id });
    if (existing && existing.resourceId !== args.resourceId) {
      throw new MemoryError('CONFLICT', `thread ${JSON.stringify(id)} already exists for another resource`);
    }
    const now = new Date();
    return this.storage.saveThread({
      id,
      resourceId: args.resourceId,
      title: args.title ?? '',
      metadata,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    });
  }

  /** The thread, or `null` when absent or (with `resourceId`) owned by another resource. */
  async getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    assertArgs(args, 'getThreadById');
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    return this.storage.getThreadById(args);
  }

  /**
   * Updates the title and shallow-merges `metadata` (so `metadata.workingMemory` replaces the
   * thread-scoped working memory). `NOT_FOUND` when the thread is absent.
   */
  async updateThread(
    args: { id: string; title?: string; metadata?: JsonObject } & WriteControl,
  ): Promise<Thread> {
    assertArgs(args, 'updateThread');
    assertId(args.id, 'id');
    if (isPlainObject(args.metadata) && Object.hasOwn(args.metadata, 'workingMemory')) {
      this.assertWritable(args.readOnly, 'updateThread');
    }
    const { readOnly: _readOnly, ...rest } = args;
    return this.storage.updateThread(rest);
  }

  /** Deletes a thread and its messages. Absent threads are ignored. */
  async deleteThread(threadId: string): Promise<void> {
    assertId(threadId, 'threadId');
    return this.storage.deleteThread({ threadId });
  }

  /** Lists threads; see `ListThreadsArgs` for filters, paging and order. */
  listThreads(args: ListThreadsArgs = {}): Promise<ThreadPage> {
    return this.storage.listThreads(args);
  }

  // ── messages ───────────────────────────────────────────────────────────────────────────────

  /**
   * Saves messages (upsert by id, all-or-nothing). Missing ids become UUIDs, a missing `type`
   * becomes `'text'`, and messages without `createdAt` get strictly increasing timestamps in
   * batch order (also increasing across calls in this process).
   */
  async saveMessages(args: { messages: MessageInput[] }): Promise<Message[]> {
    assertArgs(args, 'saveMessages');
    if (!Array.isArray(args.messages)) {
      throw invalid(`messages must be an array, got ${describe(args.messages)}`);
    }
    const messages = args.messages.map((message, i): Message => {
      if (!isPlainObject(message))
        throw invalid(`messages[${i}] must be an object, got ${describe(message)}`);
      return {
        id: message.id ?? randomUUID(),
        threadId: message.threadId,
        resourceId: message.resourceId,
        role: message.role,
        content: message.content,
        type: message.type ?? 'text',
        createdAt: message.createdAt ?? nextStamp(),
      };
    });
    return this.storage.saveMessages(messages);
  }

  /**
   * The newest `last` messages of a thread (default `options.lastMessages`; `false` for all),
   * in chronological order.
   */
  async recall(args: { threadId: string; resourceId?: string; last?: number | false }): Promise<Message[]> {
    assertArgs(args, 'recall');
    const last = args.last ?? this.options.lastMessages;
    if (last !== false && (typeof last !== 'number' || !Number.isInteger(last) || last < 0)) {
      throw invalid(`last must be a non-negative integer or false, got ${describe(last)}`);
    }
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    if (last === 0) return [];
    const page = await this.storage.listMessages({
      threadId: args.threadId,
      resourceId: args.resourceId,
      perPage: last,
      direction: last === false ? 'ASC' : 'DESC',
    });
    return last === false ? page.messages : page.messages.reverse();
  }

  /** Alias of `recall`. */
  getMessages(args: { threadId: string; resourceId?: string; last?: number | false }): Promise<Message[]> {
    return this.recall(args);
  }

  // ── working memory ─────────────────────────────────────────────────────────────────────────

  /** The stored working memory of the configured scope, or `null` when none was written. */
  async getWorkingMemory(args: WorkingMemoryTarget): Promise<string | null> {
    this.assertEnabled('getWorkingMemory');
    const location = await this.locate(args, 'getWorkingMemory');
    if (location.scope === 'thread') return threadMemory(location.thread);
    return this.read(location);
  }

  /**
   * Replaces the working memory of the configured scope. In schema mode the string must hold
   * a JSON object that passes the schema (`VALIDATION` otherwise, nothing written).
   */
  async updateWorkingMemory(
    args: WorkingMemoryTarget & WriteControl & { workingMemory: string },
  ): Promise<void> {
    this.assertEnabled('updateWorkingMemory');
    this.assertWritable(args?.readOnly, 'updateWorkingMemory');
    assertArgs(args, 'updateWorkingMemory');
    const value = args.workingMemory;
    if (typeof value !== 'string') throw invalid(`workingMemory must be a string, got ${describe(value)}`);
    if (this.schema) {
      const document = parsePatch(value);
      throwIfInvalid(await this.schema.validate(document));
    }
    const location = await this.locate(args, 'updateWorkingMemory');
    await this.edit(location, () => value);
  }

  /**
   * Merges a partial object into the JSON working memory (see `mergeWorkingMemory` for the
   * rules) in one atomic storage operation, and returns the stored document. Needs schema mode
   * and a storage declaring `supportsAtomicWorkingMemoryMerge`, else `UNSUPPORTED`; works for
   * both scopes. `VALIDATION` when the merged document fails the schema (nothing written).
   */
  async mergeWorkingMemory(
    args: WorkingMemoryTarget & WriteControl & { workingMemory: object | string },
  ): Promise<JsonObject> {
    this.assertEnabled('mergeWorkingMemory');
    this.assertWritable(args?.readOnly, 'mergeWorkingMemory');
    this.requireSchema('mergeWorkingMemory');
    if (!this.storageIsAtomic()) {
      throw new MemoryError(
        'UNSUPPORTED',
        `mergeWorkingMemory needs a storage with atomic working-memory updates; ${JSON.stringify(this.storage.name)} does not declare supportsAtomicWorkingMemoryMerge (check memory.supportsAtomicWorkingMemoryMerge() first, or use applyWorkingMemoryPatch, which serialises writers within this process only)`,
      );
    }
    assertArgs(args, 'mergeWorkingMemory');
    return this.patch(args, args.workingMemory, 'mergeWorkingMemory');
  }

  /**
   * Like `mergeWorkingMemory`, but also on a storage without atomic support: there, writers
   * are serialised per `(scope, id)` inside this process only, and writers in other processes
   * can still interleave. This is what schema-mode tool updates use.
   */
  async applyWorkingMemoryPatch(
    args: WorkingMemoryTarget & WriteControl & { patch: object | string },
  ): Promise<JsonObject> {
    this.assertEnabled('applyWorkingMemoryPatch');
    this.assertWritable(args?.readOnly, 'applyWorkingMemoryPatch');
    this.requireSchema('applyWorkingMemoryPatch');
    assertArgs(args, 'applyWorkingMemoryPatch');
    return this.patch(args, args.patch, 'applyWorkingMemoryPatch');
  }

  /**
   * Atomic read-modify-write of the working memory of the configured scope: `edit` receives the
   * stored value and returns the new one (it must be pure; it may run more than once). Uses the
   * storage's `updateWorkingMemoryAtomically` when supported, else the in-process fallback lock.
   * If `edit` throws, nothing is written and the error propagates. Returns the stored value.
   */
  async editWorkingMemory(args: WorkingMemoryTarget & WriteControl & { edit: Edit }): Promise<string | null> {
    this.assertEnabled('editWorkingMemory');
    this.assertWritable(args?.readOnly, 'editWorkingMemory');
    assertArgs(args, 'editWorkingMemory');
    if (typeof args.edit !== 'function') throw invalid('edit must be a function');
    const location = await this.locate(args, 'editWorkingMemory');
    return this.edit(location, args.edit);
  }

  /** `true` when the storage promises atomic working-memory updates across processes. */
  async supportsAtomicWorkingMemoryMerge(): Promise<boolean> {
    return this.storageIsAtomic();
  }

  /** The Markdown template (or the default one), or in schema mode the JSON Schema as a string. */
  async getWorkingMemoryTemplate(): Promise<WorkingMemoryTemplate> {
    if (this.schema) return { format: 'json', content: JSON.stringify(this.schema.jsonSchema) };
    return {
      format: 'markdown',
      content: this.options.workingMemory.template ?? defaultWorkingMemoryTemplate,
    };
  }

  /** The resolved schema (validator and JSON Schema) in schema mode, else `null`. */
  getWorkingMemorySchema(): ResolvedSchema | null {
    return this.schema;
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────

  private storageIsAtomic(): boolean {
    return (
      this.storage.supportsAtomicWorkingMemoryMerge === true &&
      typeof this.storage.updateWorkingMemoryAtomically === 'function'
    );
  }

  private assertEnabled(operation: string): void {
    if (!this.options.workingMemory.enabled) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation}: working memory is disabled; set options.workingMemory.enabled to true`,
      );
    }
  }

  private assertWritable(readOnly: unknown, operation: string): void {
    if (readOnly !== undefined && typeof readOnly !== 'boolean') {
      throw invalid(`readOnly must be a boolean, got ${describe(readOnly)}`);
    }
    if (this.options.readOnly || readOnly === true) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation}: working memory is read-only here${this.options.readOnly ? ' (options.readOnly)' : ' (readOnly: true)'}; nothing was written`,
      );
    }
  }

  private requireSchema(operation: string): ResolvedSchema {
    if (!this.schema) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation} works in schema mode only (options.workingMemory.schema); template mode replaces the whole document with updateWorkingMemory`,
      );
    }
    return this.schema;
  }

  /** Resolves the ids to the storage location of the configured scope, checking ownership. */
  private async locate(args: WorkingMemoryTarget, operation: string): Promise<Location> {
    assertArgs(args, operation);
    const { threadId, resourceId } = args;
    assertOptionalId(threadId, 'threadId');
    assertOptionalId(resourceId, 'resourceId');
    const scope: WorkingMemoryScope = this.options.workingMemory.scope;
    if (scope === 'resource') {
      if (resourceId === undefined) {
        throw invalid(`${operation}: resource-scoped working memory needs a resourceId`);
      }
      if (threadId !== undefined) {
        const thread = await this.storage.getThreadById({ threadId });
        if (thread && thread.resourceId !== resourceId) throw notOwned(threadId, resourceId);
      }
      return { scope, resourceId };
    }
    if (threadId === undefined) throw invalid(`${operation}: thread-scoped working memory needs a threadId`);
    const thread = await this.storage.getThreadById({ threadId });
    if (!thread) throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
    if (resourceId !== undefined && thread.resourceId !== resourceId) throw notOwned(threadId, resourceId);
    return { scope, threadId, thread };
  }

  private async read(location: Location): Promise<string | null> {
    if (location.scope === 'resource') {
      const resource = await this.storage.getResourceById({ resourceId: location.resourceId });
      return resource?.workingMemory ?? null;
    }
    const thread = await this.storage.getThreadById({ threadId: location.threadId });
    if (!thread)
      throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(location.threadId)} does not exist`);
    return threadMemory(thread);
  }

  private async write(location: Location, value: string | null): Promise<void> {
    if (location.scope === 'resource') {
      await this.storage.updateResource({ resourceId: location.resourceId, workingMemory: value });
    } else {
      await this.storage.updateThread({ id: location.threadId, metadata: { workingMemory: value } });
    }
  }

  /** One read-modify-write: atomic in storage when supported, else under the fallback lock. */
  private edit(location: Location, edit: Edit): Promise<string | null> {
    const checked: Edit = (current) => {
      const next: unknown = edit(current);
      if (next !== null && typeof next !== 'string') {
        throw invalid(`edit must return a string or null, got ${describe(next)}`);
      }
      return next;
    };
    if (this.storageIsAtomic()) {
      const update = this.storage.updateWorkingMemoryAtomically!.bind(this.storage);
      return location.scope === 'resource'
        ? update({ scope: 'resource', resourceId: location.resourceId, update: checked })
        : update({ scope: 'thread', threadId: location.threadId, update: checked });
    }
    const id = location.scope === 'resource' ? location.resourceId : location.threadId;
    return fallbackLockFor(this.storage).run(location.scope, id, async () => {
      const next = checked(await this.read(location));
      await this.write(location, next);
      return next;
    });
  }

  private async patch(
    target: WorkingMemoryTarget,
    rawPatch: unknown,
    operation: string,
  ): Promise<JsonObject> {
    const schema = this.requireSchema(operation);
    const patch = parsePatch(rawPatch);
    const location = await this.locate(target, operation);
    if (!this.asyncSchema) {
      let merged: JsonObject = {};
      try {
        await this.edit(location, (current) => {
          merged = mergeWorkingMemory(current, patch);
          const check = schema.validate(merged);
          if (isThenable(check)) {
            check.then(undefined, () => undefined);
            throw new Abandon('async');
          }
          throwIfInvalid(check);
          return JSON.stringify(merged);
        });
        return merged;
      } catch (error) {
        if (!(error instanceof Abandon)) throw error;
        this.asyncSchema = true;
      }
    }
    // Async schemas cannot run inside a storage transaction: validate the merge of the value
    // just read, then write it only if the stored value is still the same (bounded retries).
    for (let attempt = 0; attempt < 20; attempt++) {
      const current = await this.read(location);
      const merged = mergeWorkingMemory(current, patch);
      throwIfInvalid(await schema.validate(merged));
      const text = JSON.stringify(merged);
      try {
        await this.edit(location, (now) => {
          if (now !== current) throw new Abandon('stale');
          return text;
        });
        return merged;
      } catch (error) {
        if (!(error instanceof Abandon)) throw error;
      }
    }
    throw new MemoryError(
      'CONFLICT',
      `${operation}: the working memory kept changing; gave up after 20 attempts`,
    );
  }
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

function notOwned(threadId: string, resourceId: string): MemoryError {
  return invalid(
    `thread ${JSON.stringify(threadId)} does not belong to resource ${JSON.stringify(resourceId)}`,
  );
}

function assertArgs(args: unknown, operation: string): asserts args is Record<string, unknown> {
  if (!isPlainObject(args)) throw invalid(`${operation} expects an arguments object, got ${describe(args)}`);
}

function threadMemory(thread: Thread): string | null {
  const value = thread.metadata.workingMemory;
  return typeof value === 'string' ? value : null;
}

function throwIfInvalid(check: SchemaCheck): void {
  if (!check.ok) {
    throw new MemoryError(
      'VALIDATION',
      `working memory does not match the schema: ${check.issues.join('; ')}`,
      { details: { issues: check.issues } },
    );
  }
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
