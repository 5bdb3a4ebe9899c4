import { createKeywordAnalyzer, type KeywordAnalyzerOptions } from '../recall/analyzer.ts';
import type { StoreCapabilities } from './capabilities.ts';
import { copyMessage, copyResource, copyThread } from './copy.ts';
import type { AdapterDescriptor } from './descriptor.ts';
import type {
  Driver,
  MessageDriver,
  Places,
  ResourceChange,
  ResourceDriver,
  ThreadChange,
  ThreadDriver,
  WindowQuery,
} from './driver.ts';
import { compareIds, inDateRange, shallowMerge, sortMessages } from './helpers.ts';
import { type KeywordDriver, keywordTerms, searchIndexed } from './keywords.ts';
import { slicePage } from './listing.ts';
import { type ObservationDriver, type ObservationRow, swapRows } from './observations.ts';
import type { Message, Resource, Thread } from './records.ts';
import type { SettingsDriver } from './settings.ts';
import { Store } from './store.ts';
import { compareTurnRows, isOlderThan, type TurnDriver, type TurnRow } from './turns.ts';
import { bumpedUpdatedAt } from './updated-at.ts';
import { cosine } from './vector-store.ts';
import {
  compareHits,
  type EmbeddingSpace,
  type MessageVector,
  type StoredVector,
  type VectorDriver,
  type VectorHit,
  type VectorSearch,
} from './vectors.ts';
import type { LockedWorkingMemory } from './working-memory.ts';

/** Which optional domains the in-memory driver declares (all by default). */
export interface MemoryDriverOptions {
  vectors?: boolean;
  /** `false` leaves the keyword index out; an object sets its analyzer (stop words, stemming). */
  keywords?: boolean | KeywordAnalyzerOptions;
  observations?: boolean;
  turns?: boolean;
  settings?: boolean;
}

/** A unit of work of the in-memory driver: its changes, applied together when it commits. */
export interface MemoryTx {
  changes: Array<() => void>;
}

interface VectorRow {
  hash: string;
  vector: Float32Array;
}

/**
 * The reference driver: records in plain maps of this process, written to be obviously right
 * rather than fast. It keeps its own copies (records in and out are copied), runs its writes one
 * at a time, and applies a write's changes together when it commits, so every operation is
 * atomic within the process and readers never see half of one.
 */
export class MemoryDriver implements Driver<MemoryTx> {
  readonly name: string = 'memory';
  /** Atomic within the process, which holds all its data. */
  readonly capabilities: StoreCapabilities = {
    atomicWorkingMemory: true,
    transactionalBatches: true,
    processLocal: true,
  };
  readonly errors = {
    classify: () => undefined,
  };

  protected readonly threadMap = new Map<string, Thread>();
  protected readonly messageMap = new Map<string, Message>();
  protected readonly resourceMap = new Map<string, Resource>();
  private space: EmbeddingSpace | null = null;
  /** Space key → message id → vector. */
  private readonly vectorRows = new Map<string, Map<string, VectorRow>>();
  /** Message id → its keyword terms (messages with text only). */
  private readonly keywordRows = new Map<string, string[]>();
  /** Turn id → its row. */
  private readonly turnRows = new Map<string, TurnRow>();
  /** Log key → its generations, oldest first. */
  private readonly logs = new Map<string, ObservationRow[]>();
  /** Setting key → its JSON text. */
  private readonly settingRows = new Map<string, string>();
  /** The tail of the queue of writes. */
  private writes: Promise<unknown> = Promise.resolve();

  /**
   * `vectors: false` / `keywords: false` / `observations: false` / `turns: false` / `settings: false` leave out
   * that domain (default: every domain). `keywords` may instead give the keyword analyzer's
   * options (stop words, stemming).
   */
  constructor(options: MemoryDriverOptions = {}) {
    if (options.vectors === false) this.vectors = undefined;
    if (options.observations === false) this.observations = undefined;
    if (options.turns === false) this.turns = undefined;
    if (options.settings === false) this.settings = undefined;
    if (options.keywords === false) this.keywords = undefined;
    else this.keywords = this.keywordDomain(options.keywords === true ? {} : (options.keywords ?? {}));
  }

