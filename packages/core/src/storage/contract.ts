import type { StoreCapabilities } from './capabilities.ts';
import type { KeywordStore } from './keywords.ts';
import type { ObservationStore } from './observations.ts';
import type { ResourceDeletion } from './purge.ts';
import type {
  Direction,
  JsonObject,
  JsonValue,
  Message,
  MessageRole,
  Resource,
  Thread,
  WorkingMemoryScope,
} from './records.ts';
import type { SettingsStore } from './settings.ts';
import type { TurnStore } from './turns.ts';
import type { VectorStore } from './vectors.ts';

/** One page of a listing. `hasMore` is true when rows exist past this page. */
export interface Page {
  total: number;
  page: number;
  /** `false` when every row was returned in one page. */
  perPage: number | false;
  hasMore: boolean;
}

export interface ListThreadsArgs {
  /** Only threads of this resource. */
  resourceId?: string;
  /** AND-ed equality on metadata keys, compared as JSON values. */
  metadata?: JsonObject;
  /**
   * Only threads whose `createdAt` is in this range, whichever `orderBy`. Bounds are inclusive
   * unless marked exclusive; any valid `Date` is a valid bound.
   */
  dateRange?: DateRange;
  /** Zero-based page number. Default 0. `page × perPage` is at most 2³¹ − 1. */
  page?: number;
  /** Default 100; at most 2³¹ − 1 (`MAX_LISTING_COUNT`); `false` returns every thread. */
  perPage?: number | false;
  /** Default `'createdAt'`. Ties are broken by `id` in the same direction. */
  orderBy?: 'createdAt' | 'updatedAt';
  /** Default `'DESC'`. */
  direction?: Direction;
}

export interface ThreadPage extends Page {
  threads: Thread[];
}

export interface DateRange {
  start?: Date;
  end?: Date;
  /** Exclude `start` itself. Default false (inclusive). */
  startExclusive?: boolean;
  /** Exclude `end` itself. Default false (inclusive). */
  endExclusive?: boolean;
}

/** Adds a window around one message of the message's own thread to a listing. */
export interface IncludeWindow {
  id: string;
  /** How many messages before the target to add. Default 0; at most 2³¹ − 1. */
  withPreviousMessages?: number;
  /** How many messages after the target to add. Default 0; at most 2³¹ − 1. */
  withNextMessages?: number;
}

export interface ListMessagesArgs {
  threadId: string;
  /** Restricts the page and the windows to this resource (another's thread lists empty). */
  resourceId?: string;
  /** Zero-based page number. Default 0. `page × perPage` is at most 2³¹ − 1. */
  page?: number;
  /**
   * Default 40, at most 2³¹ − 1; `false` returns every message; `0` with `include` returns only
   * the windows.
   */
  perPage?: number | false;
  /** Order by `(createdAt, id)`. Default `'ASC'`. */
  direction?: Direction;
  /**
   * Filters the page (not the include windows). Bounds are inclusive unless marked exclusive.
   * Any valid `Date` is a valid bound, also one outside the range the backend can store.
   */
  dateRange?: DateRange;
  include?: IncludeWindow[];
}

export interface MessagePage extends Page {
  /** The page plus the include windows, de-duplicated and sorted in `direction`. */
  messages: Message[];
}

/** A partial update of one message; `id` selects it. */
export interface MessagePatch {
  id: string;
  role?: MessageRole;
  content?: JsonValue;
  type?: string;
  createdAt?: Date;
}

export interface UpdateThreadArgs {
  id: string;
  /** Kept when omitted. */
  title?: string;
  /** Shallow-merged into the stored metadata, atomically. */
  metadata?: JsonObject;
}

export interface UpdateResourceArgs {
  resourceId: string;
  /** Replaces the stored working memory when given (`null` clears it). */
  workingMemory?: string | null;
  /** Shallow-merged into the stored metadata, atomically. */
  metadata?: JsonObject;
}

export interface AtomicWorkingMemoryUpdate {
  scope: WorkingMemoryScope;
  /** Required for `scope: 'resource'`; with `threadId` too, it must own the thread (`INVALID_ARGUMENT`). */
  resourceId?: string;
  /** Required for `scope: 'thread'`. */
  threadId?: string;
  /**
   * Computes the new value from the current one. Must be pure: an adapter may call it more than
   * once when it retries an optimistic write. If it throws, nothing is written.
   */
  update: (current: string | null) => string | null;
}

