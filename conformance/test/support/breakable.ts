import { InMemoryStore } from '@engram/core';

/**
 * The reference store with a backend that can fail: once broken, every operation's backend
 * call (but `close`) throws a driver-like error, which `StoreBase` maps to a `STORAGE` MemoryError.
 */
export class BreakableMemoryStore extends InMemoryStore {
  protected broken = false;

  /** Makes every later call fail like a dropped connection. */
  breakBackend(): void {
    this.broken = true;
  }

  protected override run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    if (!this.broken || operation === 'close') return super.run(operation, fn);
    return super.run(operation, () => Promise.reject(new Error('ECONNRESET: the backend went away')));
  }
}
