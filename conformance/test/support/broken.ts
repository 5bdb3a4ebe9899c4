import {
  compareIds,
  isMemoryError,
  type JsonObject,
  type JsonValue,
  type ListMessagesArgs,
  MAX_LISTING_COUNT,
  MemoryError,
  type Message,
  type MessagePage,
  mergeMessageLists,
  pageInfo,
  type Resource,
  type Thread,
} from '@engram/core/driver';
import { BreakableMemoryStore, leakyCredentialError } from './breakable.ts';
import { JsonStore } from './json-store.ts';

/**
 * Deliberately broken stores. Each keeps the reference behaviour except for one defect, and
 * the meta-tests assert that the suite catches it in the area named.
 */

/** (a) Claims atomic working-memory merges, but reads, awaits, then writes. */
export function brokenAtomicStore(file: string): JsonStore {
  return new JsonStore({ file, vectors: false, defect: 'atomic' });
}

/** (b) Include windows ignore `resourceId`, leaking other resources' messages. */
export class LeakyIncludeStore extends BreakableMemoryStore {
  override async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    const page = await super.listMessages(args);
    if (!args.include?.length || args.resourceId === undefined) return page;
    const unrestricted = await super.listMessages({ ...args, resourceId: undefined, page: 0, perPage: 0 });
    return {
      ...page,
      messages: mergeMessageLists([page.messages, unrestricted.messages], args.direction ?? 'ASC'),
    };
  }
}

const emptyPage = { total: 0, page: 0, hasMore: false };

/** Returns `fallback` instead of a backend failure; argument errors still throw. */
function swallow<T>(fallback: T): (error: unknown) => T {
  return (error) => {
    if (isMemoryError(error, 'STORAGE') || isMemoryError(error, 'CONNECTION')) return fallback;
    throw error;
  };
}

/** (c) Swallows read errors: a broken backend reads as "nothing there". */
export class SwallowingStore extends BreakableMemoryStore {
  override async getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    return super.getThreadById(args).catch(swallow(null));
  }
  override async listThreads(args: Parameters<BreakableMemoryStore['listThreads']>[0] = {}) {
    const empty = { threads: [], ...emptyPage, perPage: args.perPage ?? 100 };
    return super.listThreads(args).catch(swallow(empty));
  }
  override async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    const empty = { messages: [], ...emptyPage, perPage: args.perPage ?? 40 };
    return super.listMessages(args).catch(swallow(empty));
  }
  override async listMessagesById(args: { ids: string[] }) {
    return super.listMessagesById(args).catch(swallow([]));
  }
  override async getResourceById(args: { resourceId: string }): Promise<Resource | null> {
    return super.getResourceById(args).catch(swallow(null));
  }
}

/** Applies `fix` to every record a store hands out. */
abstract class RewritingStore extends BreakableMemoryStore {
  protected abstract rewrite(record: Record<string, unknown>): Record<string, unknown>;

  private out<T>(value: T): T {
    const walk = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(walk);
      if (v && typeof v === 'object' && !(v instanceof Date)) {
        const record = v as Record<string, unknown>;
        const mapped = 'id' in record && 'createdAt' in record ? this.rewrite({ ...record }) : { ...record };
        for (const key of ['threads', 'messages'])
          if (Array.isArray(mapped[key])) mapped[key] = walk(mapped[key]);
        return mapped;
      }
      return v;
    };
    return walk(value) as T;
  }

  override async getThreadById(args: { threadId: string; resourceId?: string }) {
    return this.out(await super.getThreadById(args));
  }
  override async saveThread(thread: Thread) {
    return this.out(await super.saveThread(thread));
  }
  override async updateThread(args: Parameters<BreakableMemoryStore['updateThread']>[0]) {
    return this.out(await super.updateThread(args));
  }
  override async listThreads(args: Parameters<BreakableMemoryStore['listThreads']>[0] = {}) {
    return this.out(await super.listThreads(args));
  }
  override async saveMessages(messages: Parameters<BreakableMemoryStore['saveMessages']>[0]) {
    return this.out(await super.saveMessages(messages));
  }
  override async listMessages(args: ListMessagesArgs) {
    return this.out(await super.listMessages(args));
  }
  override async listMessagesById(args: { ids: string[] }) {
    return this.out(await super.listMessagesById(args));
  }
  override async updateMessages(patches: Parameters<BreakableMemoryStore['updateMessages']>[0]) {
    return this.out(await super.updateMessages(patches));
  }
  override async getResourceById(args: { resourceId: string }) {
    return this.out(await super.getResourceById(args));
  }
  override async updateResource(args: Parameters<BreakableMemoryStore['updateResource']>[0]) {
    return this.out(await super.updateResource(args));
  }
}