/**
 * The storage contract every engram adapter implements.
 *
 * Arguments are validated by core before an adapter sees them: ids, records, and every count —
 * `page`, `perPage`, `withPreviousMessages`, `withNextMessages` and the row offset
 * `page × perPage` are integers from 0 to 2³¹ − 1 (`MAX_LISTING_COUNT`, which every backend
 * represents exactly); anything else (a fraction, a negative, `NaN`, `Infinity`, a numeric
 * string, a larger number) is `INVALID_ARGUMENT` naming the argument and the range.
 *
 * Every method throws a `MemoryError` on failure; a failed read never returns an empty result.
 * Its message names the adapter, the operation and ids, never the data written (message
 * content, titles, metadata, working memory), and neither does its `cause`.
 *
 * Lifecycle, the same for every store: it connects and migrates lazily on first use, through
 * one memoised open, so `init()` is optional (call it to fail fast at startup). `close()` is
 * idempotent; after it, every call, `init()` included, rejects with `CONNECTION` ("the store
 * is closed"): create a new store to connect again. `Store` (built from a driver) implements
 * this rule.
 */
export interface MemoryStorage {
  /** The adapter's name, used in error messages (`'libsql'`, `'pg'`, …). */
  readonly name: string;
  /**
   * What this store promises beyond the baseline (see `StoreCapabilities` for each key and its
   * default): name the keys where the store differs. Read them with `capabilitiesOf(store)`.
   */
  readonly capabilities?: Partial<StoreCapabilities>;
  /**
   * Optional domain: the vector primitives semantic recall needs (see `vectors.ts`). Absent by
   * default: a `Memory` with `semanticRecall` on such a store is refused with `UNSUPPORTED`
   * naming it. A store that declares it deletes a message's vectors in the same write as the
   * message (`deleteMessages`, `deleteThread`).
   */
  readonly vectors?: VectorStore;
  /**
   * Optional domain: the keyword (BM25) index keyword and hybrid recall need (see
   * `keywords.ts`). A store that declares it keeps the index in the same write as the messages.
   */
  readonly keywords?: KeywordStore;
  /**
   * Optional domain: the observation logs observational memory keeps (see `observations.ts`).
   * A store that declares it removes a thread's log in the same write as the thread.
   */
  readonly observations?: ObservationStore;
  /**
   * Optional domain: turn records, what each model call was given (see `turns.ts`). A store that
   * declares it removes a thread's records in the same write as the thread.
   */
  readonly turns?: TurnStore;
  /**
   * Optional domain: named JSON objects kept for the whole store (see `settings.ts`), where
   * `Memory` records its configuration for tools that read the store. Store-level, not per
   * resource: `deleteResource`, export and import leave settings alone.
   */
  readonly settings?: SettingsStore;

  /**
   * Connects and creates or migrates tables, indexes and collections, once per store (memoised;
   * a failed attempt is retried by the next call). Optional: every other method does it first.
   * Idempotent and safe to call concurrently, also from several processes. After `close()` it
   * rejects with `CONNECTION`.
   */
  init(): Promise<void>;
  /**
   * Releases connections (an injected client or pool is left open). Idempotent. Waits for an
   * `init()` in flight, so nothing stays half-open; afterwards every call rejects with
   * `CONNECTION`.
   */
  close(): Promise<void>;

