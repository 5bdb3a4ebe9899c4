import type { DomainHooks } from './domains.ts';
import { compareIds } from './helpers.ts';
import type { Message } from './records.ts';

/**
 * The vector capability a store may declare (`MemoryStorage.vectors`) so `Memory` can offer
 * semantic recall. Adapters supply these small primitives; core does the rest (embedding,
 * hashing, batching, windows, de-duplication, prompt labels, reindex).
 *
 * Rules every implementation keeps:
 * - Vectors live in the same database as the messages, one per `(message id, space)`.
 * - Deleting a message, or a thread with its messages, removes their vectors in the same write:
 *   core calls the driver's `deleteByMessages` / `deleteByThread` inside the store's write.
 * - Scope is applied before ranking: a search never returns a message of another resource (or,
 *   with `threadId`, of another thread), and returns `topK` hits whenever that many exist.
 * - The resource and thread of a hit are the message's current ones (a moved message is found
 *   in its new thread).
 */

/** Which embedder made a vector: an id such as `'openai:text-embedding-3-small'` and a dimension. */
export interface EmbeddingSpace {
  /** The embedder's `provider:modelId` (or any stable name). */
  id: string;
  /** Length of every vector in this space. */
  dimensions: number;
}

/** One message's vector. `hash` identifies the text it was made from. */
export interface MessageVector {
  messageId: string;
  /** Core's hash of the embedded text; an unchanged hash means no re-embedding. */
  hash: string;
  /** `space.dimensions` numbers, L2-normalised by core. */
  vector: Float32Array;
}

/** A stored vector's bookkeeping (the vector itself is not read back). */
export interface StoredVector {
  messageId: string;
  hash: string;
}

/** `searchVectors` arguments; ids are validated by core. */
export interface VectorSearch {
  space: EmbeddingSpace;
  /** The query vector, L2-normalised, `space.dimensions` long. */
  vector: Float32Array;
  /** How many hits at most (≥ 1). */
  topK: number;
  /** Only messages of this resource. */
  resourceId: string;
  /** When given, only messages of this thread (which must belong to `resourceId`). */
  threadId?: string;
  /** Messages never to return (for example those already in the recent history). */
  excludeIds?: string[];
}

/** `searchWithWindows` arguments: a search, and the window to read around each hit. */
export interface WindowedSearch extends VectorSearch {
  /** Messages of the hit's own thread (in the resource) before each hit, at most. */
  before: number;
  /** Messages of the hit's own thread (in the resource) after each hit, at most. */
  after: number;
  /**
   * Also the recent history, in the same read (only where `historyInSearch` is true): the newest
   * `last` messages of `threadId` in the resource are left out of the hits, as `excludeIds` are,
   * and their ids come back in `history`. What recall reads beside its search.
   */
  history?: { threadId: string; last: number };
}

/** What `searchWithWindows` returns. */
export interface WindowedHits {
  /** As `searchVectors` returns them. */
  hits: VectorHit[];
  /**
   * Each hit's message with up to `before`/`after` neighbours of its own thread in the resource,
   * as `listMessages({ threadId, resourceId, perPage: 0, include })` reads them: oldest first,
   * each message once.
   */
  windows: Message[];
  /**
   * With `history`: the ids of the thread's newest `last` messages in the resource, newest first,
   * as `listMessages({ threadId, resourceId, perPage: last, direction: 'DESC' })` lists them.
   * Absent when no embedding space is recorded yet: then nothing is read.
   */
  history?: string[];
}

/** One search result. */
export interface VectorHit {
  messageId: string;
  threadId: string;
  /** The hash stored with the vector (core drops hits whose text changed since). */
  hash: string;
  /** Cosine similarity in [-1, 1]; higher is closer. */
  score: number;
  /** The message's `createdAt`, for the tie rule. */
  createdAt: Date;
}

/**
 * Exact order of hits: `score` descending, then `createdAt` descending (newer first), then
 * `messageId` ascending in UTF-8 byte order (as ids are ordered everywhere in engram). Scores are
 * compared as computed by the backend.
 */
export function compareHits(
  a: Pick<VectorHit, 'score' | 'createdAt' | 'messageId'>,
  b: Pick<VectorHit, 'score' | 'createdAt' | 'messageId'>,
): number {
  return (
    b.score - a.score || b.createdAt.getTime() - a.createdAt.getTime() || compareIds(a.messageId, b.messageId)
  );
}

