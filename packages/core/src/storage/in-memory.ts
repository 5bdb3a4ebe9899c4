import { MemoryError } from '../errors.ts';
import {
  type NormalizedListMessages,
  type NormalizedListThreads,
  type NormalizedUpdateThread,
  StoreBase,
} from './base.ts';
import type { StoreCapabilities } from './capabilities.ts';
import type { MessagePatch, UpdateResourceArgs } from './contract.ts';
import { compareIds, inDateRange, shallowMerge, sortMessages } from './helpers.ts';
import { InMemoryVectors } from './in-memory-vectors.ts';
import { type MessageRead, slicePage, type ThreadRead } from './listing.ts';
import {
  messageOfAnotherResource,
  threadExists,
  threadNotFound,
  threadOfAnotherResource,
} from './ownership.ts';
import type { Message, Resource, Thread } from './records.ts';
import { bumpedUpdatedAt, newestByThread } from './updated-at.ts';
import type { VectorStore } from './vectors.ts';
import type { LockedWorkingMemory } from './working-memory-strategy.ts';

/**
 * The reference implementation of `MemoryStorage`, kept in plain maps in this process.
 *
 * Written to be obviously right rather than fast: it is the oracle the conformance suite
 * compares every adapter against. Every record goes in and comes out as a deep copy, and every
 * method body runs without awaiting, so each call is atomic within the process.
 */
export class InMemoryStore extends StoreBase {
  readonly name = 'memory';
  /** Atomic within the process (no method awaits mid-way), which holds all its data. */
  readonly capabilities: StoreCapabilities = {
    atomicWorkingMemory: true,
    transactionalBatches: true,
    processLocal: true,
  };

  private threads = new Map<string, Thread>();
  private messages = new Map<string, Message>();
  private resources = new Map<string, Resource>();
  /**
   * Exact vector search over this store's messages (the suite's recall oracle); `undefined`
   * when constructed with `{ vectors: false }`.
   */
  readonly vectors: VectorStore | undefined;
  /** The same object as `vectors`, typed for the deletes that drop rows in the same step. */
  protected readonly memoryVectors: InMemoryVectors | undefined;

