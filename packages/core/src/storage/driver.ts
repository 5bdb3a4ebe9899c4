import type { StoreCapabilities } from './capabilities.ts';
import type { DateRange, MessagePatch } from './contract.ts';
import type { DriverDomains } from './domains.ts';
import type { ErrorMapperOptions } from './errors.ts';
import type { MessageCountChange } from './helpers.ts';
import type { MessageRead, ThreadRead } from './listing.ts';
import type { Direction, JsonObject, Message, Resource, Thread } from './records.ts';
import type { WorkingMemoryStrategy } from './working-memory.ts';

/**
 * The driver contract: what an adapter supplies so that core (`createStore`) builds a
 * `MemoryStorage` from it. A driver opens and closes its connection, runs a unit of work, and
 * offers small primitives per record kind; core owns every rule of the contract that is not
 * about one database — the lifecycle, validation, error mapping, copies of returned records, the
 * order of ownership refusals, which threads a write bumps and by how much, message counts,
 * working-memory versions and retries, and the delete cascade across domains.
 *
 * Rules every driver keeps:
 * - Primitives are called only while the store is open (after `open()` resolved, before
 *   `close()`); a driver keeps no "closed" flag and no memoised open of its own.
 * - Arguments are validated and normalised by core. A driver never mutates them and never copies
 *   records back: core copies what it returns to the caller.
 * - Primitives taking a `tx` run inside `write` and must see and make changes in that unit of
 *   work only; every other primitive is atomic on its own.
 * - Anything a driver throws that is not a `MemoryError` is mapped by core with `errors`.
 */
export interface Driver<Tx = unknown> extends DriverDomains<Tx> {
  /** The adapter's name, used in error messages (`'libsql'`, `'pg'`, …). */
  readonly name: string;
  /** What the store promises beyond the baseline. May be a getter when learnt at `open()`. */
  readonly capabilities: StoreCapabilities;
  /** The driver's error classification (core maps, redacts and names the operation). */
  readonly errors: Omit<ErrorMapperOptions, 'adapter'>;
  /** Dates the backend can store, inclusive; others are `INVALID_ARGUMENT`. Default: any `Date`. */
  readonly dates?: { min: Date; max: Date };

  /** Connects and migrates. Called once per successful open; a failed one is retried later. */
  open(): Promise<void>;
  /** Releases what `open` acquired (never an injected client). Called at most once. */
  close(): Promise<void>;
  /**
   * Runs `fn` as one unit of work: a transaction, or the backend's equivalent (all of `fn`'s
   * writes happen, or none). A backend without transactions (see
   * `capabilities.transactionalBatches`) runs the writes in the order given.
   */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;

  readonly threads: ThreadDriver<Tx>;
  readonly messages: MessageDriver<Tx>;
  readonly resources: ResourceDriver<Tx>;
  /**
   * How working-memory updates are made atomic (see `working-memory.ts`): the only path of
   * `updateWorkingMemoryAtomically`. Required when `capabilities.atomicWorkingMemory`.
   */
  readonly workingMemory?: WorkingMemoryStrategy;
}

/** A thread change core hands to `threads.update`, validated. */
export interface ThreadChange {
  id: string;
  /** Replaces the title when given. */
  title?: string;
  /** Shallow-merged into the stored metadata when given. */
  metadata?: JsonObject;
  /**
   * A fresh working-memory version, given when `metadata` writes `workingMemory`: a driver with a
   * compare-and-set strategy stores it with the update, so a concurrent compare-and-set loses.
   */
  version?: string;
}

/** `listThreads` arguments with every default filled in. */
export interface ThreadQuery {
  resourceId?: string;
  metadata?: JsonObject;
  /** On `createdAt`, whichever `orderBy`. */
  dateRange?: DateRange;
  page: number;
  perPage: number | false;
  orderBy: 'createdAt' | 'updatedAt';
  direction: Direction;
}

/** An include window with its counts filled in. */
export interface WindowQuery {
  id: string;
  withPreviousMessages: number;
  withNextMessages: number;
}

/** `listMessages` arguments with every default filled in. */
export interface MessageQuery {
  threadId: string;
  resourceId?: string;
  page: number;
  perPage: number | false;
  direction: Direction;
  dateRange?: DateRange;
  include: WindowQuery[];
}

