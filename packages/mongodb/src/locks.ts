import { randomUUID } from 'node:crypto';
import { MemoryError } from '@engram/core/adapter';
import type { Collection } from 'mongodb';
import { isDuplicateKey } from './errors.ts';

/** One held write lock: `_id` names the locked document (`threads:<id>`, `resources:<id>`). */
export interface LockDocument {
  _id: string;
  /** A random token of the holder; only the holder releases it. */
  owner: string;
  /** After this instant the holder is presumed dead and the lock may be broken. */
  expiresAt: Date;
}

/** How long a holder may keep a lock before others break it, by default. Every locked write is one or two commands. */
export const DEFAULT_LEASE_MS = 10_000;
/** How long a writer waits for a lock before giving up with `CONFLICT`, at least; always longer than a lease. */
const MIN_WAIT_MS = 15_000;

/**
 * Per-document write locks for servers whose single-document updates are not atomic.
 *
 * MongoDB applies every update to one document atomically, so `$set` merges and the
 * compare-and-set on `version` need nothing more, and the store runs without locks there.
 * FerretDB 1.x executes an update as "read the document, apply the operators in the proxy, write
 * the whole document back" with no check in between, so two concurrent `$set`s of different keys
 * can lose one, and a `{ _id, version }` filter is no compare-and-set. Its one atomic primitive
 * is the unique `_id` of an insert, so a lock is a document inserted into `<prefix>locks`: the
 * insert that succeeds holds the lock, the others wait and retry, and the holder deletes it.
 *
 * A lock whose lease ran out (its holder died) is broken by deleting it. On FerretDB a filtered
 * delete is itself a read followed by a delete by `_id`, so two waiters breaking the same lock
 * could delete a fresh lock taken in between; breaking therefore happens under a lock of its own,
 * `break:<owner of the dead lock>`, and only its holder deletes. A breaker that dies is broken the
 * same way. Leases are stamped with the writer's clock, so clocks that disagree by more than the
 * lease shorten or lengthen it.
 *
 * A lock is a lease, not a fence: a holder that stands still past its lease (a GC pause, a frozen
 * VM, SIGSTOP) still believes it holds the lock when it resumes, while another writer broke it and
 * wrote. Every write made under a lock is therefore fenced twice:
 *
 * - `hold` hands the write a `fence` to await right before each command that writes: it reads
 *   the held lock documents and throws unless each is still this holder's with at least a
 *   quarter of its lease left; `hold` then lets the lock go, takes it again and runs the write
 *   anew (at most `LEASE_ATTEMPTS` times, then `CONFLICT`). So a resumed writer never sends a
 *   write while another holds the lock, which FerretDB could interleave with that one's.
 * - The write is conditional on the `version` the writer read and stores a new one (`writes.ts`,
 *   `working-memory.ts`): a writer that stands still between its fence and its write, past the
 *   rest of its lease, matches nothing once another has written, and reads again.
 */
export class WriteLocks {
  /** Waits this long for a lock before `CONFLICT`. */
  private readonly waitMs: number;

  /**
   * @param locks the lock collection, or `undefined` when the server's own updates are atomic.
   * @param leaseMs how long a holder may keep a lock before others break it.
   */
  constructor(
    private readonly locks: Collection<LockDocument> | undefined,
    private readonly leaseMs = DEFAULT_LEASE_MS,
  ) {
    this.waitMs = Math.max(MIN_WAIT_MS, 1.5 * leaseMs);
  }

  /** True when writes are serialised through lock documents. */
  get enabled(): boolean {
    return this.locks !== undefined;
  }

