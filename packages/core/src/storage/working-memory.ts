import { threadNotFound } from './ownership.ts';
import { RETRY, retry } from './retry.ts';

/**
 * How a driver makes working-memory updates atomic. The driver supplies the one primitive its
 * database is good at — a lock, a compare-and-set, a lease — and core's `WorkingMemoryRunner`
 * does the rest, once for every store: `NOT_FOUND` for a missing thread, the fresh version every
 * write stores, the retries (core's `RETRY_POLICY`) and `CONFLICT` past them.
 */

/** The working memory one update addresses: a resource's, or a thread's `metadata.workingMemory`. */
export type WorkingMemoryCell =
  | { scope: 'resource'; resourceId: string }
  | { scope: 'thread'; threadId: string };

/** Computes the value to store from the stored one (`null` when unset); core's, validating. */
export type WorkingMemoryApply = (current: string | null) => string | null;

/** One stored value and the version it was read at. */
export interface VersionedValue<V> {
  value: string | null;
  version: V;
}

/** Read-modify-write under a lock the database holds: a write transaction, a row lock. */
export interface LockedWorkingMemory {
  kind: 'locked';
  /**
   * Holds off every other writer of `cell`, reads its value (`null` when unset, or when the
   * resource does not exist yet: the write creates it), stores `apply(value)` with `version`
   * (raising a thread's `updatedAt` by core's rule) and releases. Calls `apply` once. Returns
   * `false`, having written nothing, when `cell` is a thread that does not exist.
   */
  update(cell: WorkingMemoryCell, apply: WorkingMemoryApply, version: string): Promise<boolean>;
}

/**
 * Optimistic compare-and-set on a version. Every write of the cell must leave a new version
 * (`threads.update`, `threads.upsert` and `resources.update` get one from core), so a writer that
 * read an older one loses.
 */
export interface CompareAndSetWorkingMemory<V = unknown> {
  kind: 'compareAndSet';
  /** The cell's value and version; `null` when the thread, or the resource, does not exist. */
  read(cell: WorkingMemoryCell): Promise<VersionedValue<V> | null>;
  /**
   * Stores `value` with `version` if the cell is still at `expected` (`null`: the resource did
   * not exist; create it, losing to a concurrent creator). `false` when another writer changed
   * the cell since `read`, or the thread is gone.
   */
  write(
    cell: WorkingMemoryCell,
    expected: VersionedValue<V> | null,
    value: string | null,
    version: string,
  ): Promise<boolean>;
  /**
   * Where an update goes after losing a race, instead of retrying the compare-and-set: an update
   * that cannot lose (a row lock, a lease). A cell that lost a race in the last second goes
   * straight there.
   */
  afterLostRace?: LockedWorkingMemory | LeasedWorkingMemory<V>;
  /**
   * Compare-and-sets to try before `afterLostRace`. Default 1 (without it: core's policy). 0 sends
   * every update straight to `afterLostRace`: for a driver whose compare-and-set takes the same
   * lock anyway, where reading before the lock only loses races.
   */
  attempts?: number;
}

/**
 * An update under a lease the driver keeps in the database (a key or document with a token and
 * a time to live): core takes the lease, computes, writes and lets it go, waiting while another
 * writer holds it, and tries again when a write lost because the lease ran out meanwhile.
 */
export interface LeasedWorkingMemory<V = unknown> {
  kind: 'leased';
  /** How long a lease lives when its holder never writes, in ms. */
  leaseMs: number;
  /**
   * Takes the lease of `cell` for `token` unless another writer holds one that has not run out:
   * `'busy'`; `'missing'` for a thread that does not exist; else the cell's value and version
   * (`null` for a resource that does not exist).
   */
  acquire(cell: WorkingMemoryCell, token: string): Promise<'busy' | 'missing' | VersionedValue<V> | null>;
  /**
   * Stores `value` with `version` if the cell is still at `expected` and the lease is still
   * `token`'s, and releases it: `'ok'`, `'lost'` (the lease ran out and another writer wrote), or
   * `'missing'` (the thread is gone).
   */
  write(
    cell: WorkingMemoryCell,
    expected: VersionedValue<V> | null,
    value: string | null,
    version: string,
    token: string,
  ): Promise<'ok' | 'lost' | 'missing'>;
  /** Releases `token`'s lease without writing (the update threw). */
  release(cell: WorkingMemoryCell, token: string): Promise<void>;
}

