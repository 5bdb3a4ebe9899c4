import {
  DEFAULT_CAPABILITIES,
  MemoryDriver,
  MemoryError,
  type MemoryStorage,
  Store,
  type StoreCapabilities,
} from '@engram/core/driver';

/** The groups of a driver whose primitives reach the backend. */
const GROUPS = ['threads', 'messages', 'resources', 'workingMemory', 'vectors'] as const;

/**
 * The reference driver with a backend that can fail: once `failure` returns an error, every
 * primitive (and `open`, `write`) rejects with it; `close` still works.
 */
export class FailingDriver extends MemoryDriver {
  /** The error the backend fails with, or `undefined` while it works. */
  failure: (() => unknown) | undefined;

  constructor(options: { vectors?: boolean; capabilities?: Partial<StoreCapabilities> } = {}) {
    super(options);
    if (options.capabilities) {
      Object.assign(this, { capabilities: { ...this.capabilities, ...options.capabilities } });
    }
    const self = this;
    for (const name of GROUPS) {
      const group = this[name] as Record<string, unknown> | undefined;
      if (!group) continue;
      const guarded = new Proxy(group, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            const failure = self.failure;
            return failure ? Promise.reject(failure()) : value.apply(target, args);
          };
        },
      });
      Object.assign(this, { [name]: guarded });
    }
  }

  override open(): Promise<void> {
    return this.failure ? Promise.reject(this.failure()) : super.open();
  }

  override write<T>(fn: Parameters<MemoryDriver['write']>[0]): Promise<T> {
    return this.failure ? Promise.reject(this.failure()) : (super.write(fn) as Promise<T>);
  }
}

/**
 * The reference store with a backend that can fail: once broken, every operation's backend call
 * (but `close`) throws a driver-like error, which core maps to a `STORAGE` MemoryError.
 */
export class BreakableMemoryStore extends Store<FailingDriver> {
  constructor(options: { vectors?: boolean; capabilities?: Partial<StoreCapabilities> } = {}) {
    super(new FailingDriver(options));
  }

  /** Makes every later call fail like a dropped connection. */
  breakBackend(): void {
    this.driver.failure = () => new Error('ECONNRESET: the backend went away');
  }

  /** The reference driver's maps (private there; reached here on purpose by broken stores). */
  protected get maps(): { messages: Map<string, unknown> } {
    return { messages: (this.driver as unknown as { messageMap: Map<string, unknown> }).messageMap };
  }
}

/**
 * The reference store configured as if with a password or token against a server that cannot
 * be reached: every call (but `close`) fails with a driver-like error quoting the URL with the
 * secret in it, which core's error mapper must redact.
 */
export class UnreachableMemoryStore extends Store<FailingDriver> {
  constructor(url: string) {
    const driver = new FailingDriver();
    Object.assign(driver, { errors: { classify: () => 'CONNECTION' } });
    driver.failure = () =>
      new TypeError(`fetch ${url} failed`, { cause: new Error(`connect ECONNREFUSED ${url}`) });
    super(driver);
  }
}

/** The `withSecret` hook of the reference store: the secret as a URL password and as a token. */
export function unreachableWithSecret(secret: string): Record<string, () => UnreachableMemoryStore> {
  return {
    'password in the URL': () => new UnreachableMemoryStore(`https://user:${secret}@127.0.0.1:1/`),
    'token in the query': () => new UnreachableMemoryStore(`https://127.0.0.1:1/?authToken=${secret}`),
  };
}

/**
 * The `storedRows` hook of the reference stores: every entry of every map its driver keeps
 * (nested maps, such as the vectors per space, entry by entry), one text each.
 */
export async function memoryRows(store: MemoryStorage): Promise<string[]> {
  const rows: string[] = [];
  const walk = (name: string, value: unknown): void => {
    if (!(value instanceof Map)) return;
    for (const [key, entry] of value) {
      if (entry instanceof Map) walk(`${name}/${String(key)}`, entry);
      else rows.push(`${name} ${String(key)} ${JSON.stringify(entry)}`);
    }
  };
  for (const [name, value] of Object.entries((store as unknown as { driver: object }).driver))
    walk(name, value);
  return rows;
}

/** The breakable reference store declaring other capabilities (default: the reference store's). */
export class DeclaredStore extends BreakableMemoryStore {
  constructor(declared: Partial<StoreCapabilities>) {
    super({
      capabilities: { ...DEFAULT_CAPABILITIES, atomicWorkingMemory: true, processLocal: true, ...declared },
    });
  }
}

/**
 * A third-party store written without core's driver kit: it implements `MemoryStorage` itself,
 * declares no capabilities (so no atomic working memory) and has no `updateWorkingMemoryAtomically`.
 */
export class PlainNonAtomicStore implements MemoryStorage {
  readonly name = 'plain';
  readonly capabilities = { processLocal: true };
  private readonly inner = new Store(new MemoryDriver());
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

/** A `MemoryError` whose cause quotes a credential, as a careless adapter's mapping would keep it. */
export function leakyCredentialError(token: string): MemoryError {
  return new MemoryError('CONNECTION', 'memory: the backend refused the login', {
    cause: new Error(`auth refused for token ${token}`),
  });
}
