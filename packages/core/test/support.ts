import type {
  ListMessagesArgs,
  ListThreadsArgs,
  MemoryStorage,
  MessagePage,
  MessagePatch,
  ThreadPage,
  UpdateResourceArgs,
  UpdateThreadArgs,
} from '../src/index.ts';
import { InMemoryStore, type Message, type Resource, type Thread } from '../src/index.ts';

/** Yields to the event loop, so concurrent callers interleave the way a network store would. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A third-party-style storage without atomic working-memory updates: it declares
 * `capabilities.atomicWorkingMemory: false`, has no `updateWorkingMemoryAtomically`, and every
 * call yields to the event loop before and after reaching the data, like a remote database.
 */
export class NonAtomicStore implements MemoryStorage {
  readonly name = 'non-atomic';
  readonly capabilities = { atomicWorkingMemory: false };
  readonly inner = new InMemoryStore();

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    await tick();
    const result = await fn();
    await tick();
    return result;
  }

  init(): Promise<void> {
    return this.call(() => this.inner.init());
  }
  close(): Promise<void> {
    return this.call(() => this.inner.close());
  }
  getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    return this.call(() => this.inner.getThreadById(args));
  }
  createThread(thread: Thread): Promise<Thread> {
    return this.call(() => this.inner.createThread(thread));
  }
  saveThread(thread: Thread): Promise<Thread> {
    return this.call(() => this.inner.saveThread(thread));
  }
  updateThread(args: UpdateThreadArgs): Promise<Thread> {
    return this.call(() => this.inner.updateThread(args));
  }
  deleteThread(args: { threadId: string }): Promise<void> {
    return this.call(() => this.inner.deleteThread(args));
  }
  listThreads(args: ListThreadsArgs): Promise<ThreadPage> {
    return this.call(() => this.inner.listThreads(args));
  }
  saveMessages(messages: Message[]): Promise<Message[]> {
    return this.call(() => this.inner.saveMessages(messages));
  }
  listMessages(args: ListMessagesArgs): Promise<MessagePage> {
    return this.call(() => this.inner.listMessages(args));
  }
  listMessagesById(args: { ids: string[] }): Promise<Message[]> {
    return this.call(() => this.inner.listMessagesById(args));
  }
  updateMessages(patches: MessagePatch[]): Promise<Message[]> {
    return this.call(() => this.inner.updateMessages(patches));
  }
  deleteMessages(ids: string[]): Promise<void> {
    return this.call(() => this.inner.deleteMessages(ids));
  }
  getResourceById(args: { resourceId: string }): Promise<Resource | null> {
    return this.call(() => this.inner.getResourceById(args));
  }
  updateResource(args: UpdateResourceArgs): Promise<Resource> {
    return this.call(() => this.inner.updateResource(args));
  }
}

/** Records every storage call made through it (method names), delegating to an InMemoryStore. */
export function spyStore(store: MemoryStorage = new InMemoryStore()): {
  store: MemoryStorage;
  calls: string[];
} {
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

/** Runs `fn` and returns what it threw (fails the test when it did not throw). */
export async function caught(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}

let counter = 0;
/** A random-looking unique id for one test. */
export function uid(prefix: string): string {
  counter++;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}
