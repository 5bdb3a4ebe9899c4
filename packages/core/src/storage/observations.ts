import { MemoryError } from '../errors.ts';
import type { DomainHooks, DomainRunner, ThreadWrite } from './domains.ts';
import { threadNotFound } from './ownership.ts';
import { assertId, assertStoredDate, describe, isPlainObject } from './validate.ts';

/**
 * The observational-memory domain a store may declare (`MemoryStorage.observations`). Core's
 * engine (`observations/engine.ts`) owns what an observation log says; a store keeps, per log
 * key, a short series of generations — each a versioned opaque body — and swaps the newest one
 * atomically.
 *
 * Rules every implementation keeps:
 * - A log key is `thread:<threadId>` or `resource:<resourceId>`. Rows of a thread-scope log carry
 *   `threadId`; deleting the thread removes them in the same write (core calls `deleteByThread`).
 *   A thread-scope log lives only with its thread: after a swap that wrote, core checks in a
 *   write holding the thread that it still exists, and if it does not (never saved, or deleted
 *   while the swap ran) removes the log (`deleteByThread`) and refuses the swap `NOT_FOUND`.
 * - A resource-scope log is written for a turn of one of its threads (`SwapOptions.thread`): after
 *   a swap that wrote its first row, core checks in a write holding that thread that it is still
 *   the resource's, and if not (deleted, or the resource erased, while the swap ran) removes the
 *   resource's log (`deleteByResource`) and refuses the swap `NOT_FOUND`: an erased resource gets
 *   no log back from an observation that was running when it was erased.
 * - `swap` is one atomic compare-and-set on the newest generation: it succeeds only when the
 *   newest row of the key is exactly `expected` (no row at all when `expected` is `null`). A swap
 *   that starts a new generation leaves the older rows readable and unchanged except their
 *   `version`, which it raises so that a concurrent swap expecting the old row fails.
 * - Rows are read back exactly as written (body byte for byte, `updatedAt` to the millisecond).
 */

/** One generation of one observation log. */
export interface ObservationRow {
  /** `thread:<threadId>` or `resource:<resourceId>`. */
  key: string;
  /** The resource the log belongs to. */
  resourceId: string;
  /** The thread of a thread-scope log; `null` for a resource-scope log. */
  threadId: string | null;
  /** 1 for the first generation; each reflection starts the next. */
  generation: number;
  /** Raised by every swap of the key; compared by the next one. */
  version: number;
  /** Core's serialised state of the generation (opaque to the store). */
  body: string;
  /** When the row was last written (core's clock). */
  updatedAt: Date;
}

/** What a swap expects the newest generation to be. */
export interface ObservationVersion {
  generation: number;
  version: number;
}

/** What a swap is written for. */
export interface SwapOptions {
  /**
   * The thread whose turn the row was written for. For the first row of a resource-scope log,
   * core checks after the swap that the thread still exists in the resource; when it does not,
   * the log is removed and the swap is `NOT_FOUND`. Left out (an import, say), nothing is checked.
   * A thread-scope row is always checked against its own thread.
   */
  thread?: string;
}

/** The observation primitives of a store, as applications and the engine see them. */
export interface ObservationStore {
  /** The newest generation of the log, or `null` when none was written. */
  head(key: string): Promise<ObservationRow | null>;
  /** Every generation of the log, oldest first. */
  generations(key: string): Promise<ObservationRow[]>;
  /**
   * Writes `next` when the newest generation is `expected` (`null`: no row yet). `next.generation`
   * is `expected.generation` (the row is replaced) or one more (a new generation is added);
   * `next.version` is `expected.version + 1` (1 for the first row). `false` when another swap won.
   * A thread log's swap into a thread that does not exist (or is deleted meanwhile) is
   * `NOT_FOUND`, and the thread's log is removed; so is a resource log's first row written for a
   * thread (`options.thread`) that is no longer the resource's, and the resource's log is removed.
   */
  swap(expected: ObservationVersion | null, next: ObservationRow, options?: SwapOptions): Promise<boolean>;
}

