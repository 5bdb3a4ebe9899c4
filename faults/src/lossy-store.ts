import type {
  AtomicWorkingMemoryUpdate,
  ListMessagesArgs,
  ListThreadsArgs,
  MemoryStorage,
  Message,
  MessagePage,
  MessagePatch,
  Resource,
  Thread,
  ThreadPage,
  UpdateResourceArgs,
  UpdateThreadArgs,
} from '@engram/core';

/** A few ms, as a round trip to a server would take: keeps the queue of pending writes short. */
function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * A deliberately broken store for the meta-test: it acknowledges working-memory updates and
 * message saves at once and commits them to the real store `delayMs` later. A process killed in
 * between loses writes it was told had succeeded, which is exactly what the crash scenario must
 * catch. Everything else goes straight to the wrapped store.
 */
export class AckBeforeCommitStore implements MemoryStorage {
  readonly name: string;
  readonly supportsAtomicWorkingMemoryMerge = true;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly inner: MemoryStorage,
    private readonly delayMs: number,
  ) {
    this.name = `ack-before-commit(${inner.name})`;
  }

  /** Runs `write` later, off the caller's path. */
  private later(write: () => Promise<unknown>): void {
    const task = new Promise((resolve) => setTimeout(resolve, this.delayMs))
      .then(write)
      .catch(() => undefined)
      .finally(() => this.pending.delete(task));
    this.pending.add(task);
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async close(): Promise<void> {
    await Promise.all(this.pending);
    await this.inner.close();
  }

  getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    return this.inner.getThreadById(args);
  }

  createThread(thread: Thread): Promise<Thread> {
    return this.inner.createThread(thread);
  }

  saveThread(thread: Thread): Promise<Thread> {
    return this.inner.saveThread(thread);
  }

  updateThread(args: UpdateThreadArgs): Promise<Thread> {
    return this.inner.updateThread(args);
  }

  deleteThread(args: { threadId: string }): Promise<void> {
    return this.inner.deleteThread(args);
  }

  listThreads(args: ListThreadsArgs): Promise<ThreadPage> {
    return this.inner.listThreads(args);
  }

  async saveMessages(messages: Message[]): Promise<Message[]> {
    this.later(() => this.inner.saveMessages(messages));
    await pause();
    return messages;
  }

  listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    return this.inner.listMessages(args);
  }

  listMessagesById(args: { ids: string[] }): Promise<Message[]> {
    return this.inner.listMessagesById(args);
  }

  updateMessages(patches: MessagePatch[]): Promise<Message[]> {
    return this.inner.updateMessages(patches);
  }

  deleteMessages(ids: string[]): Promise<void> {
    return this.inner.deleteMessages(ids);
  }

  getResourceById(args: { resourceId: string }): Promise<Resource | null> {
    return this.inner.getResourceById(args);
  }

  updateResource(args: UpdateResourceArgs): Promise<Resource> {
    return this.inner.updateResource(args);
  }

  /** Answers with what the update would store, and commits it `delayMs` later. */
  async updateWorkingMemoryAtomically(args: AtomicWorkingMemoryUpdate): Promise<string | null> {
    const atomic = this.inner.updateWorkingMemoryAtomically?.bind(this.inner);
    if (!atomic) throw new Error(`${this.inner.name} has no atomic working-memory update`);
    const resource = args.resourceId
      ? await this.inner.getResourceById({ resourceId: args.resourceId })
      : null;
    const answer = args.update(resource?.workingMemory ?? null);
    this.later(() => atomic(args));
    await pause();
    return answer;
  }
}
