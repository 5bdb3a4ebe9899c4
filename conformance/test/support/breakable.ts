import {
  createErrorMapper,
  DEFAULT_CAPABILITIES,
  InMemoryStore,
  type MemoryError,
  type MemoryStorage,
  type StoreCapabilities,
} from '@engram/core';

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

/**
 * The reference store configured as if with a password or token against a server that cannot
 * be reached: every call (but `close`) fails with a driver-like error quoting the URL with the
 * secret in it, mapped by core's error mapper as an adapter's would be.
 */
export class UnreachableMemoryStore extends InMemoryStore {
  private readonly mapError = createErrorMapper({ adapter: 'memory', classify: () => 'CONNECTION' });

  constructor(private readonly url: string) {
    super();
  }

  protected override run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    if (operation === 'close') return super.run(operation, fn);
    const refused = new Error(`connect ECONNREFUSED ${this.url}`);
    return super.run(operation, () =>
      Promise.reject(new TypeError(`fetch ${this.url} failed`, { cause: refused })),
    );
  }

  protected override toMemoryError(error: unknown, operation: string): MemoryError {
    return this.mapError(error, operation);
  }
}

/** The `withSecret` hook of the reference store: the secret as a URL password and as a token. */
export function unreachableWithSecret(secret: string): Record<string, () => UnreachableMemoryStore> {
  return {
    'password in the URL': () => new UnreachableMemoryStore(`https://user:${secret}@127.0.0.1:1/`),
    'token in the query': () => new UnreachableMemoryStore(`https://127.0.0.1:1/?authToken=${secret}`),
  };
}

/** The breakable reference store declaring other capabilities (default: the reference store's). */
export class DeclaredStore extends BreakableMemoryStore {
  override readonly capabilities: StoreCapabilities;

  constructor(declared: Partial<StoreCapabilities>) {
    super();
    this.capabilities = {
      ...DEFAULT_CAPABILITIES,
      atomicWorkingMemory: true,
      processLocal: true,
      ...declared,
    };
  }
}

/**
 * A third-party store written before `capabilities`: it declares only the older
 * `supportsAtomicWorkingMemoryMerge: false` and has no `updateWorkingMemoryAtomically`.
 */
export class LegacyNonAtomicStore implements MemoryStorage {
  readonly name = 'legacy';
  readonly supportsAtomicWorkingMemoryMerge = false;
  readonly processLocal = true;
  private readonly inner = new InMemoryStore();
  init = () => this.inner.init();
  close = () => this.inner.close();
  getThreadById: MemoryStorage['getThreadById'] = (args) => this.inner.getThreadById(args);
  createThread: MemoryStorage['createThread'] = (thread) => this.inner.createThread(thread);
  saveThread: MemoryStorage['saveThread'] = (thread) => this.inner.saveThread(thread);
  updateThread: MemoryStorage['updateThread'] = (args) => this.inner.updateThread(args);
  deleteThread: MemoryStorage['deleteThread'] = (args) => this.inner.deleteThread(args);
  listThreads: MemoryStorage['listThreads'] = (args) => this.inner.listThreads(args);
  saveMessages: MemoryStorage['saveMessages'] = (messages) => this.inner.saveMessages(messages);
  listMessages: MemoryStorage['listMessages'] = (args) => this.inner.listMessages(args);
  listMessagesById: MemoryStorage['listMessagesById'] = (args) => this.inner.listMessagesById(args);
  updateMessages: MemoryStorage['updateMessages'] = (patches) => this.inner.updateMessages(patches);
  deleteMessages: MemoryStorage['deleteMessages'] = (ids) => this.inner.deleteMessages(ids);
  getResourceById: MemoryStorage['getResourceById'] = (args) => this.inner.getResourceById(args);
  updateResource: MemoryStorage['updateResource'] = (args) => this.inner.updateResource(args);
}
