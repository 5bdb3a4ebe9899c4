import { mkdir, readFile, rename, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  bumpedUpdatedAt,
  compareHits,
  compareIds,
  cosine,
  createKeywordAnalyzer,
  type Driver,
  driverCode,
  type EmbeddingSpace,
  inDateRange,
  type KeywordDriver,
  keywordTerms,
  type LockedWorkingMemory,
  type Message,
  type MessageDriver,
  type ObservationDriver,
  type ObservationRow,
  type Places,
  RETRY,
  type Resource,
  type ResourceChange,
  type ResourceDriver,
  retry,
  Store,
  type StoreCapabilities,
  searchIndexed,
  shallowMerge,
  slicePage,
  sortMessages,
  swapRows,
  type Thread,
  type ThreadChange,
  type ThreadDriver,
  type VectorDriver,
  type VectorHit,
} from '@engram/core/driver';

/**
 * The worked example of docs/writing-an-adapter.md: a driver on one JSON file that several OS
 * processes share. A write takes a lock file (created with O_EXCL), reads the file, changes it
 * and replaces it by an atomic rename; a read parses the last renamed file without the lock, so
 * it always sees a whole write. Core builds the store from it and composes everything else. Not
 * a product: every write rewrites the whole file, and a process killed while it holds the lock
 * leaves the lock file behind.
 *
 * `defect` breaks it on purpose, for the suite's meta-tests (each must be caught):
 * - `'atomic'`: the working-memory update reads, lets others run, then writes (a lost update);
 * - `'metadata'`: `threads.update` and `resources.update` merge into a stale read the same way;
 * - `'init'`: `open()` fails while another process opens the same file;
 * - `'lease'`: the lock is a lease of `FILE_LEASE_MS` that fences nothing: a writer breaks an
 *   older lock, and a holder that stood still past it writes its stale file back;
 * - `'stamp'`: a write stamps the threads it bumps with a time taken before it waited for the
 *   lock, as is, so a write that waited longer sets `updatedAt` back;
 * - `'role'`: the keyword index holds the words of every message, whatever its role, so a tool
 *   or system message is found by keyword recall;
 * - `'unlock'`: a write whose work threw (an update function that refused) leaves its lock file
 *   behind, and writers give up on a lock after `FILE_LEASE_MS`;
 * - `'vector-check'`: `upsertVectors` reads which messages exist before it takes the lock, so a
 *   vector of a message deleted in between is written.
 */

/** What is wrong with a `JsonStore`, if anything. */
export type JsonStoreDefect =
  | 'none'
  | 'atomic'
  | 'metadata'
  | 'init'
  | 'lease'
  | 'stamp'
  | 'role'
  | 'unlock'
  | 'vector-check';

export interface JsonStoreOptions {
  /** The file holding every record. */
  file: string;
  /** Semantic recall's vectors, kept in the same file. Default `true`. */
  vectors?: boolean;
  /** Keyword recall's index: the messages' text in the file, analyzed when searched. Default `true`. */
  keywords?: boolean;
  /** Observational memory's logs, kept in the same file. Default `true`. */
  observations?: boolean;
  /** A deliberate defect, for the meta-tests. Default `'none'`. */
  defect?: JsonStoreDefect;
}

/** With the `'lease'` defect, a lock older than this is broken by the next writer. */
export const FILE_LEASE_MS = 300;
/** How long a writer waits for the lock before it gives up. */
const LOCK_TIMEOUT_MS = 10_000;

