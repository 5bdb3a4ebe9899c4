import type {
  EmbeddingModelLike,
  JsonObject,
  MemoryStorage,
  Message,
  MessageVector,
  Thread,
} from '@engram/core';

/**
 * The least the raw driver can do for the same result as an engram operation, against the same
 * tables or keys the adapter uses.
 */
export interface RawBaseline {
  /** Read one resource's working memory. */
  getWorkingMemory(resourceId: string): Promise<string | null>;
  /** Replace one resource's working memory (one upsert / one write). */
  replaceWorkingMemory(resourceId: string, document: string): Promise<void>;
  /** Deep-merge `patch` into one resource's JSON working memory, serialised against other writers. */
  mergeWorkingMemory(resourceId: string, patch: JsonObject): Promise<void>;
  /** Insert a batch of messages of one existing thread. */
  saveMessages(messages: Message[]): Promise<void>;
  /** The newest `n` messages of a thread. */
  listNewest(threadId: string, n: number): Promise<unknown[]>;
  /** The first page (newest `n`) of a resource's threads. */
  listThreads(resourceId: string, n: number): Promise<unknown[]>;
}

/**
 * Another memory library on the same database (Mastra 1.x), doing what engram does through its
 * own public API. Each side's atomicity is recorded next to the figures.
 */
export interface Peer {
  /** Name and version, as printed in the report. */
  name: string;
  /** How the peer performs each write, and what a concurrent writer can do to it. */
  atomicity: { replace: string; merge: string; saveMessages: string };
  createThread(threadId: string, resourceId: string): Promise<void>;
  getWorkingMemory(resourceId: string): Promise<string | null>;
  replaceWorkingMemory(resourceId: string, document: string): Promise<void>;
  /** Read, deep-merge in JS, write back: whatever the peer offers for it. */
  mergeWorkingMemory(resourceId: string, patch: JsonObject): Promise<void>;
  saveMessages(messages: Message[]): Promise<void>;
  listNewest(threadId: string, n: number): Promise<unknown[]>;
  close(): Promise<void>;
}

/** One open connection to a backend: the engram store and the raw baseline, side by side. */
export interface OpenTarget {
  storage: MemoryStorage;
  raw: RawBaseline;
  /** The peer library on the same database, where one is benchmarked. */
  peer?: Peer;
  /**
   * Bulk writers of records in the adapter's own layout, for backends where seeding the large
   * fixtures through the store would take too long. The records are then read through the store.
   */
  seed?: {
    messages(messages: Message[]): Promise<void>;
    threads(threads: Thread[]): Promise<void>;
  };
  close(): Promise<void>;
}

/** What to open besides the store and the raw baseline. */
export interface OpenOptions {
  /** Also open the peer library (the main process does; contention workers do not). */
  peer?: boolean;
}

/** A backend to benchmark. `open()` is also called inside each contention worker process. */
export interface BenchTarget {
  name: string;
  /**
   * Why the backend cannot run here although its service variable is set, or `null`. An unset
   * variable (adapters.json's `envVar`) is reported by `loadTarget` before this is asked.
   */
  unavailable?(): string | null;
  open(options?: OpenOptions): Promise<OpenTarget>;
  /**
   * A store on the database `open` uses with the keyword index off (`keywords: false`),
   * initialised: the save row is timed through it too. Call it after `open`; the next `open`
   * rebuilds the index.
   */
  openWithoutKeywords?(): Promise<MemoryStorage>;
  /**
   * Caps on the large fixtures for a backend too slow for the full ones, and why. The run
   * records the reason next to the figures.
   */
  fixtureCap?(): Promise<{ messages: number; threads: number; reason: string } | null>;
  /** Opens the store with vectors and the raw exact scan for the recall section (`--recall`). */
  openRecall?(): Promise<RecallTarget>;
  /** Removes what the run wrote (its file, schema, keys or database); called once, at the end. */
  dispose?(): Promise<void>;
}

