import { MemoryError } from '../errors.ts';

/** The `CONNECTION` error every call of a closed store rejects with. */
export function storeClosedError(adapter: string, operation: string): MemoryError {
  return new MemoryError(
    'CONNECTION',
    `${adapter}: ${operation} failed: the store is closed; create a new store to connect again`,
    { adapter, details: { operation, closed: true } },
  );
}

/**
 * The one lifecycle of every engram store, kept in one place:
 *
 * - `ready()` opens the store (connect, migrate) once, through one memoised promise: the first
 *   caller starts it, concurrent callers share it, later callers get the settled result. A
 *   failed attempt is forgotten, so the next call tries again.
 * - `close()` is idempotent. It marks the store closed at once (every later `ready()`, and so
 *   every later operation, rejects with `CONNECTION`), waits for an open in flight to settle and
 *   then releases what it opened: a close during `init()` never leaves a connection behind.
 *
 * `Store` uses it for every store built from a driver; a `MemoryStorage` written from scratch can use it
 * directly.
 */
export class StoreLifecycle {
  private opening: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  /**
   * @param adapter  the adapter name used in the closed-store error.
   * @param open     connects and migrates; called once per successful open.
   * @param release  releases connections; called at most once, after any open has settled.
   */
  constructor(
    private readonly adapter: () => string,
    private readonly open: () => Promise<void>,
    private readonly release: () => Promise<void>,
  ) {}

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** Resolves once the store is open; rejects with `CONNECTION` when it is (or gets) closed. */
  async ready(operation = 'init'): Promise<void> {
    if (this.closing) throw storeClosedError(this.adapter(), operation);
    if (!this.opening) {
      const opening = this.open().catch((error: unknown) => {
        if (this.opening === opening) this.opening = undefined;
        throw error;
      });
      this.opening = opening;
    }
    await this.opening;
    // Closed while the open was in flight: the open's work is released by close().
    if (this.closing) throw storeClosedError(this.adapter(), operation);
  }

  /** Closes the store once; later calls return the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.opening?.catch(() => undefined);
      await this.release();
    })();
    return this.closing;
  }
}
