import type { JsonObject, MemoryStorage, Message, Thread } from '@engram/core';

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
  /** `null` when the backend can run here, else why not. */
  unavailable(): string | null;
  open(options?: OpenOptions): Promise<OpenTarget>;
  /**
   * Caps on the large fixtures for a backend too slow for the full ones, and why. The run
   * records the reason next to the figures.
   */
  fixtureCap?(): Promise<{ messages: number; threads: number; reason: string } | null>;
  /** Removes what the run wrote (its file, schema, keys or database); called once, at the end. */
  dispose?(): Promise<void>;
}