  /** `null` when absent, or when `resourceId` is given and the thread belongs to another one. */
  getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null>;
  /**
   * Inserts a new thread and returns it as stored. Insert-only and atomic (an insert-if-absent
   * in the database, not a read followed by a write): when the id exists, or a concurrent caller
   * in any process creates it first, throws `CONFLICT` and changes nothing. Of N concurrent
   * creators of one id exactly one succeeds, and the stored thread is the winner's.
   */
  createThread(thread: Thread): Promise<Thread>;
  /** Upserts by id and returns the stored thread (all of it replaced, `updatedAt` as given). */
  saveThread(thread: Thread): Promise<Thread>;
  /**
   * Updates title (kept when omitted) and shallow-merges metadata atomically; bumps `updatedAt`.
   * Throws `NOT_FOUND` when the thread is absent. Every bump of a thread's `updatedAt` follows
   * `bumpedUpdatedAt`: it never decreases, and is never older than a message the write stored.
   */
  updateThread(args: UpdateThreadArgs): Promise<Thread>;
  /**
   * Deletes the thread and all its messages in one transaction (with
   * `capabilities.transactionalBatches: false`: calling it again completes one that failed
   * part-way). Absent threads are ignored.
   */
  deleteThread(args: { threadId: string }): Promise<void>;
  /** Filters AND-ed; default order `createdAt` DESC with ties by id; default `perPage` 100. */
  listThreads(args: ListThreadsArgs): Promise<ThreadPage>;

  /**
   * Upserts by id, all-or-nothing (with `capabilities.transactionalBatches: false`, a batch that
   * fails part-way may leave some messages written, each exactly as given, and saving it again
   * completes it; the checks below still write nothing when they refuse a batch). Every thread must exist (`NOT_FOUND`) and belong to the
   * message's `resourceId` (`INVALID_ARGUMENT`). A message saved again with another `threadId`
   * of the same resource moves; an id stored for a message of another resource is `CONFLICT`
   * and nothing of the batch is written (checked inside the write, so no concurrent save can
   * slip between check and write). The threads of the whole batch are checked before the ids.
   * Bumps the touched threads' `updatedAt` (to at least each saved `createdAt`). Returns them as stored.
   */
  saveMessages(messages: Message[]): Promise<Message[]>;
  /** Ordered by `(createdAt, id)`; see `ListMessagesArgs` for paging, ranges and windows. */
  listMessages(args: ListMessagesArgs): Promise<MessagePage>;
  /** The messages found among `ids`, ordered by `(createdAt, id)` ascending. */
  listMessagesById(args: { ids: string[] }): Promise<Message[]>;
  /**
   * Partial update by id; unknown ids are ignored. Returns the updated messages. A patch cannot
   * move a message: one naming `threadId` or `resourceId` is `INVALID_ARGUMENT`. Like
   * `deleteMessages`, it addresses messages by id alone, with no resource scope: check ownership
   * (`listMessagesById`) before passing ids that came from a tenant.
   */
  updateMessages(patches: MessagePatch[]): Promise<Message[]>;
  /** Deletes by id (no resource scope); unknown ids are ignored. Bumps the touched threads' `updatedAt`. */
  deleteMessages(ids: string[]): Promise<void>;

  /** `null` when absent. */
  getResourceById(args: { resourceId: string }): Promise<Resource | null>;
  /**
   * Creates the resource when missing; replaces `workingMemory` only when given; shallow-merges
   * metadata atomically; bumps `updatedAt`. Returns the stored resource.
   */
  updateResource(args: UpdateResourceArgs): Promise<Resource>;

  /**
   * Optional: removes every record of the resource — threads, messages, vectors, working memory of
   * both scopes, observation logs, the resource row — and returns how many of each; running it
   * again after a failure completes it. `Store` implements it; `Memory.deleteResource` needs it.
   */
  deleteResource?(args: { resourceId: string }): Promise<ResourceDeletion>;
  /**
   * Optional: ids of stored resources (records made by `updateResource` or working memory),
   * ascending in UTF-8 byte order, after `after`, at most `limit` (default 1,000) — a page of a
   * walk over every resource, whether it has threads or not.
   */
  listResourceIds?(args?: { after?: string; limit?: number }): Promise<string[]>;
  /** Optional: writes the resource exactly as given, dates included, replacing a stored one. */
  restoreResource?(resource: Resource): Promise<Resource>;

  /**
   * Atomic read-modify-write of working memory. `scope: 'resource'` creates a missing resource;
   * `scope: 'thread'` requires the thread (`NOT_FOUND`) and stores at `metadata.workingMemory`.
   * Returns the stored value. Present when the store declares `capabilities.atomicWorkingMemory`.
   */
  updateWorkingMemoryAtomically?(args: AtomicWorkingMemoryUpdate): Promise<string | null>;
}