  /**
   * Runs `write` while holding the locks of `keys` (taken in sorted order, so never deadlocking).
   * `write` awaits its `fence` right before each command that writes (see above); it may run
   * more than once.
   */
  async hold<T>(keys: string[], write: (fence: Fence) => Promise<T>): Promise<T> {
    const locks = this.locks;
    if (!locks || keys.length === 0) return write(NO_FENCE);
    for (let attempt = 1; ; attempt++) {
      const held: Held[] = [];
      try {
        for (const key of [...new Set(keys)].sort()) {
          held.push({ key, owner: await acquire(locks, key, this.leaseMs, this.waitMs) });
        }
        return await write(() => this.fence(locks, held));
      } catch (error) {
        if (!(error instanceof LeaseLost)) throw error;
        if (attempt >= LEASE_ATTEMPTS) {
          throw new MemoryError(
            'CONFLICT',
            `mongodb: the write lock on ${error.key} ran out of its ${this.leaseMs} ms lease before the write, ${attempt} times`,
            { adapter: 'mongodb' },
          );
        }
      } finally {
        // A lock that fails to be released (connection lost) expires after its lease.
        await Promise.allSettled(held.map(({ key, owner }) => locks.deleteOne({ _id: key, owner })));
      }
    }
  }

  /** Throws `LeaseLost` unless every held lock is still ours with a quarter of its lease left. */
  private async fence(locks: Collection<LockDocument>, held: Held[]): Promise<void> {
    const current = await locks.find({ _id: { $in: held.map((h) => h.key) } }).toArray();
    const until = Date.now() + this.leaseMs / 4;
    for (const { key, owner } of held) {
      const lock = current.find((doc) => doc._id === key);
      if (lock?.owner !== owner || lock.expiresAt.getTime() < until) throw new LeaseLost(key);
    }
  }
}

/** Awaited right before a write made under a lock; throws when the lock may be lost by then. */
export type Fence = () => Promise<void>;

const NO_FENCE: Fence = async () => undefined;

/** Times `hold` takes its locks again after a fence found one lost, before `CONFLICT`. */
const LEASE_ATTEMPTS = 5;

interface Held {
  key: string;
  owner: string;
}

/** A held lock was broken, or is too close to its end to write under. */
class LeaseLost extends Error {
  constructor(readonly key: string) {
    super(`the write lock on ${key} was lost`);
  }
}

/** Inserts the lock document; `false` when someone else holds `key`. */
async function tryInsert(
  locks: Collection<LockDocument>,
  key: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  try {
    await locks.insertOne({ _id: key, owner, expiresAt: new Date(Date.now() + leaseMs) });
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}

function expired(lock: LockDocument | null): lock is LockDocument {
  return lock !== null && lock.expiresAt.getTime() < Date.now();
}

async function acquire(
  locks: Collection<LockDocument>,
  key: string,
  leaseMs: number,
  waitMs: number,
): Promise<string> {
  const owner = randomUUID();
  const deadline = Date.now() + waitMs;
  for (let n = 0; ; n++) {
    if (await tryInsert(locks, key, owner, leaseMs)) return owner;
    const current = await locks.findOne({ _id: key });
    if (expired(current)) {
      await breakDead(locks, current, leaseMs);
      continue;
    }
    if (Date.now() > deadline) {
      throw new MemoryError(
        'CONFLICT',
        `mongodb: gave up waiting ${waitMs} ms for the write lock on ${key}`,
        {
          adapter: 'mongodb',
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * Math.min(25, 2 * n)));
  }
}

/** Deletes a dead holder's lock, holding `break:<its owner>` so that only one waiter does. */
async function breakDead(
  locks: Collection<LockDocument>,
  dead: LockDocument,
  leaseMs: number,
): Promise<void> {
  const claim = `break:${dead.owner}`;
  const breaker = randomUUID();
  if (!(await tryInsert(locks, claim, breaker, leaseMs))) {
    const other = await locks.findOne({ _id: claim });
    if (expired(other)) await breakDead(locks, other, leaseMs);
    return;
  }
  try {
    await locks.deleteOne({ _id: dead._id, owner: dead.owner });
  } finally {
    await locks.deleteOne({ _id: claim, owner: breaker });
  }
}