/** A target as `loadTarget` returns it: `unavailable()` covers the service variable too. */
export interface LoadedTarget extends BenchTarget {
  /** `null` when the backend can run here, else why not. */
  unavailable(): string | null;
}

/** The raw driver's own exact scan of the vectors engram stored, scoped to one resource. */
export interface RawRecall {
  /** How it ranks, in words, for the report. */
  describe: string;
  /** The `topK` nearest messages of `resourceId`, best first (`id` or `messageId` on each). */
  scan(resourceId: string, vector: Float32Array, topK: number): Promise<{ id: string }[]>;
}

/**
 * Another way the store searches the same vectors (an index, another storage type), set up and
 * torn down per size.
 */
export interface RecallVariant {
  name: string;
  /** A store on the same data that searches this way. */
  storage: MemoryStorage;
  /** The raw scan its rows are compared with, when not the target's own (another storage type). */
  raw?: RawRecall;
  /**
   * An index search that may miss a nearer vector: its top 3 are reported against the exact scan's,
   * not required to equal its raw scan's.
   */
  approximate?: boolean;
  /** Largest fixture the variant runs at, and why, when smaller than the run's. */
  cap?: { messages: number; reason: string };
  /** Builds what the variant needs (timed and reported). */
  before(): Promise<void>;
  /** Removes it again, so the exact comparisons of the next size stay exact. */
  after(): Promise<void>;
}

/** The peer library's semantic recall on the same database, holding the same messages and vectors. */
export interface RecallPeer {
  name: string;
  /** What is timed on the peer's side, in words, for the report. */
  describe: string;
  /** Largest fixture the peer is grown to and timed at, and why, when smaller than the run's. */
  cap?: { messages: number; reason: string };
  createThread(threadId: string, resourceId: string): Promise<void>;
  /** Writes a batch of messages and their vectors (engram's ids, texts and vectors) in its layout. */
  write(messages: Message[], vectors: MessageVector[]): Promise<void>;
  /** Its vector query for a precomputed vector: the `topK` nearest of `resourceId`, best first. */
  search(resourceId: string, vector: Float32Array, topK: number): Promise<{ id: string }[]>;
  /** Its recall as users call it (history, vector search, windows) for the query text. */
  recall(threadId: string, resourceId: string, query: string): Promise<unknown>;
  close(): Promise<void>;
}

/** The raw driver's own full-text query of the keyword index the store keeps, in one resource. */
export interface RawKeywords {
  /** The query, in words, for the report. */
  describe: string;
  /** The `topK` best messages of `resourceId` for the analyzed `terms`, best first. */
  search(resourceId: string, terms: string[], topK: number): Promise<{ id: string }[]>;
}

/** What the recall section opens on a backend. */
export interface RecallTarget {
  /** A store with `vectors`, configured for the bench (see `note`). */
  storage: MemoryStorage;
  raw: RawRecall;
  /** The backend's own full-text query on the store's keyword index (`--retrieval-latency`). */
  rawKeywords?: RawKeywords;
  variants?: RecallVariant[];
  /** Opens the peer library's recall on the same database, with the bench's embedder and settings. */
  openPeer?(settings: {
    embedder: EmbeddingModelLike;
    dimensions: number;
    topK: number;
    range: number;
  }): Promise<RecallPeer>;
  /** Writes messages in the store's layout faster than `saveMessages` (FerretDB). */
  seed?(messages: Message[]): Promise<void>;
  /** Writes vectors in the store's layout faster than `upsertVectors` (FerretDB). */
  seedVectors?(vectors: MessageVector[]): Promise<void>;
  /** Messages per `saveMessages` / `upsertVectors` call while growing the fixture. */
  batch?: number;
  /** Largest size at which `memory.recall` is timed too (default: every size). */
  memoryRecallUpTo?: number;
  /** Largest fixture this backend runs, and why, when smaller than the others. */
  cap?: { messages: number; reason: string };
  /** Runs after each growth, before timing (e.g. `ANALYZE`). */
  settle?(): Promise<void>;
  /** What differs from the store's defaults here, for the report. */
  note?: string;
  close(): Promise<void>;
}