/**
 * The observation domain of a driver: `ObservationStore`'s primitives without the validation,
 * plus the cascade hooks. `deleteByMessages` may do nothing: a log summarises messages and is
 * not rewritten when one is deleted.
 */
export interface ObservationDriver<Tx = unknown> extends DomainHooks<Tx> {
  head(key: string): Promise<ObservationRow | null>;
  generations(key: string): Promise<ObservationRow[]>;
  swap(expected: ObservationVersion | null, next: ObservationRow): Promise<boolean>;
  /**
   * Inside a write: removes the resource-scope log (thread-scope logs go with their threads),
   * including a generation a swap in flight adds meanwhile: a later swap of a resource log is not
   * checked, it only finds its row gone. Where a `DELETE` does not see a row inserted while it
   * waits for a lock (PostgreSQL, Oracle), delete again until nothing is found.
   */
  deleteByResource(tx: Tx, resourceId: string): Promise<void>;
}

/** Largest serialised body a row may hold (characters). */
export const MAX_OBSERVATION_BODY = 4_000_000;

const KEY = /^(thread|resource):(.+)$/s;

/** The log key of a thread-scope or resource-scope log. */
export function observationKey(scope: 'thread' | 'resource', id: string): string {
  return `${scope}:${id}`;
}

/** The store's `observations`: validates every argument once, then calls the driver. */
export class ValidatedObservations implements ObservationStore {
  constructor(
    private readonly adapter: string,
    private readonly driver: ObservationDriver<unknown>,
    private readonly run: DomainRunner,
    private readonly inThread: ThreadWrite,
  ) {}

  async head(key: string): Promise<ObservationRow | null> {
    assertKey(key);
    const row = await this.run('observations.head', () => this.driver.head(key));
    return row ? copyRow(row) : null;
  }

  async generations(key: string): Promise<ObservationRow[]> {
    assertKey(key);
    const rows = await this.run('observations.generations', () => this.driver.generations(key));
    return rows.map(copyRow).sort((a, b) => a.generation - b.generation);
  }

  async swap(
    expected: ObservationVersion | null,
    next: ObservationRow,
    options: SwapOptions = {},
  ): Promise<boolean> {
    assertRow(next);
    if (!isPlainObject(options)) throw invalid(`options must be an object, got ${describe(options)}`);
    if (options.thread !== undefined) assertId(options.thread, 'options.thread');
    if (expected === null) {
      if (next.generation !== 1 || next.version !== 1)
        throw invalid(`${this.adapter}: the first row of a log has generation 1 and version 1`);
    } else {
      if (!isPlainObject(expected) || !isCount(expected.generation) || !isCount(expected.version))
        throw invalid(`expected must be { generation, version } or null, got ${describe(expected)}`);
      if (next.generation !== expected.generation && next.generation !== expected.generation + 1)
        throw invalid(`next.generation must be ${expected.generation} or ${expected.generation + 1}`);
      if (next.version !== expected.version + 1)
        throw invalid(`next.version must be ${expected.version + 1}`);
    }
    const swapped = await this.run('observations.swap', () =>
      this.driver.swap(
        expected && { generation: expected.generation, version: expected.version },
        copyRow(next),
      ),
    );
    if (!swapped) return false;
    const { threadId, resourceId } = next;
    if (threadId !== null) {
      await this.keepWith(
        threadId,
        (owner) => owner !== undefined,
        (tx) => this.driver.deleteByThread(tx, threadId),
        () => threadNotFound(this.adapter, threadId),
      );
    } else if (expected === null && options.thread !== undefined) {
      const thread = options.thread;
      await this.keepWith(
        thread,
        (owner) => owner === resourceId,
        (tx) => this.driver.deleteByResource(tx, resourceId),
        () =>
          new MemoryError(
            'NOT_FOUND',
            `${this.adapter}: thread ${JSON.stringify(thread)} of resource ${JSON.stringify(resourceId)} is gone (deleted, or its resource erased, while the swap ran); the resource's observation log it started was removed`,
            { adapter: this.adapter },
          ),
      );
    }
    return true;
  }