/** (d) Returns dates as ISO strings, the way a careless JSON column would. */
export class StringDatesStore extends RewritingStore {
  protected rewrite(record: Record<string, unknown>) {
    for (const key of ['createdAt', 'updatedAt']) {
      if (record[key] instanceof Date) record[key] = (record[key] as Date).toISOString();
    }
    return record;
  }
}

/** (e) Loses empty strings: `''` title and working memory come back as null/undefined. */
export class LosesEmptyStringsStore extends RewritingStore {
  protected rewrite(record: Record<string, unknown>) {
    if (record.title === '') record.title = null;
    if (record.workingMemory === '') record.workingMemory = null;
    const metadata = record.metadata as Record<string, unknown> | undefined;
    if (metadata && metadata.workingMemory === '') {
      const { workingMemory: _dropped, ...rest } = metadata;
      record.metadata = rest;
    }
    return record;
  }
}

// Further defects, beyond the five the suite is required to catch.

/** (f) `listThreads` matches resource ids by prefix, like an unescaped `LIKE 'r1%'`. */
export class PrefixMatchStore extends BreakableMemoryStore {
  override async listThreads(args: Parameters<BreakableMemoryStore['listThreads']>[0] = {}) {
    if (args.resourceId === undefined) return super.listThreads(args);
    const prefix = args.resourceId;
    const all = await super.listThreads({ ...args, resourceId: undefined, page: 0, perPage: false });
    const threads = all.threads.filter((t) => t.resourceId.startsWith(prefix));
    const perPage = args.perPage ?? 100;
    const page = args.page ?? 0;
    const shown = perPage === false ? threads : threads.slice(page * perPage, (page + 1) * perPage);
    return { ...pageInfo(threads.length, page, perPage), threads: shown };
  }
}

/** (g) Messages with equal `createdAt` come back in no defined order (here: id descending). */
export class UnorderedTiesStore extends BreakableMemoryStore {
  override async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    const page = await super.listMessages(args);
    const sign = args.direction === 'DESC' ? -1 : 1;
    const messages = [...page.messages].sort(
      (a, b) => sign * (a.createdAt.getTime() - b.createdAt.getTime()) || compareIds(b.id, a.id),
    );
    return { ...page, messages };
  }
}

/** (h) Date-range bounds are always inclusive: `startExclusive`/`endExclusive` are ignored. */
export class InclusiveRangeStore extends BreakableMemoryStore {
  override async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    if (!args.dateRange) return super.listMessages(args);
    const { start, end } = args.dateRange;
    return super.listMessages({ ...args, dateRange: { start, end } });
  }
}

/** Yields to the event loop, so concurrent callers interleave like network round trips. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** (i) `createThread` as a read, then a write: every concurrent creator of an id succeeds. */
export class CheckThenWriteStore extends BreakableMemoryStore {
  override async createThread(thread: Thread): Promise<Thread> {
    if (await this.getThreadById({ threadId: thread.id })) {
      throw new MemoryError('CONFLICT', `thread ${thread.id} exists`, { adapter: this.name });
    }
    await tick();
    return this.saveThread(thread);
  }
}

/**
 * (j) Checks message ownership with a read before the write, then yields and overwrites
 * whatever is stored: right one call at a time, wrong under concurrency.
 */
export class RacyOwnershipStore extends BreakableMemoryStore {
  override async saveMessages(messages: Message[]): Promise<Message[]> {
    // Thread refusals come first, as the contract orders them: leave those to the reference.
    const threads = await Promise.all(messages.map((m) => this.getThreadById({ threadId: m.threadId })));
    if (threads.some((t, i) => t?.resourceId !== messages[i]?.resourceId))
      return super.saveMessages(messages);
    const stored = await this.listMessagesById({ ids: messages.map((m) => m.id) });
    for (const m of stored) {
      if (messages.some((n) => n.id === m.id && n.resourceId !== m.resourceId)) {
        throw new MemoryError('CONFLICT', `message ${m.id} is taken`, { adapter: this.name });
      }
    }
    await tick();
    for (const m of messages) this.maps.messages.delete(m.id);
    return super.saveMessages(messages);
  }
}

