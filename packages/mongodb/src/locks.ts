import { randomUUID } from 'node:crypto';
import { backOff, RETRY, retry } from '@engram/core/driver';
import type { ClientSession, Collection, MongoBulkWriteError } from 'mongodb';
import { classify, isDuplicateKey } from './errors.ts';

/** A held write lock (`_id`: `threads:<id>`, `resources:<id>`, …), its holder's token and the end of its lease. */
export interface LockDocument {
  _id: string;
  owner: string;
  expiresAt: Date;
}

/** How long a holder may keep a lock before others break it, by default. */
export const DEFAULT_LEASE_MS = 10_000;

/** A unit of work of the driver (`Driver.write`): a transaction, or a set of write locks. */
export interface MongoTx {
  /** The session of the transaction, when the write runs in one. */
  readonly session?: ClientSession;
  /** Takes the write locks of `keys` not held yet, in the order given; held until the write ends. */
  lock(keys: string[]): Promise<void>;
  /** Awaited right before each command that writes: throws `LockLost` when a lock may be lost by then. */
  fence(): Promise<void>;
  /** Under locks, the message ids `messages.places` found (in threads locked): `put` inserts the others. */
  stored?: Set<string>;
  /**
   * Under locks, the version of each message `messages.byIds` read in this write (`null`: none
   * stored): `put` replaces such a message only at that version.
   */
  read?: Map<string, string | null>;
  /** Under locks, which run of the write this is: 0 the first, more after `LockLost`. */
  readonly attempt?: number;
}

/** The driver's unit of work (`MongoDBDriver.write`): a transaction, or commands under write locks. */
export type Write = <T>(fn: (tx: MongoTx) => Promise<T>) => Promise<T>;

/** A held lock was broken, is too close to its end, or no longer covers what was read: start again. */
export class LockLost extends Error {}

/**
 * Per-document write locks, for servers without transactions (README: "Consistency", "How writes
 * under a lock are fenced"). A lock is a document inserted into `<prefix>locks` (the insert that
 * succeeds holds it, the holder deletes it), taken in key order so writers never deadlock. A lock
 * whose lease ran out is broken under a lock of its own, `break:<owner of the dead lock>` (on
 * FerretDB a filtered delete is a read and a delete by `_id`, which could delete a fresh lock). A
 * holder that stood still past its lease must not write: each command that writes under a lock
 * awaits a `fence` first, which renews the leases if each lock is still the holder's with a
 * quarter of its lease left, else throws `LockLost` and the write runs again from the start. A
 * fence less than a quarter lease after the leases were stored needs no round trip (`fresh`).
 *
 * A write that fails because the server is unreachable fails at once: its release is not waited
 * for (that would wait out a second server selection). A lock it could not release is an orphan:
 * the next `acquire` deletes it first, while a quarter of its lease is left (so no other writer can
 * have broken it), and the writers after an outage need not wait for its lease to run out.
 */
export class WriteLocks {
  /**
   * The lease each owner last stored (the earliest of its locks'), by owner: its end (wall clock,
   * as stored) and when it was stored (this process's monotonic clock).
   */
  private readonly leases = new Map<string, { end: number; since: number }>();
  /** Locks left behind by an outage (see above): owner and the time until which deleting them is safe, by key. */
  private readonly orphans = new Map<string, { owner: string; until: number }>();

  /** `locks` is the lock collection, `undefined` when writes need no locks. */
  constructor(
    private readonly locks: Collection<LockDocument> | undefined,
    readonly leaseMs = DEFAULT_LEASE_MS,
  ) {}

  /** True when writes are serialised through lock documents. */
  get enabled(): boolean {
    return this.locks !== undefined;
  }

  /** Runs `write` with the locks it takes (see `MongoTx`), then releases them; again after `LockLost`. */
  run<T>(write: (tx: MongoTx) => Promise<T>): Promise<T> {
    return retry(
      async (attempt) => {
        const owner = randomUUID();
        const held: string[] = [];
        const tx: MongoTx = {
          attempt,
          lock: (keys) => this.acquire(keys, owner, held),
          fence: async () => {
            if (this.fresh(owner)) return;
            if (!(await this.holds(held, owner))) throw new LockLost();
          },
        };
        let unreachable = false;
        try {
          return await write(tx);
        } catch (error) {
          if (error instanceof LockLost) return RETRY;
          unreachable = isUnreachable(error);
          throw error;
        } finally {
          // With the server gone the call fails at once; what is not released becomes an orphan.
          const released = this.release(held, owner).catch(() => undefined);
          if (!unreachable) await released;
        }
      },
      { adapter: 'mongodb', what: 'a write under the lease of its write locks' },
    );
  }

  /** `run` holding the locks of `keys` from the start; `write` awaits its `fence` before each write. */
  hold<T>(keys: string[], write: (fence: () => Promise<void>) => Promise<T>): Promise<T> {
    return this.run(async (tx) => {
      await tx.lock(keys);
      return write(tx.fence);
    });
  }

  /**
   * Takes `keys` (those not in `held`, in order) for `owner`, waiting while other writers take and
   * release them in turn, and two leases at most for any one holder (a dead one's lease runs out).
   */
  async acquire(keys: string[], owner: string, held: string[] = []): Promise<void> {
    let todo = keys.filter((key) => !held.includes(key));
    if (todo.length > 0) await this.releaseOrphans();
    let holder: string | undefined;
    // When to read who holds the lock: at the first miss, then when that lease could run out, and
    // a quarter lease after the last look at the latest (so a change of holder is seen that late).
    let lookAt = 0;
    for (let waits = 0; this.locks && todo.length > 0; waits++) {
      // Another holder took over: wait as after any lost attempt, then a new deadline for it.
      if (waits > 0) await backOff(waits);
      await retry(
        async () => {
          const next = await this.take(todo, owner, Date.now() >= lookAt);
          held.push(...todo.slice(0, next.taken));
          todo = todo.slice(next.taken);
          if (todo.length === 0) return;
          // Locks taken: the next key's holder is not known yet.
          if (next.taken > 0) lookAt = 0;
          if (next.holder === undefined) return RETRY;
          lookAt = Math.min(next.holder?.expiresAt.getTime() ?? 0, Date.now() + this.leaseMs / 4);
          if (next.holder?.owner === holder) return RETRY;
          holder = next.holder?.owner;
        },
        { adapter: 'mongodb', what: 'waiting for a write lock', deadlineMs: 2 * this.leaseMs },
      );
    }
  }

