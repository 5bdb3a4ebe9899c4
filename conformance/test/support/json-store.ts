import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  bumpedUpdatedAt,
  compareIds,
  createErrorMapper,
  driverCode,
  type EmbeddingSpace,
  inDateRange,
  type LockedWorkingMemory,
  MemoryError,
  type Message,
  type MessagePatch,
  type MessageRead,
  messageOfAnotherResource,
  type NormalizedListMessages,
  type NormalizedListThreads,
  type NormalizedUpdateThread,
  newestByThread,
  type Resource,
  StoreBase,
  type StoreCapabilities,
  shallowMerge,
  slicePage,
  sortMessages,
  type Thread,
  type ThreadRead,
  threadExists,
  threadNotFound,
  threadOfAnotherResource,
  type UpdateResourceArgs,
} from '@engram/core/adapter';
import { JsonVectors } from './json-store-vectors.ts';

/**
 * The worked example of docs/writing-an-adapter.md: a store on one JSON file that several OS
 * processes share. A write takes a lock file (created with O_EXCL), reads the file, changes it
 * and replaces it by an atomic rename; a read parses the last renamed file without the lock, so
 * it always sees a whole write. Core composes the listings and the working-memory updates from
 * the primitives below. Not a product: every write rewrites the whole file, and a process killed
 * while it holds the lock leaves the lock file behind.
 */

/** A store's records, by id. */
export interface Records {
  threads: Map<string, Thread>;
  messages: Map<string, Message>;
  resources: Map<string, Resource>;
}

/** The contents of the file: the records, the embedding space and one vector per message. */
export interface FileData extends Records {
  space: EmbeddingSpace | null;
  vectors: Map<string, { messageId: string; hash: string; vector: Float32Array }>;
}

/** How `JsonVectors` reaches the file: the store's lock-free read and its locked write. */
export interface FileAccess {
  read(): Promise<FileData>;
  write<T>(change: (data: FileData) => T): Promise<T>;
}

/** How long a writer waits for the lock before it gives up. */
const LOCK_TIMEOUT_MS = 10_000;

const toMemoryError = createErrorMapper({
  adapter: 'json',
  // Only the lock needs a code of its own; file-system errors take core's defaults.
  classify: (error) => (driverCode(error) === 'ELOCKED' ? 'CONFLICT' : undefined),
  driverDetails: (error) => ({ errno: driverCode(error) }),
});

export class JsonStore extends StoreBase {
  readonly name = 'json';
  /** The lock serialises writers of every process, and one write is one rename. */
  override readonly capabilities: StoreCapabilities = {
    atomicWorkingMemory: true,
    transactionalBatches: true,
    processLocal: false,
  };
  readonly file: string;
  /** Semantic recall: an exact scan of the vectors kept in the same file. */
  readonly vectors: JsonVectors;