/** (f) Keeps working after `close()`, as if it had nothing to release. */
export class ImmortalStore extends BreakableMemoryStore {
  override async close(): Promise<void> {}
}

/** (g) Puts the messages it failed to save into the error message, as a raw driver error would. */
export class LeakyErrorStore extends BreakableMemoryStore {
  override async saveMessages(messages: Message[]): Promise<Message[]> {
    try {
      return await super.saveMessages(messages);
    } catch (error) {
      if (!isMemoryError(error)) throw error;
      throw new MemoryError(error.code, `${error.message}, command was: ${JSON.stringify(messages)}`);
    }
  }
}

/**
 * (i) A store configured with a token whose errors keep the driver's error as their cause as
 * is: the message is redacted, but the cause names the token.
 */
export class LeakyCredentialsStore extends BreakableMemoryStore {
  constructor(token: string) {
    super();
    this.driver.failure = () => leakyCredentialError(token);
  }
}

/** (h) Passes any integer page on to the backend (here: answers an empty page, like a lie). */
export class UnboundedPageStore extends BreakableMemoryStore {
  override async listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    if (typeof args.page !== 'number' || !Number.isInteger(args.page) || args.page <= MAX_LISTING_COUNT) {
      return super.listMessages(args);
    }
    const page = await super.listMessages({ ...args, page: 0 });
    return { ...page, messages: [], page: args.page, hasMore: false };
  }
}

/** Equal as a server comparing documents by their values alone, in order, would see them. */
function keylessSame(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => keylessSame(v, b[i]))
    );
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const av = Object.values(a);
    const bv = Object.values(b);
    return av.length === bv.length && av.every((v, i) => keylessSame(v, bv[i]));
  }
  return a === b;
}

/** Keeps `stored[key]` wherever `patch[key]` holds the same values under other keys (the write is "a no-op"). */
function keepKeyless(stored: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(patch)) {
    const old = stored[key];
    out[key] = Object.hasOwn(stored, key) && keylessSame(old, value) ? (old as JsonValue) : value;
  }
  return out;
}

/**
 * (i) Takes a nested value replaced by one holding the same values under other keys for a no-op
 * (FerretDB 1.x's `$set`), in thread and resource metadata and message content, yet reports success.
 */
export class KeylessCompareStore extends BreakableMemoryStore {
  override async saveThread(thread: Thread) {
    const stored = await super.getThreadById({ threadId: thread.id });
    if (stored && keylessSame(stored.metadata, thread.metadata)) {
      await super.saveThread({ ...thread, metadata: stored.metadata });
      return thread;
    }
    return super.saveThread(thread);
  }
  override async updateThread(args: Parameters<BreakableMemoryStore['updateThread']>[0]) {
    const stored = await super.getThreadById({ threadId: args.id });
    const metadata = stored && args.metadata ? keepKeyless(stored.metadata, args.metadata) : args.metadata;
    return super.updateThread({ ...args, metadata });
  }
  override async updateResource(args: Parameters<BreakableMemoryStore['updateResource']>[0]) {
    const stored = await super.getResourceById({ resourceId: args.resourceId });
    const metadata = stored && args.metadata ? keepKeyless(stored.metadata, args.metadata) : args.metadata;
    return super.updateResource({ ...args, metadata });
  }
  override async updateMessages(patches: Parameters<BreakableMemoryStore['updateMessages']>[0]) {
    const stored = new Map(
      (await super.listMessagesById({ ids: patches.map((p) => p.id) })).map((m) => [m.id, m.content]),
    );
    return super.updateMessages(
      patches.map((p) =>
        p.content !== undefined && stored.has(p.id) && keylessSame(stored.get(p.id), p.content)
          ? { ...p, content: stored.get(p.id) }
          : p,
      ),
    );
  }
}

/**
 * Writes a batch message by message, each checked against its thread as it is written — a
 * backend without transactions (a foreign key checked per row). Refusals of another resource's
 * thread or message id are still checked before anything is written. Declares
 * `transactionalBatches` as told: with `true` it breaks that promise; with `false` it keeps the
 * weaker one.
 */