/**
 * The vector primitives of a store. Every method throws a `MemoryError`; a dimension other than
 * `space.dimensions` is `INVALID_ARGUMENT` and writes nothing.
 */
export interface VectorStore {
  /**
   * How search works, for the docs and the suite: `'exact'` scans every vector of the scope;
   * `'index'` uses an approximate index (results may differ from an exact ranking).
   */
  readonly search: 'exact' | 'index';
  /** The recorded embedding space, or `null` when no vector was ever stored. */
  getSpace(): Promise<EmbeddingSpace | null>;
  /**
   * Records `space` as this store's embedding space when none is recorded yet, and returns the
   * recorded one (which may differ: core then refuses to mix spaces). Idempotent; safe to call
   * concurrently (exactly one space wins).
   */
  claimSpace(space: EmbeddingSpace): Promise<EmbeddingSpace>;
  /**
   * Stores (or replaces) the vectors of existing messages; vectors of absent messages are
   * skipped, so a message deleted meanwhile leaves no orphan. One row per message.
   */
  upsertVectors(space: EmbeddingSpace, vectors: MessageVector[]): Promise<void>;
  /** The stored vectors among `messageIds` (absent ones left out), in any order. */
  getVectors(space: EmbeddingSpace, messageIds: string[]): Promise<StoredVector[]>;
  /**
   * Optional: the stored vectors among `messageIds` with their numbers (absent ones left out), in
   * any order — what `exportResource` writes, so an import into a store of the same space needs
   * no embedding. A store without it exports no vectors.
   */
  readVectors?(space: EmbeddingSpace, messageIds: string[]): Promise<MessageVector[]>;
  /** Removes the vectors of these messages (the messages stay). Unknown ids are ignored. */
  deleteVectors(space: EmbeddingSpace, messageIds: string[]): Promise<void>;
  /** The `topK` nearest vectors in scope, ordered by `compareHits`. */
  searchVectors(args: VectorSearch): Promise<VectorHit[]>;
  /**
   * Optional fast path: `searchVectors` and the windows of its hits in one round trip, as one
   * consistent read (what vector-mode recall needs). Absent: core searches, then reads the windows
   * with `listMessages`. Present: it returns what those two calls would, held to that by the suite.
   */
  searchWithWindows?(args: WindowedSearch): Promise<WindowedHits>;
  /**
   * Whether `searchWithWindows` also takes `history` (one round trip for the history, the search
   * and the windows of vector-mode recall). Absent or false: `history` is refused.
   */
  readonly historyInSearch?: boolean;
}

/**
 * The vector domain of a driver: the primitives of `VectorStore` without the validation (core
 * validates ids, spaces, dimensions and `topK`, and checks the space against the recorded one
 * before each call), plus the cascade hooks core calls inside the writes that delete messages.
 */
export interface VectorDriver<Tx = unknown> extends DomainHooks<Tx> {
  readonly search: 'exact' | 'index';
  getSpace(): Promise<EmbeddingSpace | null>;
  claimSpace(space: EmbeddingSpace): Promise<EmbeddingSpace>;
  upsertVectors(space: EmbeddingSpace, vectors: MessageVector[]): Promise<void>;
  getVectors(space: EmbeddingSpace, messageIds: string[]): Promise<StoredVector[]>;
  /** Optional (see `VectorStore.readVectors`): `space.dimensions` numbers per vector, as stored. */
  readVectors?(space: EmbeddingSpace, messageIds: string[]): Promise<MessageVector[]>;
  deleteVectors(space: EmbeddingSpace, messageIds: string[]): Promise<void>;
  searchVectors(args: VectorSearch & { excludeIds: string[] }): Promise<VectorHit[]>;
  /**
   * Optional (see `VectorStore.searchWithWindows`): the windows may come in any order, duplicates
   * allowed; core orders them and drops repeats.
   */
  searchWithWindows?(args: WindowedSearch & { excludeIds: string[] }): Promise<WindowedHits>;
  /**
   * Optional (see `VectorStore.historyInSearch`): `searchWithWindows` takes `history` and returns
   * its ids, newest first.
   */
  readonly historyInSearch?: boolean;
}