  constructor(options: { file: string }) {
    super();
    if (typeof options?.file !== 'string' || options.file === '') {
      throw new MemoryError('INVALID_ARGUMENT', 'json: file must be the path of the store file');
    }
    this.file = options.file;
    const file: FileAccess = { read: () => this.read(), write: (change) => this.write(change) };
    this.vectors = new JsonVectors(this.name, (operation, fn) => this.run(operation, fn), file);
  }

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return toMemoryError(error, operation);
  }

  /** Creates the file once; safe when several processes open a new file at the same moment. */
  protected async doInit(): Promise<void> {
    await mkdir(dirname(this.file), { recursive: true });
    await this.write(() => undefined);
  }

  protected async doClose(): Promise<void> {} // nothing stays open between operations

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<Thread | null> {
    const thread = (await this.read()).threads.get(threadId);
    return thread && (resourceId === undefined || thread.resourceId === resourceId) ? thread : null;
  }

  protected doCreateThread(thread: Thread): Promise<Thread> {
    return this.write((data) => {
      if (data.threads.has(thread.id)) throw threadExists(this.name, thread.id);
      data.threads.set(thread.id, thread);
      return structuredClone(thread);
    });
  }

  protected doSaveThread(thread: Thread): Promise<Thread> {
    return this.write((data) => {
      data.threads.set(thread.id, thread);
      return structuredClone(thread);
    });
  }

  protected doUpdateThread(args: NormalizedUpdateThread): Promise<Thread> {
    return this.write((data) => {
      const thread = data.threads.get(args.id);
      if (!thread) throw threadNotFound(this.name, args.id);
      if (args.title !== undefined) thread.title = args.title;
      if (args.metadata) thread.metadata = shallowMerge(thread.metadata, args.metadata);
      thread.updatedAt = bumpedUpdatedAt(thread.updatedAt, new Date());
      return thread;
    });
  }

  protected doDeleteThread(threadId: string): Promise<void> {
    return this.write((data) => {
      data.threads.delete(threadId);
      for (const m of data.messages.values()) {
        if (m.threadId !== threadId) continue;
        data.messages.delete(m.id);
        data.vectors.delete(m.id);
      }
    });
  }

  /** Every thread of the resource in order; core filters the metadata and cuts the page. */
  protected async readThreadPage(query: NormalizedListThreads): Promise<ThreadRead> {
    const { orderBy, direction, resourceId } = query;
    const threads = [...(await this.read()).threads.values()]
      .filter((t) => resourceId === undefined || t.resourceId === resourceId)
      .sort((a, b) => a[orderBy].getTime() - b[orderBy].getTime() || compareIds(a.id, b.id));
    return { kind: 'candidates', threads: direction === 'ASC' ? threads : threads.reverse() };
  }

  protected doSaveMessages(messages: Message[]): Promise<Message[]> {
    return this.write((data) => {
      for (const m of messages) {
        const thread = data.threads.get(m.threadId);
        if (!thread) throw threadNotFound(this.name, m.threadId);
        if (thread.resourceId !== m.resourceId) throw threadOfAnotherResource(this.name, m.id, m.resourceId);
      }
      for (const m of messages) {
        const taken = data.messages.get(m.id);
        if (taken && taken.resourceId !== m.resourceId) throw messageOfAnotherResource(this.name, m.id);
      }
      const touched = messages.flatMap((m) => [m.threadId, data.messages.get(m.id)?.threadId ?? m.threadId]);
      for (const m of messages) data.messages.set(m.id, m);
      touch(data, touched, newestByThread(messages));
      return structuredClone(messages);
    });
  }

  /** The page, its total and the include windows, all from one read of the file. */
  protected async readMessagePage(query: NormalizedListMessages): Promise<MessageRead> {
    const data = await this.read();
    const visible = (m: Message) => query.resourceId === undefined || m.resourceId === query.resourceId;
    const threadOf = (threadId: string) =>
      sortMessages([...data.messages.values()].filter((m) => m.threadId === threadId && visible(m)));
    const matching = threadOf(query.threadId).filter((m) => inDateRange(m.createdAt, query.dateRange));
    const windows: Message[] = [];
    for (const { id, withPreviousMessages, withNextMessages } of query.include) {
      const target = data.messages.get(id);
      if (!target || !visible(target)) continue;
      const thread = threadOf(target.threadId);
      const at = thread.findIndex((m) => m.id === id);
      windows.push(...thread.slice(Math.max(0, at - withPreviousMessages), at + withNextMessages + 1));
    }
    const ordered = query.direction === 'ASC' ? matching : [...matching].reverse();
    return { page: slicePage(ordered, query.page, query.perPage), total: matching.length, windows };
  }

  protected async doListMessagesById(ids: string[]): Promise<Message[]> {
    const data = await this.read();
    return sortMessages(ids.flatMap((id) => data.messages.get(id) ?? []));
  }

  protected doUpdateMessages(patches: MessagePatch[]): Promise<Message[]> {
    return this.write((data) => {
      const updated = new Map<string, Message>();
      for (const { id, role, content, type, createdAt } of patches) {
        const m = data.messages.get(id);
        if (!m) continue;
        Object.assign(m, {
          role: role ?? m.role,
          content: content === undefined ? m.content : content,
          type: type ?? m.type,
          createdAt: createdAt ?? m.createdAt,
        });
        updated.set(id, m);
      }
      touch(
        data,
        [...updated.values()].map((m) => m.threadId),
        newestByThread(updated.values()),
      );
      return sortMessages(structuredClone([...updated.values()]));
    });
  }

  protected doDeleteMessages(ids: string[]): Promise<void> {
    return this.write((data) => {
      const threadIds = ids.flatMap((id) => data.messages.get(id)?.threadId ?? []);
      for (const id of ids) {
        data.messages.delete(id);
        data.vectors.delete(id);
      }
      touch(data, threadIds);
    });
  }

  protected async doGetResourceById(resourceId: string): Promise<Resource | null> {
    return (await this.read()).resources.get(resourceId) ?? null;
  }

  protected doUpdateResource(args: UpdateResourceArgs): Promise<Resource> {
    return this.write((data) => {
      const resource = resourceOf(data, args.resourceId);
      if (args.workingMemory !== undefined) resource.workingMemory = args.workingMemory;
      if (args.metadata) resource.metadata = shallowMerge(resource.metadata, args.metadata);
      return resource;
    });
  }

  /** Read-modify-write under the file lock, which no writer of any process can interleave with. */
  protected readonly workingMemoryStrategy: LockedWorkingMemory = {
    kind: 'locked',
    update: (cell, apply) =>
      this.write((data) => {
        if (cell.scope === 'resource') {
          const resource = resourceOf(data, cell.resourceId);
          resource.workingMemory = apply(resource.workingMemory);
          return true;
        }
        const thread = data.threads.get(cell.threadId);
        if (!thread) return false;
        const current = thread.metadata.workingMemory;
        thread.metadata = shallowMerge(thread.metadata, {
          workingMemory: apply(typeof current === 'string' ? current : null),
        });
        thread.updatedAt = bumpedUpdatedAt(thread.updatedAt, new Date());
        return true;
      }),
  };

  /** The last whole write of the file. */
  private async read(): Promise<FileData> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if (driverCode(error) !== 'ENOENT') throw error;
      text = '{"threads":[],"messages":[],"resources":[],"space":null,"vectors":[]}';
    }
    const stored = JSON.parse(text) as StoredFile;
    const byId = <T extends { id: string; createdAt: Date; updatedAt?: Date }>(records: T[]) =>
      new Map(records.map((r) => [r.id, { ...r, ...dates(r) }]));
    return {
      threads: byId(stored.threads),
      messages: byId(stored.messages),
      resources: byId(stored.resources),
      space: stored.space,
      vectors: new Map(
        stored.vectors.map((v) => [v.messageId, { ...v, vector: Float32Array.from(v.vector) }]),
      ),
    };
  }

  /**
   * Runs `change` on the file's records under the lock and stores the result with an atomic
   * rename. A `change` that throws writes nothing.
   */
  private async write<T>(change: (data: FileData) => T): Promise<T> {
    const lock = `${this.file}.lock`;
    for (const started = Date.now(); ; ) {
      try {
        await writeFile(lock, String(process.pid), { flag: 'wx' }); // O_CREAT | O_EXCL
        break;
      } catch (error) {
        if (driverCode(error) !== 'EEXIST') throw error;
        if (Date.now() - started > LOCK_TIMEOUT_MS) {
          throw Object.assign(new Error(`the lock file ${lock} was held for over ${LOCK_TIMEOUT_MS} ms`), {
            code: 'ELOCKED',
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 4));
      }
    }
    try {
      const data = await this.read();
      const result = change(data);
      const temp = `${this.file}.${process.pid}.tmp`;
      const stored: StoredFile = {
        threads: [...data.threads.values()],
        messages: [...data.messages.values()],
        resources: [...data.resources.values()],
        space: data.space,
        vectors: [...data.vectors.values()].map((v) => ({ ...v, vector: Array.from(v.vector) })),
      };
      await writeFile(temp, JSON.stringify(stored));
      await rename(temp, this.file);
      return result;
    } finally {
      await unlink(lock);
    }
  }
}