  /** `vectors: false` builds a store without the vector capability. Default `true`. */
  constructor(options: { vectors?: boolean } = {}) {
    super();
    this.memoryVectors =
      options.vectors === false
        ? undefined
        : new InMemoryVectors(this.name, (operation, fn) => this.run(operation, fn), this.messages);
    this.vectors = this.memoryVectors;
  }

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return new MemoryError('STORAGE', `memory: ${operation} failed: ${String(error)}`, {
      adapter: this.name,
      cause: error,
    });
  }

  protected async doInit(): Promise<void> {}

  protected async doClose(): Promise<void> {}

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<Thread | null> {
    const thread = this.threads.get(threadId);
    if (!thread || (resourceId !== undefined && thread.resourceId !== resourceId)) return null;
    return copy(thread);
  }

  protected async doCreateThread(thread: Thread): Promise<Thread> {
    if (this.threads.has(thread.id)) throw threadExists(this.name, thread.id);
    this.threads.set(thread.id, copy(thread));
    return copy(thread);
  }

  protected async doSaveThread(thread: Thread): Promise<Thread> {
    this.threads.set(thread.id, copy(thread));
    return copy(thread);
  }

  protected async doUpdateThread(args: NormalizedUpdateThread): Promise<Thread> {
    const stored = this.requireThread(args.id);
    const next: Thread = {
      ...stored,
      title: args.title ?? stored.title,
      metadata: args.metadata ? shallowMerge(stored.metadata, args.metadata) : stored.metadata,
      updatedAt: bumpedUpdatedAt(stored.updatedAt, new Date()),
    };
    this.threads.set(next.id, copy(next));
    return copy(next);
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    this.threads.delete(threadId);
    for (const [id, message] of this.messages) {
      if (message.threadId !== threadId) continue;
      this.messages.delete(id);
      this.memoryVectors?.forget([id]);
    }
  }

  protected async readThreadPage(args: NormalizedListThreads): Promise<ThreadRead> {
    const ofResource = [...this.threads.values()].filter(
      (t) => args.resourceId === undefined || t.resourceId === args.resourceId,
    );
    ofResource.sort(
      (a, b) => a[args.orderBy].getTime() - b[args.orderBy].getTime() || compareIds(a.id, b.id),
    );
    if (args.direction === 'DESC') ofResource.reverse();
    return { kind: 'candidates', threads: ofResource.map(copy) };
  }

  protected async doSaveMessages(messages: Message[]): Promise<Message[]> {
    for (const message of messages) {
      const thread = this.threads.get(message.threadId);
      if (!thread) {
        throw threadNotFound(this.name, message.threadId);
      }
      if (thread.resourceId !== message.resourceId) {
        throw threadOfAnotherResource(this.name, message.id, message.resourceId);
      }
    }
    // Threads first, then ids: the contract's order of refusals.
    for (const message of messages) {
      const stored = this.messages.get(message.id);
      if (stored && stored.resourceId !== message.resourceId) {
        throw messageOfAnotherResource(this.name, message.id);
      }
    }
    const now = new Date();
    const touched = new Set<string>();
    for (const message of messages) {
      const previous = this.messages.get(message.id);
      if (previous) touched.add(previous.threadId);
      touched.add(message.threadId);
      this.messages.set(message.id, copy(message));
    }
    this.touch(touched, now, newestByThread(messages));
    return messages.map(copy);
  }

  protected async readMessagePage(args: NormalizedListMessages): Promise<MessageRead> {
    const ofThread = (threadId: string) =>
      sortMessages([...this.messages.values()].filter((m) => m.threadId === threadId));
    const inScope = (m: Message) => args.resourceId === undefined || m.resourceId === args.resourceId;

    const filtered = ofThread(args.threadId).filter(
      (m) => inScope(m) && inDateRange(m.createdAt, args.dateRange),
    );
    const ordered = args.direction === 'ASC' ? filtered : [...filtered].reverse();
    const windows = args.include.flatMap((window) => {
      const target = this.messages.get(window.id);
      if (!target || !inScope(target)) return [];
      const thread = ofThread(target.threadId).filter(inScope);
      const at = thread.findIndex((m) => m.id === target.id);
      return thread.slice(Math.max(0, at - window.withPreviousMessages), at + window.withNextMessages + 1);
    });
    return {
      page: slicePage(ordered, args.page, args.perPage).map(copy),
      total: filtered.length,
      windows: windows.map(copy),
    };
  }

  protected async doListMessagesById(ids: string[]): Promise<Message[]> {
    const found = ids.flatMap((id) => this.messages.get(id) ?? []);
    return sortMessages(found).map(copy);
  }

  protected async doUpdateMessages(patches: MessagePatch[]): Promise<Message[]> {
    const now = new Date();
    const touched = new Set<string>();
    const written: Message[] = [];
    for (const patch of patches) {
      const stored = this.messages.get(patch.id);
      if (!stored) continue;
      const next: Message = {
        ...stored,
        role: patch.role ?? stored.role,
        content: patch.content === undefined ? stored.content : patch.content,
        type: patch.type ?? stored.type,
        createdAt: patch.createdAt ?? stored.createdAt,
      };
      this.messages.set(next.id, copy(next));
      touched.add(next.threadId);
      written.push(next);
    }
    this.touch(touched, now, newestByThread(written));
    return this.doListMessagesById([...new Set(patches.map((p) => p.id))]);
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    const touched = new Set<string>();
    for (const id of ids) {
      const stored = this.messages.get(id);
      if (!stored) continue;
      touched.add(stored.threadId);
      this.messages.delete(id);
      this.memoryVectors?.forget([id]);
    }
    this.touch(touched, new Date());
  }

  protected async doGetResourceById(resourceId: string): Promise<Resource | null> {
    const resource = this.resources.get(resourceId);
    return resource ? copy(resource) : null;
  }

  protected async doUpdateResource(args: UpdateResourceArgs): Promise<Resource> {
    const now = new Date();
    const stored = this.resources.get(args.resourceId) ?? {
      id: args.resourceId,
      workingMemory: null,
      metadata: {},
      createdAt: now,
      updatedAt: now,
    };
    const next: Resource = {
      ...stored,
      workingMemory: args.workingMemory === undefined ? stored.workingMemory : args.workingMemory,
      metadata: args.metadata ? shallowMerge(stored.metadata, args.metadata) : stored.metadata,
      updatedAt: now,
    };
    this.resources.set(next.id, copy(next));
    return copy(next);
  }

  /** Locked by construction: the read and the write run without awaiting in between. */
  protected readonly workingMemoryStrategy: LockedWorkingMemory = {
    kind: 'locked',
    update: async (cell, apply) => {
      if (cell.scope === 'resource') {
        const current = this.resources.get(cell.resourceId)?.workingMemory ?? null;
        await this.doUpdateResource({ resourceId: cell.resourceId, workingMemory: apply(current) });
        return true;
      }
      const thread = this.threads.get(cell.threadId);
      if (!thread) return false;
      const stored = thread.metadata.workingMemory;
      const next = apply(typeof stored === 'string' ? stored : null);
      await this.doUpdateThread({
        id: thread.id,
        metadata: { workingMemory: next },
        workingMemoryVersion: undefined,
      });
      return true;
    },
  };

  private requireThread(threadId: string): Thread {
    const thread = this.threads.get(threadId);
    if (!thread) {
      throw threadNotFound(this.name, threadId);
    }
    return thread;
  }

  /** Bumps `updatedAt` of these threads (see `bumpedUpdatedAt`); `newest`: the messages written per thread. */
  private touch(threadIds: Set<string>, now: Date, newest = new Map<string, Date>()): void {
    for (const id of threadIds) {
      const thread = this.threads.get(id);
      const written = newest.get(id);
      if (thread) {
        this.threads.set(id, {
          ...thread,
          updatedAt: bumpedUpdatedAt(thread.updatedAt, now, written ? [written] : []),
        });
      }
    }
  }
}

function copy<T>(value: T): T {
  return structuredClone(value);
}