  /**
   * One attempt to take `keys` in order (one ordered insert): how many were taken, up to the first
   * held by another writer, and with `look` that writer's lock (`null`: released meanwhile), broken
   * when its holder is presumed dead. Without `look` a miss costs the insert alone.
   */
  private async take(
    keys: string[],
    owner: string,
    look = true,
  ): Promise<{ taken: number; holder?: LockDocument | null }> {
    const locks = this.locks as Collection<LockDocument>;
    const since = performance.now();
    const expiresAt = new Date(Date.now() + this.leaseMs);
    try {
      await locks.insertMany(keys.map((_id) => ({ _id, owner, expiresAt })));
      this.leased(owner, expiresAt.getTime(), since);
      return { taken: keys.length };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const [first] = [(error as MongoBulkWriteError).writeErrors].flat();
      const taken = first?.index ?? 0;
      if (taken > 0) this.leased(owner, expiresAt.getTime(), since);
      if (!look) return { taken };
      const current = await locks.findOne({ _id: keys[taken] });
      if (current && current.expiresAt.getTime() < Date.now()) await this.breakDead(current);
      return { taken, holder: current };
    }
  }

  /** True when every lock of `keys` is still `owner`'s with a quarter of its lease left; renews them then. */
  async holds(keys: string[], owner: string): Promise<boolean> {
    if (!this.locks || keys.length === 0) return true;
    const since = performance.now();
    const now = Date.now();
    const { matchedCount } = await this.locks.updateMany(
      { _id: { $in: keys }, owner, expiresAt: { $gte: new Date(now + this.leaseMs / 4) } },
      { $set: { expiresAt: new Date(now + this.leaseMs) } },
    );
    if (matchedCount !== keys.length) return false;
    this.leases.set(owner, { end: now + this.leaseMs, since });
    return true;
  }

  /** Releases `owner`'s locks of `keys`; those the server was unreachable for become orphans. */
  async release(keys: string[], owner: string): Promise<void> {
    const leaseEnd = this.leases.get(owner)?.end;
    this.leases.delete(owner);
    if (!this.locks || keys.length === 0) return;
    try {
      await this.locks.deleteMany({ _id: { $in: keys }, owner });
    } catch (error) {
      if (leaseEnd !== undefined && isUnreachable(error)) {
        for (const key of keys) this.orphans.set(key, { owner, until: leaseEnd - this.leaseMs / 4 });
      }
      throw error;
    }
  }

  /** Deletes the orphans (see the class) whose lease still has a quarter left; forgets the others. */
  private async releaseOrphans(): Promise<void> {
    if (this.orphans.size === 0) return;
    const locks = this.locks as Collection<LockDocument>;
    const live = [...this.orphans].filter(([, orphan]) => orphan.until > Date.now());
    this.orphans.clear();
    try {
      for (const [_id, { owner }] of live) await locks.deleteOne({ _id, owner });
    } catch (error) {
      // Still unreachable: kept for the next writer (the call fails anyway).
      if (isUnreachable(error)) for (const [key, orphan] of live) this.orphans.set(key, orphan);
      throw error;
    }
  }

  /** Notes a lease `owner` stored (computed at `since`); the earliest counts until the next renewal. */
  private leased(owner: string, end: number, since: number): void {
    const known = this.leases.get(owner);
    if (known === undefined || end < known.end) this.leases.set(owner, { end, since });
    // Owners that never release (a write that failed before it could) are forgotten once expired.
    if (this.leases.size > 1_000) {
      for (const [o, lease] of this.leases) if (lease.end < Date.now()) this.leases.delete(o);
    }
  }

  /**
   * True when every lease of `owner` was stored less than a quarter lease ago: at least three
   * quarters are left, more than a renewal would ask for, and no other writer breaks a lock before
   * its end, so the fence needs no round trip. Measured on this process's monotonic clock and on
   * the wall clock the leases are stamped with (which other writers read), so that a step of
   * either clock sends the fence to the server. A holder that stood still for a quarter lease or
   * more asks the server.
   */
  private fresh(owner: string): boolean {
    const lease = this.leases.get(owner);
    if (lease === undefined) return false;
    const left = this.leaseMs - this.leaseMs / 4;
    return performance.now() - lease.since < this.leaseMs / 4 && lease.end - Date.now() > left;
  }

  /** Deletes a dead holder's lock, holding `break:<its owner>` so that only one waiter does. */
  private async breakDead(dead: LockDocument): Promise<void> {
    const locks = this.locks as Collection<LockDocument>;
    const claim = `break:${dead.owner}`;
    const breaker = randomUUID();
    if ((await this.take([claim], breaker)).taken === 0) return;
    try {
      await locks.deleteOne({ _id: dead._id, owner: dead.owner });
    } finally {
      this.leases.delete(breaker);
      await locks.deleteOne({ _id: claim, owner: breaker });
    }
  }
}

/** True when `error` means the server could not be reached (or went away). */
export function isUnreachable(error: unknown): boolean {
  return classify(error, 'write') === 'CONNECTION';
}