/** The file as JSON: records with dates as strings once parsed, vectors as arrays of numbers. */
interface StoredFile {
  threads: Thread[];
  messages: Message[];
  resources: Resource[];
  space: EmbeddingSpace | null;
  vectors: { messageId: string; hash: string; vector: number[] }[];
}

/** The dates of a record parsed from JSON, as `Date`s again. */
function dates(record: { createdAt: Date | string; updatedAt?: Date | string }) {
  const { createdAt, updatedAt } = record;
  return {
    createdAt: new Date(createdAt),
    ...(updatedAt === undefined ? {} : { updatedAt: new Date(updatedAt) }),
  };
}

/**
 * Moves the `updatedAt` of the given threads (those that still exist) forward to now, or to the
 * newest `createdAt` the write stored in them when later; never back (core's `bumpedUpdatedAt`).
 */
function touch(data: FileData, threadIds: string[], newest = new Map<string, Date>()): void {
  const now = new Date();
  for (const id of new Set(threadIds)) {
    const thread = data.threads.get(id);
    const written = newest.get(id);
    if (thread) thread.updatedAt = bumpedUpdatedAt(thread.updatedAt, now, written ? [written] : []);
  }
}

/** The stored resource, or a new empty one added to `data`; its `updatedAt` moves to now. */
function resourceOf(data: FileData, resourceId: string): Resource {
  const now = new Date();
  const resource = data.resources.get(resourceId) ?? {
    id: resourceId,
    workingMemory: null,
    metadata: {},
    createdAt: now,
    updatedAt: now,
  };
  resource.updatedAt = now;
  data.resources.set(resourceId, resource);
  return resource;
}
