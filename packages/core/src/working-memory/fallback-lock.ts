import type { MemoryStorage } from '../storage/contract.ts';
import type { WorkingMemoryScope } from '../storage/records.ts';

/**
 * Serialises working-memory writers per `(scope, id)` inside this process, for storages that
 * do not declare `capabilities.atomicWorkingMemory`. Writers in other processes (or other
 * machines) can still interleave with these: only an atomic storage rules that out.
 */
export class FallbackLock {
  private tails = new Map<string, Promise<void>>();

  /** Runs `task` after every task queued earlier for the same scope and id. */
  run<T>(scope: WorkingMemoryScope, id: string, task: () => Promise<T>): Promise<T> {
    const key = `${scope}\u0000${id}`;
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** How many `(scope, id)` pairs have queued work (for tests and diagnostics). */
  get pending(): number {
    return this.tails.size;
  }
}

const locks = new WeakMap<MemoryStorage, FallbackLock>();

/** The one fallback lock of a storage instance, shared by every `Memory` built on it. */
export function fallbackLockFor(storage: MemoryStorage): FallbackLock {
  let lock = locks.get(storage);
  if (!lock) {
    lock = new FallbackLock();
    locks.set(storage, lock);
  }
  return lock;
}