  /**
   * After a swap wrote: in a write that holds `threadId` (after any delete of it that started
   * first), checks that its owner is still `owns`. If not, the log the swap wrote is removed there
   * (`remove`) and the swap is refused with `refusal`. A thread log never outlives its thread (a
   * background observation that ends after the conversation was deleted leaves nothing behind);
   * a resource log's first row needs the thread it was written for (`deleteResource` removes
   * every thread before the log, so a resource erased while the swap ran gets no log back; a
   * later row expects one the erasure removed, and loses).
   */
  private async keepWith(
    threadId: string,
    owns: (owner: string | undefined) => boolean,
    remove: (tx: unknown) => Promise<void>,
    refusal: () => MemoryError,
  ): Promise<void> {
    let gone = false;
    await this.run('observations.swap', () =>
      this.inThread(threadId, async (tx, owner) => {
        gone = !owns(owner);
        if (gone) await remove(tx);
      }),
    );
    if (gone) throw refusal();
  }
}

function copyRow(row: ObservationRow): ObservationRow {
  return {
    key: row.key,
    resourceId: row.resourceId,
    threadId: row.threadId ?? null,
    generation: Number(row.generation),
    version: Number(row.version),
    body: row.body,
    updatedAt: new Date(row.updatedAt.getTime()),
  };
}

function assertKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || !KEY.test(key))
    throw invalid(`an observation key is "thread:<id>" or "resource:<id>", got ${describe(key)}`);
  assertId(key.slice(key.indexOf(':') + 1), 'the id of an observation key');
}

function assertRow(row: unknown): asserts row is ObservationRow {
  if (!isPlainObject(row)) throw invalid(`an observation row must be an object, got ${describe(row)}`);
  const r = row as unknown as ObservationRow;
  assertKey(r.key);
  assertId(r.resourceId, 'resourceId');
  const scope = r.key.slice(0, r.key.indexOf(':'));
  const id = r.key.slice(r.key.indexOf(':') + 1);
  if (scope === 'thread') {
    assertId(r.threadId, 'threadId');
    if (r.threadId !== id)
      throw invalid(`threadId must be ${JSON.stringify(id)} for key ${JSON.stringify(r.key)}`);
  } else if (r.threadId !== null || r.resourceId !== id) {
    throw invalid(`a resource log has threadId null and resourceId ${JSON.stringify(id)}`);
  }
  if (!isCount(r.generation))
    throw invalid(`generation must be a positive integer, got ${describe(r.generation)}`);
  if (!isCount(r.version)) throw invalid(`version must be a positive integer, got ${describe(r.version)}`);
  if (typeof r.body !== 'string') throw invalid(`body must be a string, got ${describe(r.body)}`);
  if (/\p{Surrogate}/u.test(r.body))
    throw invalid('body must be well-formed Unicode (it holds an unpaired surrogate)');
  if (r.body.length > MAX_OBSERVATION_BODY)
    throw invalid(`body is ${r.body.length} characters; at most ${MAX_OBSERVATION_BODY}`);
  assertStoredDate(r.updatedAt, 'updatedAt');
}

function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 1;
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

/**
 * A swap applied to the rows of one key held in memory (oldest first): the rows after it, or
 * `null` when the newest row is not `expected`. For drivers that keep a log's rows as one value.
 */
export function swapRows(
  rows: readonly ObservationRow[],
  expected: ObservationVersion | null,
  next: ObservationRow,
): ObservationRow[] | null {
  const head = rows.at(-1);
  if (expected === null) return head ? null : [next];
  if (!head || head.generation !== expected.generation || head.version !== expected.version) return null;
  if (next.generation === head.generation) return [...rows.slice(0, -1), next];
  return [...rows.slice(0, -1), { ...head, version: next.version }, next];
}
