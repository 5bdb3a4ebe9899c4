import {
  compareIds,
  isMemoryError,
  type ListMessagesArgs,
  MAX_LISTING_COUNT,
  MemoryError,
  type Message,
  type MessagePage,
  mergeMessageLists,
  pageInfo,
  type Resource,
  type Thread,
} from '@engram/core';
import { BreakableMemoryStore } from './breakable.ts';
import { JsonFileStore } from './file-store.ts';

/**
 * Deliberately broken stores. Each keeps the reference behaviour except for one defect, and
 * the meta-tests assert that the suite catches it in the area named.
 */

/** (a) Claims atomic working-memory merges, but reads, awaits, then writes. */
export function brokenAtomicStore(file: string): JsonFileStore {
  return new JsonFileStore(file, 'atomic');
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