export class MessageByMessageStore extends BreakableMemoryStore {
  constructor(transactionalBatches: boolean) {
    super({ capabilities: { transactionalBatches } });
  }

  /** True when core would refuse the batch whole before writing (another resource's thread or id). */
  protected async refusedWhole(messages: Message[]): Promise<boolean> {
    const stored = await super.listMessagesById({ ids: messages.map((m) => m.id) });
    if (stored.some((s) => messages.some((m) => m.id === s.id && m.resourceId !== s.resourceId))) return true;
    for (const m of messages) {
      const t = await super.getThreadById({ threadId: m.threadId });
      if (t && t.resourceId !== m.resourceId) return true;
    }
    return false;
  }

  override async saveMessages(messages: Message[]): Promise<Message[]> {
    if (messages.length === 0 || (await this.refusedWhole(messages))) return super.saveMessages(messages);
    for (const m of messages) await super.saveMessages([m]);
    return structuredClone(messages);
  }
}

/**
 * Declares `transactionalBatches: false`, but a batch saved again skips the ids it finds stored
 * (a "resume" that trusts what is there), so an edit in a batch is never applied and a failed
 * batch is not completed as given.
 */
export class ResumeSkippingStore extends MessageByMessageStore {
  constructor() {
    super(false);
  }

  override async saveMessages(messages: Message[]): Promise<Message[]> {
    if (messages.length === 0 || (await this.refusedWhole(messages))) return super.saveMessages(messages);
    const stored = new Set(
      (await this.listMessagesById({ ids: messages.map((m) => m.id) })).map((m) => m.id),
    );
    for (const m of messages) if (!stored.has(m.id)) await super.saveMessages([m]);
    return structuredClone(messages);
  }
}

/** Answers `getThreadById` with the thread whatever `resourceId` is given. */
export class OwnerBlindLookupStore extends BreakableMemoryStore {
  override async getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    return super.getThreadById({ threadId: args.threadId });
  }
}

/** Runs an atomic working-memory update without checking that the two ids agree. */
export class OwnerBlindAtomicStore extends BreakableMemoryStore {
  override async updateWorkingMemoryAtomically(
    args: Parameters<BreakableMemoryStore['updateWorkingMemoryAtomically']>[0],
  ): Promise<string | null> {
    const { threadId, resourceId, ...rest } = args;
    return super.updateWorkingMemoryAtomically(
      args.scope === 'resource' ? { ...rest, resourceId } : { ...rest, threadId },
    );
  }
}

/**
 * Purges a resource with two statements and no transaction around them: first every message of
 * the resource, then (a moment later) its threads and row. A batch saved between the two stays
 * behind without its thread.
 */
export class TwoStepPurgeStore extends BreakableMemoryStore {
  override async deleteResource(args: { resourceId: string }) {
    const driver = this.driver as unknown as {
      threadMap: Map<string, Thread>;
      messageMap: Map<string, Message>;
      resourceMap: Map<string, Resource>;
      logs: Map<string, unknown>;
    };
    const mine = [...driver.messageMap.values()].filter((m) => m.resourceId === args.resourceId);
    await this.deleteMessages(mine.map((m) => m.id));
    await new Promise((resolve) => setTimeout(resolve, 30));
    for (const [id, t] of driver.threadMap) {
      if (t.resourceId !== args.resourceId) continue;
      driver.threadMap.delete(id);
      driver.logs.delete(`thread:${id}`);
    }
    driver.logs.delete(`resource:${args.resourceId}`);
    driver.resourceMap.delete(args.resourceId);
    return { threads: 0, messages: 0, vectors: 0, observations: 0, turns: 0, workingMemory: 0, resources: 0 };
  }
}

/** `listResourceIds` that answers from `after` itself on, not after it: a page walk repeats ids. */
export class InclusiveAfterStore extends BreakableMemoryStore {
  constructor() {
    super();
    const list = this.listResourceIds!;
    const writable = this as { listResourceIds?: typeof list };
    writable.listResourceIds = async ({ after, limit } = {}) => {
      const ids = await list({ after, limit });
      const from = after === undefined ? [] : await this.getResourceById({ resourceId: after });
      return from === null || after === undefined ? ids : [after, ...ids].slice(0, limit ?? 1_000);
    };
  }
}