/** The contents of the file, and what one write knows: the unit of work of this driver. */
interface FileData {
  threads: Map<string, Thread>;
  messages: Map<string, Message>;
  resources: Map<string, Resource>;
  space: EmbeddingSpace | null;
  vectors: Map<string, { messageId: string; hash: string; vector: Float32Array }>;
  /** Observation logs: key → generations, oldest first. */
  logs: Map<string, ObservationRow[]>;
  /** When the write began, before it waited for the lock (what the `'stamp'` defect stores). */
  began: Date;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class JsonDriver implements Driver<FileData> {
  readonly name = 'json';
  /** The lock serialises writers of every process, and one write is one rename. */
  readonly capabilities: StoreCapabilities = {
    atomicWorkingMemory: true,
    transactionalBatches: true,
    processLocal: false,
  };
  /** File-system errors take core's defaults (a lock held too long is core's `CONFLICT`). */
  readonly errors = {
    classify: () => undefined,
    driverDetails: (error: unknown) => ({ errno: driverCode(error) }),
  };
  readonly vectors: VectorDriver<FileData> | undefined;
  readonly keywords: KeywordDriver<FileData> | undefined;
  readonly observations: ObservationDriver<FileData> | undefined;
  private readonly defect: JsonStoreDefect;

  constructor(
    readonly file: string,
    options: JsonStoreOptions,
  ) {
    this.defect = options.defect ?? 'none';
    this.vectors = options.vectors === false ? undefined : this.vectorDomain;
    this.keywords = options.keywords === false ? undefined : this.keywordDomain;
    this.observations = options.observations === false ? undefined : this.observationDomain;
  }

  /**
   * Creates the file's folder; the file itself is written by the first write (a read of a file
   * not written yet finds no records), so processes opening a new file at once never wait.
   */
  async open(): Promise<void> {
    await mkdir(dirname(this.file), { recursive: true });
    if (this.defect === 'init') {
      const marker = `${this.file}.init`;
      await mkdir(marker).catch(() => {
        throw new Error(`ECONNRESET: connection closed while another process initialises ${this.file}`);
      });
      await sleep(100).finally(() => rmdir(marker));
    }
  }

  async close(): Promise<void> {} // nothing stays open between operations

  /** Runs `fn` on the file's records under the lock and stores the result with an atomic rename. */
  async write<T>(fn: (data: FileData) => Promise<T>): Promise<T> {
    const began = new Date();
    if (this.defect === 'stamp') await sleep(Math.random() * 3);
    const lock = `${this.file}.lock`;
    await retry(
      async () => {
        try {
          return await writeFile(lock, String(process.pid), { flag: 'wx' }); // O_CREAT | O_EXCL
        } catch (error) {
          if (driverCode(error) !== 'EEXIST') throw error;
          if (this.defect === 'lease') await this.breakExpired(lock);
          return RETRY;
        }
      },
      {
        adapter: this.name,
        what: `taking the lock file ${lock}`,
        // The `'unlock'` defect's locks stay: its writers give up sooner, so a meta-test ends.
        deadlineMs: this.defect === 'unlock' ? FILE_LEASE_MS : LOCK_TIMEOUT_MS,
      },
    );
    let threw = false;
    try {
      const data = { ...(await this.read()), began };
      const result = await fn(data);
      await this.save(data);
      return result;
    } catch (error) {
      threw = true;
      throw error;
    } finally {
      // The defect: a write whose work threw (say, an update function) leaves its lock behind.
      if (!(threw && this.defect === 'unlock'))
        await unlink(lock).catch((error: unknown) => {
          // A broken lease may be gone already.
          if (this.defect !== 'lease' || driverCode(error) !== 'ENOENT') throw error;
        });
    }
  }

  readonly threads: ThreadDriver<FileData> = {
    get: async (id) => (await this.read()).threads.get(id) ?? null,
    insert: (thread) =>
      this.write(async (data) => {
        if (data.threads.has(thread.id)) return false;
        data.threads.set(thread.id, thread);
        return true;
      }),
    upsert: (thread) =>
      this.write(async (data) => {
        data.threads.set(thread.id, thread);
      }),
    update: (change) => this.change((data) => updateThread(data, change)),
    touch: async (data, bumps) => {
      for (const [id, newest] of bumps) {
        const thread = data.threads.get(id);
        if (!thread) continue;
        thread.updatedAt =
          this.defect === 'stamp'
            ? data.began
            : bumpedUpdatedAt(thread.updatedAt, new Date(), newest ? [newest] : []);
      }
    },
    delete: async (data, id) => {
      data.threads.delete(id);
      for (const m of data.messages.values()) if (m.threadId === id) data.messages.delete(m.id);
    },
    /** Every thread of the resource in order; core filters the metadata and cuts the page. */
    readPage: async ({ orderBy, direction, resourceId }) => {
      const threads = [...(await this.read()).threads.values()]
        .filter((t) => resourceId === undefined || t.resourceId === resourceId)
        .sort((a, b) => a[orderBy].getTime() - b[orderBy].getTime() || compareIds(a.id, b.id));
      return { kind: 'candidates', threads: direction === 'ASC' ? threads : threads.reverse() };
    },
  };

  readonly messages: MessageDriver<FileData> = {
    /** The page, its total and the include windows, all from one read of the file. */
    readPage: async (query) => {
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
    },
    byIds: async (ids, data) => {
      const { messages } = data ?? (await this.read());
      return ids.flatMap((id) => messages.get(id) ?? []);
    },
    /** Under the lock already: nothing read here can change before the write ends. */
    places: async (data, threadIds, messageIds) => {
      const places: Places = { threads: new Map(), messages: new Map() };
      for (const id of threadIds) {
        const thread = data.threads.get(id);
        if (thread) (places.threads as Map<string, string>).set(id, thread.resourceId);
      }
      for (const id of messageIds) {
        const m = data.messages.get(id);
        if (m) (places.messages as Map<string, Message>).set(id, m);
      }
      return places;
    },
    put: async (data, messages) => {
      for (const m of messages) data.messages.set(m.id, m);
    },
    remove: async (data, ids) => {
      for (const id of ids) data.messages.delete(id);
    },
  };

  readonly resources: ResourceDriver<FileData> = {
    get: async (id) => (await this.read()).resources.get(id) ?? null,
    update: (change) => this.change((data) => updateResource(data, change)),
    delete: async (data, id) => {
      data.resources.delete(id);
    },
  };

  /** Read-modify-write under the file lock, which no writer of any process can interleave with. */
  readonly workingMemory: LockedWorkingMemory = {
    kind: 'locked',
    update: async (cell, apply) => {
      const set = (data: FileData, value: string | null): boolean => {
        if (cell.scope === 'resource') {
          updateResource(data, { id: cell.resourceId, workingMemory: value, now: new Date() });
          return true;
        }
        return updateThread(data, { id: cell.threadId, metadata: { workingMemory: value } }) !== null;
      };
      const current = (data: FileData): string | null => {
        if (cell.scope === 'resource') return data.resources.get(cell.resourceId)?.workingMemory ?? null;
        const stored = data.threads.get(cell.threadId)?.metadata.workingMemory;
        return typeof stored === 'string' ? stored : null;
      };
      if (this.defect !== 'atomic') {
        return this.write(async (data) => {
          if (cell.scope === 'thread' && !data.threads.has(cell.threadId)) return false;
          return set(data, apply(current(data)));
        });
      }
      // The defect: read, let others run, write what was computed from the stale read.
      const read = await this.read();
      if (cell.scope === 'thread' && !read.threads.has(cell.threadId)) return false;
      const next = apply(current({ ...read, began: new Date() }));
      await sleep(Math.random() * 3);
      return this.write(async (data) => set(data, next));
    },
  };

  /**
   * Keyword recall: the index is the messages' text in the file itself (so every write keeps
   * it), analyzed at each search and ranked by core's exact BM25.
   */
  private readonly keywordDomain: KeywordDriver<FileData> = {
    analyzer: createKeywordAnalyzer(),
    ranking: 'bm25',
    search: async (query) => {
      const { messages } = await this.read();
      const analyzer = this.keywordDomain.analyzer;
      const indexed = [...messages.values()].flatMap((m) => {
        const terms = keywordTerms(this.defect === 'role' ? { ...m, role: 'user' } : m, analyzer);
        return terms.length === 0 ? [] : [[m, terms] as const];
      });
      return searchIndexed(indexed, query);
    },
    deleteByThread: async () => {},
    deleteByMessages: async () => {},
  };

  /** Semantic recall: an exact scan of the vectors kept in the same file. */
  private readonly vectorDomain: VectorDriver<FileData> = {
    search: 'exact',
    getSpace: async () => (await this.read()).space,
    /** The first claim records its space, under the lock; later claims get the recorded one. */
    claimSpace: (space) =>
      this.write(async (data) => {
        data.space ??= space;
        return data.space;
      }),
    /** Vectors of messages that are gone (deleted meanwhile) are skipped. */
    upsertVectors: async (_space, vectors) => {
      // The defect: which messages exist is read before the lock, so a delete in between is missed.
      const before = this.defect === 'vector-check' ? (await this.read()).messages : undefined;
      if (before) await sleep(5);
      return this.write(async (data) => {
        for (const { messageId, hash, vector } of vectors) {
          if ((before ?? data.messages).has(messageId))
            data.vectors.set(messageId, { messageId, hash, vector });
        }
      });
    },
    getVectors: async (_space, ids) => {
      const { vectors } = await this.read();
      return ids.flatMap((id) => {
        const stored = vectors.get(id);
        return stored ? [{ messageId: id, hash: stored.hash }] : [];
      });
    },
    deleteVectors: (_space, ids) =>
      this.write(async (data) => {
        for (const id of ids) data.vectors.delete(id);
      }),
    /** Scope and exclusions first, then the ranking: `topK` hits whenever that many are in scope. */
    searchVectors: async (args) => {
      const { messages, vectors } = await this.read();
      const excluded = new Set(args.excludeIds);
      const hits: VectorHit[] = [];
      for (const { messageId, hash, vector } of vectors.values()) {
        const message = messages.get(messageId);
        if (!message || message.resourceId !== args.resourceId || excluded.has(messageId)) continue;
        if (args.threadId !== undefined && message.threadId !== args.threadId) continue;
        const { threadId, createdAt } = message;
        hits.push({ messageId, threadId, hash, score: cosine(vector, args.vector), createdAt });
      }
      return hits.sort(compareHits).slice(0, args.topK);
    },
    deleteByThread: async (data, threadId) => {
      for (const m of data.messages.values()) if (m.threadId === threadId) data.vectors.delete(m.id);
    },
    deleteByMessages: async (data, ids) => {
      for (const id of ids) data.vectors.delete(id);
    },
  };

  /** Observation logs: a swap is one write under the lock. */
  private readonly observationDomain: ObservationDriver<FileData> = {
    head: async (key) => (await this.read()).logs.get(key)?.at(-1) ?? null,
    generations: async (key) => (await this.read()).logs.get(key) ?? [],
    swap: (expected, next) =>
      this.write(async (data) => {
        const rows = swapRows(data.logs.get(next.key) ?? [], expected, next);
        if (rows) data.logs.set(next.key, rows);
        return rows !== null;
      }),
    deleteByThread: async (data, threadId) => {
      data.logs.delete(`thread:${threadId}`);
    },
    deleteByMessages: async () => {},
    deleteByResource: async (data, resourceId) => {
      data.logs.delete(`resource:${resourceId}`);
    },
  };

  /**
   * A change of one record under the lock; with the `'metadata'` defect, applied to a stale read
   * of the whole file, which it then writes back over what others wrote meanwhile.
   */
  private async change<T>(apply: (data: FileData) => T): Promise<T> {
    if (this.defect !== 'metadata') return this.write(async (data) => apply(data));
    const stale = await this.read();
    await sleep(Math.random() * 3);
    return this.write(async (data) => apply(Object.assign(data, stale)));
  }

  /** The last whole write of the file. */
  private async read(): Promise<Omit<FileData, 'began'>> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if (driverCode(error) !== 'ENOENT') throw error;
      text = '{"threads":[],"messages":[],"resources":[],"space":null,"vectors":[],"logs":[]}';
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
      logs: new Map(
        (stored.logs ?? []).map((rows) => [
          rows[0]?.key ?? '',
          rows.map((r) => ({ ...r, updatedAt: new Date(r.updatedAt) })),
        ]),
      ),
    };
  }

  private async save(data: FileData): Promise<void> {
    const temp = `${this.file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const stored: StoredFile = {
      threads: [...data.threads.values()],
      messages: [...data.messages.values()],
      resources: [...data.resources.values()],
      space: data.space,
      vectors: [...data.vectors.values()].map((v) => ({ ...v, vector: Array.from(v.vector) })),
      logs: [...data.logs.values()],
    };
    await writeFile(temp, JSON.stringify(stored));
    await rename(temp, this.file);
  }

  /** Removes a lock held longer than its lease (the `'lease'` defect). */
  private async breakExpired(lock: string): Promise<void> {
    const since = await stat(lock).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (since > FILE_LEASE_MS) await unlink(lock).catch(() => undefined);
  }
}

/** A store on one JSON file shared by processes (see `JsonDriver`). */
export class JsonStore extends Store<JsonDriver> {
  constructor(options: JsonStoreOptions) {
    if (typeof options?.file !== 'string' || options.file === '') {
      throw new TypeError('json: file must be the path of the store file');
    }
    super(new JsonDriver(options.file, options));
  }

  /** The file holding every record. */
  get file(): string {
    return this.driver.file;
  }
}

/** The file as JSON: records with dates as strings once parsed, vectors as arrays of numbers. */
interface StoredFile {
  threads: Thread[];
  messages: Message[];
  resources: Resource[];
  space: EmbeddingSpace | null;
  vectors: { messageId: string; hash: string; vector: number[] }[];
  /** Each log's generations. */
  logs?: ObservationRow[][];
}

/** The dates of a record parsed from JSON, as `Date`s again. */
function dates(record: { createdAt: Date | string; updatedAt?: Date | string }) {
  const { createdAt, updatedAt } = record;
  return {
    createdAt: new Date(createdAt),
    ...(updatedAt === undefined ? {} : { updatedAt: new Date(updatedAt) }),
  };
}

/** Applies a thread change: title, merged metadata, `updatedAt` raised (core's `bumpedUpdatedAt`). */
function updateThread(data: FileData, { id, title, metadata }: ThreadChange): Thread | null {
  const thread = data.threads.get(id);
  if (!thread) return null;
  if (title !== undefined) thread.title = title;
  if (metadata) thread.metadata = shallowMerge(thread.metadata, metadata);
  thread.updatedAt = bumpedUpdatedAt(thread.updatedAt, new Date());
  return thread;
}

/** Applies a resource change, creating the resource when missing. */
function updateResource(data: FileData, { id, workingMemory, metadata, now }: ResourceChange): Resource {
  const resource = data.resources.get(id) ?? {
    id,
    workingMemory: null,
    metadata: {},
    createdAt: now,
    updatedAt: now,
  };
  if (workingMemory !== undefined) resource.workingMemory = workingMemory;
  if (metadata) resource.metadata = shallowMerge(resource.metadata, metadata);
  resource.updatedAt = now;
  data.resources.set(id, resource);
  return resource;
}