export interface ThreadDriver<Tx> {
  /** The thread, or `null`. */
  get(id: string): Promise<Thread | null>;
  /**
   * Inserts the thread unless its id exists, atomically (an insert-if-absent, not a read then a
   * write); `false` when the id was taken. `version`: its fresh working-memory version.
   */
  insert(thread: Thread, version: string): Promise<boolean>;
  /** Inserts or replaces the whole thread, `updatedAt` as given, with a fresh `version`. */
  upsert(thread: Thread, version: string): Promise<void>;
  /**
   * Atomically: replaces the title when given, shallow-merges the metadata when given, and raises
   * `updatedAt` by core's `bumpedUpdatedAt` rule with the time of the write (taken under the
   * write's lock; the database's clock where it has one). Returns the stored thread, or `null`
   * when it does not exist.
   */
  update(change: ThreadChange): Promise<Thread | null>;
  /**
   * Inside a write: raises `updatedAt` of each thread in `bumps` that exists to at least the time
   * of the write and the date given with it (the newest `createdAt` the write stored there).
   */
  touch(tx: Tx, bumps: ReadonlyMap<string, Date | undefined>): Promise<void>;
  /** Inside a write: removes the thread, its messages and what the driver keeps for them. */
  delete(tx: Tx, id: string): Promise<void>;
  /** The threads of one `listThreads` call: a page and its count, or candidates core filters. */
  readPage(query: ThreadQuery): Promise<ThreadRead>;
}

/** Where records stand, as read inside a write (see `MessageDriver.places`). */
export interface Places {
  /** The resource of each thread that exists, by thread id. */
  threads: ReadonlyMap<string, string>;
  /** The thread and resource of each message that exists, by message id. */
  messages: ReadonlyMap<string, { threadId: string; resourceId: string }>;
}

export interface MessageDriver<Tx> {
  /** The reads of one `listMessages` call (page, total, windows), from one snapshot where possible. */
  readPage(query: MessageQuery): Promise<MessageRead>;
  /** The messages found among `ids` (distinct), in any order; inside a write when `tx` is given. */
  byIds(ids: string[], tx?: Tx): Promise<Message[]>;
  /**
   * Inside a write: the owner of each existing thread among `threadIds` and the place of each
   * existing message among `messageIds`. A backend with locks takes them here (threads, then
   * messages, in id order), so nothing read can change before the write ends.
   *
   * `saving` is true when the write is a save, which inserts what `places` did not find: a driver
   * whose reads by id are costly may then report no message found without reading, if its `put`
   * refuses to overwrite an id it meets stored and the write starts again, reading them. Never so
   * for other writes (an update or delete acts only on what `places` found).
   */
  places(tx: Tx, threadIds: string[], messageIds: string[], saving?: boolean): Promise<Places>;
  /**
   * Inside a write: stores these messages, inserting or replacing by id. Core passes only
   * messages `places` found and new ones into threads it returned, so a driver holding those
   * locks never writes a row whose thread it does not hold.
   */
  put(tx: Tx, messages: Message[]): Promise<void>;
  /** Inside a write: removes these messages (ids `places` found). */
  remove(tx: Tx, ids: string[]): Promise<void>;
  /**
   * Optional, inside a write: applies net changes to kept per-(thread, resource) message counts,
   * for a driver that keeps them so `readPage` never counts a whole thread. Called only when a
   * count changes (`changes` is never empty).
   */
  count?(tx: Tx, changes: readonly MessageCountChange[]): Promise<void>;
  /**
   * Optional fast path: the whole save in one statement or script when nothing is refused. It
   * writes exactly what core's composed save would (rows, counts, thread bumps with `newest`, the
   * newest `createdAt` per thread), or nothing and returns `false`; core then runs the composed
   * save, which refuses the batch with the right error or saves it.
   */
  save?(messages: Message[], newest: ReadonlyMap<string, Date>): Promise<boolean>;
  /**
   * Optional fast path for `updateMessages`: applies the patches (one per id, folded by core) in
   * one step, bumping the threads of the changed messages; returns the messages as stored.
   */
  update?(patches: MessagePatch[]): Promise<Message[]>;
}

/** A resource change core hands to `resources.update`, validated. */
export interface ResourceChange {
  id: string;
  /** Replaces the working memory when present (`null` clears it). */
  workingMemory?: string | null;
  /** Shallow-merged into the stored metadata when given. */
  metadata?: JsonObject;
  /** A fresh working-memory version, given when `workingMemory` is. */
  version?: string;
  /** The time of the call: `createdAt` of a new resource, `updatedAt` of every write. */
  now: Date;
}

export interface ResourceDriver<Tx = unknown> {
  /** The resource, or `null`. */
  get(id: string): Promise<Resource | null>;
  /** Atomically creates or updates the resource (see `ResourceChange`); returns it as stored. */
  update(change: ResourceChange): Promise<Resource>;
  /**
   * Optional, inside a write: removes the resource row (its working memory and metadata) and
   * whatever the driver keeps for the resource alone (a working-memory version, a lock row);
   * never its threads or messages. An absent resource is ignored. Needed by `deleteResource`
   * (core refuses it with `UNSUPPORTED` without it).
   */
  delete?(tx: Tx, id: string): Promise<void>;
  /**
   * Optional: up to `limit` ids of stored resources, ascending in UTF-8 byte order (`compareIds`),
   * each greater than `after` (all when `null`). Lets a whole-store export find resources that
   * have no thread (`listResourceIds`).
   */
  list?(after: string | null, limit: number): Promise<string[]>;
}