  async open(): Promise<void> {}
  async close(): Promise<void> {}

  write<T>(fn: (tx: MemoryTx) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      const tx: MemoryTx = { changes: [] };
      const result = await fn(tx);
      for (const change of tx.changes) change();
      return result;
    });
  }

  /** Runs `fn` after every write queued before it, alone. */
  private exclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    const result = this.writes.then(fn);
    this.writes = result.catch(() => undefined);
    return result;
  }

  readonly threads: ThreadDriver<MemoryTx> = {
    get: async (id) => {
      const thread = this.threadMap.get(id);
      return thread ? copyThread(thread) : null;
    },
    insert: (thread) =>
      this.exclusive(() => {
        if (this.threadMap.has(thread.id)) return false;
        this.threadMap.set(thread.id, copyThread(thread));
        return true;
      }),
    upsert: (thread) =>
      this.exclusive(() => {
        this.threadMap.set(thread.id, copyThread(thread));
      }),
    update: (change) => this.exclusive(() => this.updateThread(change)),
    touch: async (tx, bumps) => {
      tx.changes.push(() => {
        const now = new Date();
        for (const [id, newest] of bumps) {
          const thread = this.threadMap.get(id);
          if (thread) thread.updatedAt = bumpedUpdatedAt(thread.updatedAt, now, newest ? [newest] : []);
        }
      });
    },
    delete: async (tx, id) => {
      tx.changes.push(() => {
        this.threadMap.delete(id);
        for (const [messageId, message] of this.messageMap) {
          if (message.threadId === id) {
            this.messageMap.delete(messageId);
            this.keywordRows.delete(messageId);
          }
        }
      });
    },
    readPage: async (query) => {
      const threads = [...this.threadMap.values()].filter(
        (t) => query.resourceId === undefined || t.resourceId === query.resourceId,
      );
      threads.sort(
        (a, b) => a[query.orderBy].getTime() - b[query.orderBy].getTime() || compareIds(a.id, b.id),
      );
      if (query.direction === 'DESC') threads.reverse();
      return { kind: 'candidates', threads: threads.map(copyThread) };
    },
  };

  readonly messages: MessageDriver<MemoryTx> = {
    readPage: async (query) => {
      const ofThread = (threadId: string) => this.threadMessages(threadId);
      const inScope = (m: Message) => query.resourceId === undefined || m.resourceId === query.resourceId;
      const filtered = ofThread(query.threadId).filter(
        (m) => inScope(m) && inDateRange(m.createdAt, query.dateRange),
      );
      const ordered = query.direction === 'ASC' ? filtered : [...filtered].reverse();
      return {
        page: slicePage(ordered, query.page, query.perPage).map(copyMessage),
        total: filtered.length,
        windows: this.windows(query.include, query.resourceId),
      };
    },
    byIds: async (ids) => ids.flatMap((id) => this.messageMap.get(id) ?? []).map(copyMessage),
    places: async (_tx, threadIds, messageIds) => {
      const places: Places = { threads: new Map(), messages: new Map() };
      for (const id of threadIds) {
        const thread = this.threadMap.get(id);
        if (thread) (places.threads as Map<string, string>).set(id, thread.resourceId);
      }
      for (const id of messageIds) {
        const message = this.messageMap.get(id);
        if (message) {
          const { threadId, resourceId } = message;
          (places.messages as Map<string, { threadId: string; resourceId: string }>).set(id, {
            threadId,
            resourceId,
          });
        }
      }
      return places;
    },
    put: async (tx, messages) => {
      const copies = messages.map(copyMessage);
      const analyzer = this.keywords?.analyzer;
      const terms = copies.map((m) => (analyzer ? keywordTerms(m, analyzer) : []));
      tx.changes.push(() => {
        copies.forEach((message, i) => {
          this.messageMap.set(message.id, message);
          const t = terms[i] ?? [];
          if (t.length > 0) this.keywordRows.set(message.id, t);
          else this.keywordRows.delete(message.id);
        });
      });
    },
    remove: async (tx, ids) => {
      tx.changes.push(() => {
        for (const id of ids) {
          this.messageMap.delete(id);
          this.keywordRows.delete(id);
        }
      });
    },
  };

  readonly resources: ResourceDriver<MemoryTx> = {
    list: async (after, limit) =>
      [...this.resourceMap.keys()]
        .filter((id) => after === null || compareIds(id, after) > 0)
        .sort(compareIds)
        .slice(0, limit),
    get: async (id) => {
      const resource = this.resourceMap.get(id);
      return resource ? copyResource(resource) : null;
    },
    update: (change) => this.exclusive(() => this.updateResource(change)),
    delete: async (tx, id) => {
      tx.changes.push(() => this.resourceMap.delete(id));
    },
  };

  private updateThread({ id, title, metadata }: ThreadChange): Thread | null {
    const stored = this.threadMap.get(id);
    if (!stored) return null;
    const next: Thread = {
      ...stored,
      title: title ?? stored.title,
      metadata: metadata ? shallowMerge(stored.metadata, metadata) : stored.metadata,
      updatedAt: bumpedUpdatedAt(stored.updatedAt, new Date()),
    };
    this.threadMap.set(id, copyThread(next));
    return copyThread(next);
  }

  private updateResource({ id, workingMemory, metadata, now }: ResourceChange): Resource {
    const stored = this.resourceMap.get(id) ?? {
      id,
      workingMemory: null,
      metadata: {},
      createdAt: now,
      updatedAt: now,
    };
    const next: Resource = {
      ...stored,
      workingMemory: workingMemory === undefined ? stored.workingMemory : workingMemory,
      metadata: metadata ? shallowMerge(stored.metadata, metadata) : stored.metadata,
      updatedAt: now,
    };
    this.resourceMap.set(id, copyResource(next));
    return copyResource(next);
  }

  /** Locked: the read and the write run alone, without awaiting in between. */
  readonly workingMemory: LockedWorkingMemory = {
    kind: 'locked',
    update: (cell, apply) =>
      this.exclusive(() => {
        if (cell.scope === 'resource') {
          const current = this.resourceMap.get(cell.resourceId)?.workingMemory ?? null;
          this.updateResource({ id: cell.resourceId, workingMemory: apply(current), now: new Date() });
          return true;
        }
        const stored = this.threadMap.get(cell.threadId)?.metadata.workingMemory;
        if (!this.threadMap.has(cell.threadId)) return false;
        const next = apply(typeof stored === 'string' ? stored : null);
        this.updateThread({ id: cell.threadId, metadata: { workingMemory: next } });
        return true;
      }),
  };

  /** Exact vector search in double precision: the oracle of the suite's recall checks. */
  vectors: VectorDriver<MemoryTx> | undefined = {
    search: 'exact',
    getSpace: async () => (this.space ? { ...this.space } : null),
    claimSpace: async (space) => {
      this.space ??= { ...space };
      return { ...this.space };
    },
    upsertVectors: async (space, vectors) => {
      const rows = this.rowsOf(space);
      for (const v of vectors) {
        if (this.messageMap.has(v.messageId)) {
          rows.set(v.messageId, { hash: v.hash, vector: Float32Array.from(v.vector) });
        }
      }
    },
    getVectors: async (space, messageIds) => {
      const rows = this.rowsOf(space);
      return messageIds.flatMap((id): StoredVector[] => {
        const row = rows.get(id);
        return row ? [{ messageId: id, hash: row.hash }] : [];
      });
    },
    readVectors: async (space, messageIds) => {
      const rows = this.rowsOf(space);
      return messageIds.flatMap((id): MessageVector[] => {
        const row = rows.get(id);
        return row ? [{ messageId: id, hash: row.hash, vector: row.vector }] : [];
      });
    },
    deleteVectors: async (space, messageIds) => {
      const rows = this.rowsOf(space);
      for (const id of messageIds) rows.delete(id);
    },
    searchVectors: async (args) => this.search(args),
    // The reference of the optional fast path: the history, the search and its hits' windows at once.
    historyInSearch: true,
    searchWithWindows: async ({ before, after, history, ...args }) => {
      const thread = history
        ? this.threadMessages(history.threadId).filter((m) => m.resourceId === args.resourceId)
        : [];
      const recent = history
        ? thread
            .slice(Math.max(0, thread.length - history.last))
            .map((m) => m.id)
            .reverse()
        : undefined;
      const hits = this.search({ ...args, excludeIds: [...args.excludeIds, ...(recent ?? [])] });
      const include = hits.map((h) => ({
        id: h.messageId,
        withPreviousMessages: before,
        withNextMessages: after,
      }));
      const found = { hits, windows: this.windows(include, args.resourceId) };
      return recent ? { ...found, history: recent } : found;
    },
    deleteByThread: async (tx, threadId) => {
      const ids = [...this.messageMap.values()].filter((m) => m.threadId === threadId).map((m) => m.id);
      tx.changes.push(() => this.forget(ids));
    },
    deleteByMessages: async (tx, ids) => {
      tx.changes.push(() => this.forget(ids));
    },
  };

  /** The keyword index. */
  keywords: KeywordDriver<MemoryTx> | undefined;

  /** Exact BM25 over every indexed message in double precision: the oracle of keyword recall. */
  private keywordDomain(analyzerOptions: KeywordAnalyzerOptions): KeywordDriver<MemoryTx> {
    return {
      analyzer: createKeywordAnalyzer(analyzerOptions),
      ranking: 'bm25',
      search: async (query) =>
        searchIndexed(
          [...this.keywordRows].flatMap(([id, row]) => {
            const m = this.messageMap.get(id);
            return m ? [[m, row] as const] : [];
          }),
          query,
        ),
      // `put`, `remove` and `threads.delete` keep the index; nothing else to remove.
      deleteByThread: async () => {},
      deleteByMessages: async () => {},
    };
  }

  /** Observation logs, swapped one at a time with the other writes. */
  observations: ObservationDriver<MemoryTx> | undefined = {
    head: async (key) => copyRows(this.logs.get(key) ?? []).at(-1) ?? null,
    generations: async (key) => copyRows(this.logs.get(key) ?? []),
    swap: (expected, next) =>
      this.exclusive(() => {
        const rows = swapRows(this.logs.get(next.key) ?? [], expected, next);
        if (rows) this.logs.set(next.key, copyRows(rows));
        return rows !== null;
      }),
    deleteByThread: async (tx, threadId) => {
      tx.changes.push(() => this.logs.delete(`thread:${threadId}`));
    },
    deleteByMessages: async () => {},
    deleteByResource: async (tx, resourceId) => {
      tx.changes.push(() => this.logs.delete(`resource:${resourceId}`));
    },
  };

  /** Turn records, newest first per thread. */
  turns: TurnDriver<MemoryTx> | undefined = {
    put: async (tx, row) => {
      tx.changes.push(() => this.turnRows.set(row.id, copyTurn(row)));
    },
    get: async (id) => {
      const row = this.turnRows.get(id);
      return row ? copyTurn(row) : null;
    },
    list: async (threadId, limit, before) =>
      [...this.turnRows.values()]
        .filter((row) => row.threadId === threadId && isOlderThan(row, before))
        .sort(compareTurnRows)
        .slice(0, limit)
        .map(copyTurn),
    deleteByThread: async (tx, threadId) => {
      tx.changes.push(() => {
        for (const [id, row] of this.turnRows) if (row.threadId === threadId) this.turnRows.delete(id);
      });
    },
    deleteByMessages: async (tx, ids) => {
      tx.changes.push(() => {
        for (const id of ids) this.turnRows.delete(id);
      });
    },
  };

  /** Settings: JSON text by key. */
  settings: SettingsDriver | undefined = {
    get: async (key) => this.settingRows.get(key) ?? null,
    put: (key, json) =>
      this.exclusive(() => {
        this.settingRows.set(key, json);
      }),
  };

  /** Drops the vectors of these messages in every space. */
  private forget(ids: Iterable<string>): void {
    for (const id of ids) for (const rows of this.vectorRows.values()) rows.delete(id);
  }

  /** The best `topK` vectors of the scope, exactly (cosine in double precision). */
  private search(args: VectorSearch & { excludeIds: string[] }): VectorHit[] {
    const excluded = new Set(args.excludeIds);
    const hits: VectorHit[] = [];
    for (const [id, row] of this.rowsOf(args.space)) {
      const m = this.messageMap.get(id);
      if (!m || m.resourceId !== args.resourceId || excluded.has(id)) continue;
      if (args.threadId !== undefined && m.threadId !== args.threadId) continue;
      hits.push({
        messageId: id,
        threadId: m.threadId,
        hash: row.hash,
        score: cosine(row.vector, args.vector),
        createdAt: new Date(m.createdAt),
      });
    }
    return hits.sort(compareHits).slice(0, args.topK);
  }

  /** A thread's messages, oldest first. */
  private threadMessages(threadId: string): Message[] {
    return sortMessages([...this.messageMap.values()].filter((m) => m.threadId === threadId));
  }

  /** Copies of each include window's messages (of `resourceId` only, when given). */
  private windows(include: readonly WindowQuery[], resourceId: string | undefined): Message[] {
    const inScope = (m: Message) => resourceId === undefined || m.resourceId === resourceId;
    return include.flatMap((window) => {
      const target = this.messageMap.get(window.id);
      if (!target || !inScope(target)) return [];
      const thread = this.threadMessages(target.threadId).filter(inScope);
      const at = thread.findIndex((m) => m.id === target.id);
      return thread
        .slice(Math.max(0, at - window.withPreviousMessages), at + window.withNextMessages + 1)
        .map(copyMessage);
    });
  }

  private rowsOf(space: EmbeddingSpace): Map<string, VectorRow> {
    const key = `${space.id}\u0000${space.dimensions}`;
    let rows = this.vectorRows.get(key);
    if (!rows) {
      rows = new Map();
      this.vectorRows.set(key, rows);
    }
    return rows;
  }
}

/**
 * The reference implementation of `MemoryStorage`, kept in plain maps in this process: the
 * oracle the conformance suite compares every adapter against.
 */
export class InMemoryStore extends Store<MemoryDriver> {
  /** See `MemoryDriverOptions`: every domain by default. */
  constructor(options: MemoryDriverOptions = {}) {
    super(new MemoryDriver(options));
  }
}

/** The descriptor of the reference store (`memory:`), for tools that open stores by descriptor. */
export const memoryDescriptor: AdapterDescriptor = {
  name: 'memory',
  package: '@engram/core',
  schemes: ['memory:'],
  open: async () => new InMemoryStore(),
  leaseMs: () => 0,
  service: {
    provision: async () => ({ url: 'memory:', options: {}, drop: async () => {} }),
  },
};

function copyRows(rows: readonly ObservationRow[]): ObservationRow[] {
  return rows.map((r) => ({ ...r, updatedAt: new Date(r.updatedAt) }));
}

function copyTurn(row: TurnRow): TurnRow {
  return { ...row, createdAt: new Date(row.createdAt) };
}
