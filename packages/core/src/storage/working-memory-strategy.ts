import { RETRY, retryOptimistic } from './helpers.ts';
import { threadNotFound } from './ownership.ts';

/**
 * How an adapter makes `updateWorkingMemoryAtomically` atomic. The adapter supplies the one
 * primitive its database is good at; core (`runWorkingMemoryStrategy`) does the rest: the split
 * into a resource or a thread cell, validation of the new value, `NOT_FOUND` for a missing
 * thread, retries with back-off and `CONFLICT` past their bound, and the fresh version every
 * compare-and-set write stores.
 */

/** The working memory one update addresses: a resource's, or a thread's `metadata.workingMemory`. */
export type WorkingMemoryCell =
  | { scope: 'resource'; resourceId: string }
  | { scope: 'thread'; threadId: string };

/**
 * Computes the value to store from the stored one (`null` when unset). Core's function: it
 * validates the result, and an error thrown by the caller's update propagates unchanged.
 */
export type WorkingMemoryApply = (current: string | null) => string | null;

/** Read-modify-write under a lock: a write transaction, a row lock, a lease. */
export interface LockedWorkingMemory {
  kind: 'locked';
  /**
   * Holds off every other writer of `cell`, reads its value (`null` when unset, or when the
   * resource does not exist yet, which the write then creates), writes `apply(value)` and
   * releases. May call `apply` again when a write under the lock still lost (an expired lease):
   * the value of its last call is the one stored. Returns `false`, having written nothing, when
   * `cell` is a thread that does not exist (core reports `NOT_FOUND`).
   */
  update(cell: WorkingMemoryCell, apply: WorkingMemoryApply): Promise<boolean>;
}

/** One stored value and the version it was read at. */
export interface VersionedValue<V> {
  value: string | null;
  version: V;
}

/**
 * Optimistic compare-and-set on a version. Every write of the cell must leave a new version,
 * so a writer that read an older one loses: `write` gets a fresh one from core, and so does
 * `doUpdateThread` (`NormalizedUpdateThread.workingMemoryVersion`, set whenever the update
 * writes `metadata.workingMemory`). A whole replacement (`saveThread`) stores a fresh version
 * of its own.
 */
export interface CompareAndSetWorkingMemory<V = unknown> {
  kind: 'compareAndSet';
  /**
   * The cell's value and version; `null` when the thread (thread cell) or the resource
   * (resource cell: then read as `null`, and the write creates it) does not exist.
   */
  read(cell: WorkingMemoryCell): Promise<VersionedValue<V> | null>;
  /**
   * Stores `value` with `version` if the cell is still at `expected` (`null`: the resource did
   * not exist; create it, losing to a concurrent creator). Returns `false` when another writer
   * changed the cell since `read`, or the thread is gone (core then reads again and reports
   * `NOT_FOUND`).
   */
  write(
    cell: WorkingMemoryCell,
    expected: VersionedValue<V> | null,
    value: string | null,
    version: string,
  ): Promise<boolean>;
  /** Bounds of the retries, without `afterLostRace`. Default 50 attempts, back-off up to 20 ms. */
  retry?: { attempts?: number; maxDelayMs?: number };
  /**
   * Where a write that lost goes instead of retrying: an update under a lock, which cannot
   * lose (pg's row lock, Upstash's lease). With it, core tries one compare-and-set, and a cell
   * that lost a race in the last second goes straight to the lock.
   */
  afterLostRace?: LockedWorkingMemory;
}

/** What an adapter supplies for atomic working-memory updates (see `StoreBase.workingMemoryStrategy`). */
export type WorkingMemoryStrategy = LockedWorkingMemory | CompareAndSetWorkingMemory<unknown>;

/** How long a cell that lost a compare-and-set goes straight to `afterLostRace`. */
const CONTENDED_MS = 1_000;

/** Runs a strategy for one store; keeps which cells lost a race lately. */
export class WorkingMemoryRunner {
  /** When a compare-and-set of a cell last lost a race, by cell key. */
  private readonly contended = new Map<string, number>();

  constructor(private readonly adapter: () => string) {}

  /** The update of `cell` by `apply` (already validating); resolves to the stored value. */
  async run(
    strategy: WorkingMemoryStrategy,
    cell: WorkingMemoryCell,
    apply: WorkingMemoryApply,
  ): Promise<string | null> {
    if (strategy.kind === 'locked') return this.locked(strategy, cell, apply);
    const { afterLostRace } = strategy;
    if (!afterLostRace) {
      return retryOptimistic(() => this.attempt(strategy, cell, apply), {
        adapter: this.adapter(),
        ...strategy.retry,
      });
    }
    const key = cell.scope === 'resource' ? `r:${cell.resourceId}` : `t:${cell.threadId}`;
    const lostAt = this.contended.get(key);
    if (lostAt === undefined || Date.now() - lostAt > CONTENDED_MS) {
      const written = await this.attempt(strategy, cell, apply);
      if (written !== RETRY) {
        if (lostAt !== undefined) this.contended.delete(key);
        return written;
      }
      if (this.contended.size >= 1_000) this.contended.clear();
      this.contended.set(key, Date.now());
    }
    return this.locked(afterLostRace, cell, apply);
  }

  private async locked(
    strategy: LockedWorkingMemory,
    cell: WorkingMemoryCell,
    apply: WorkingMemoryApply,
  ): Promise<string | null> {
    let next: string | null | undefined;
    const found = await strategy.update(cell, (current) => {
      next = apply(current);
      return next;
    });
    if (!found) throw this.missing(cell);
    if (next === undefined) throw new Error('the locked working-memory update never computed a value');
    return next;
  }

  private async attempt<V>(
    strategy: CompareAndSetWorkingMemory<V>,
    cell: WorkingMemoryCell,
    apply: WorkingMemoryApply,
  ): Promise<string | null | typeof RETRY> {
    const stored = await strategy.read(cell);
    if (!stored && cell.scope === 'thread') throw this.missing(cell);
    const next = apply(stored?.value ?? null);
    return (await strategy.write(cell, stored, next, newVersion())) ? next : RETRY;
  }

  private missing(cell: WorkingMemoryCell): Error {
    return threadNotFound(this.adapter(), cell.scope === 'thread' ? cell.threadId : cell.resourceId);
  }
}

/** A fresh working-memory version: random, so a recreated record never reuses an old one. */
export function newVersion(): string {
  return crypto.randomUUID();
}