/** What a driver supplies for atomic working-memory updates. */
export type WorkingMemoryStrategy = LockedWorkingMemory | CompareAndSetWorkingMemory<unknown>;

/** How long a cell that lost a compare-and-set goes straight to `afterLostRace`. */
const CONTENDED_MS = 1_000;

/** Runs a driver's strategy; keeps which cells lost a race lately. */
export class WorkingMemoryRunner {
  /** When a compare-and-set of a cell last lost a race, by cell key. */
  private readonly contended = new Map<string, number>();

  constructor(
    private readonly adapter: string,
    private readonly strategy: WorkingMemoryStrategy,
  ) {}

  /** The update of `cell` by `apply` (already validating); resolves to the stored value. */
  async run(cell: WorkingMemoryCell, apply: WorkingMemoryApply): Promise<string | null> {
    const strategy = this.strategy;
    if (strategy.kind === 'locked') return this.locked(strategy, cell, apply);
    const { afterLostRace } = strategy;
    if (!afterLostRace) {
      return retry(() => this.attempt(strategy, cell, apply), {
        adapter: this.adapter,
        what: 'working-memory update',
      });
    }
    const key = cell.scope === 'resource' ? `r:${cell.resourceId}` : `t:${cell.threadId}`;
    const lostAt = this.contended.get(key);
    const attempts = strategy.attempts ?? 1;
    if (attempts > 0 && (lostAt === undefined || Date.now() - lostAt > CONTENDED_MS)) {
      for (let n = 0; n < attempts; n++) {
        const written = await this.attempt(strategy, cell, apply);
        if (written === RETRY) continue;
        if (lostAt !== undefined) this.contended.delete(key);
        return written;
      }
      if (this.contended.size >= 1_000) this.contended.clear();
      this.contended.set(key, Date.now());
    }
    return afterLostRace.kind === 'locked'
      ? this.locked(afterLostRace, cell, apply)
      : this.leased(afterLostRace, cell, apply);
  }

  private async locked(
    strategy: LockedWorkingMemory,
    cell: WorkingMemoryCell,
    apply: WorkingMemoryApply,
  ): Promise<string | null> {
    let next: string | null | undefined;
    const found = await strategy.update(
      cell,
      (current) => {
        next = apply(current);
        return next;
      },
      newVersion(),
    );
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

  /** Takes the lease, applies and writes; waits while it is busy, for twice a lease at most. */
  private leased<V>(
    strategy: LeasedWorkingMemory<V>,
    cell: WorkingMemoryCell,
    apply: WorkingMemoryApply,
  ): Promise<string | null> {
    return retry(
      async () => {
        const token = newVersion();
        const stored = await strategy.acquire(cell, token);
        if (stored === 'missing') throw this.missing(cell);
        if (stored === 'busy') return RETRY;
        let outcome: 'ok' | 'lost' | 'missing';
        let next: string | null;
        try {
          next = apply(stored?.value ?? null);
          outcome = await strategy.write(cell, stored, next, newVersion(), token);
        } catch (error) {
          await strategy.release(cell, token).catch(() => undefined);
          throw error;
        }
        if (outcome === 'missing') throw this.missing(cell);
        return outcome === 'ok' ? next : RETRY;
      },
      {
        adapter: this.adapter,
        what: 'working-memory update under a lease',
        deadlineMs: 2 * strategy.leaseMs,
      },
    );
  }

  private missing(cell: WorkingMemoryCell): Error {
    return threadNotFound(this.adapter, cell.scope === 'thread' ? cell.threadId : cell.resourceId);
  }
}

/** A fresh working-memory version: random, so a recreated record never reuses an old one. */
export function newVersion(): string {
  return crypto.randomUUID();
}
