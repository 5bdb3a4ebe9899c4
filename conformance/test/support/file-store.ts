import { mkdir, readFile, rename, rmdir, stat, writeFile } from 'node:fs/promises';
import {
  InMemoryStore,
  type Message,
  type NormalizedAtomicUpdate,
  type Resource,
  type StoreCapabilities,
  type Thread,
} from '@engram/core';
import type { Records } from './json-store.ts';

/** The maps `InMemoryStore` keeps its records in (private there; reached here on purpose). */
type Maps = Records;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What is wrong with a `JsonFileStore`, if anything. */
export type FileStoreDefect = 'none' | 'atomic' | 'metadata' | 'init' | 'lease' | 'stamp';

/** With the `'lease'` defect, a file lock older than this is broken by the next writer. */
export const FILE_LEASE_MS = 300;

/**
 * The reference store persisted to one JSON file shared by several processes, so the suite's
 * cross-process races have something real to race. Every operation holds a file lock (an
 * exclusive `mkdir`) while it loads the file, runs and writes it back, which makes it correct
 * across processes. With the `'atomic'` defect, `updateWorkingMemoryAtomically` still claims to
 * be atomic but releases the lock between its read and its write — the classic lost update.
 * With `'metadata'`, `updateThread` and `updateResource` merge into a stale read the same way.
 * With `'init'`, `init()` fails when another process initialises the file at the same moment, the
 * way a server that drops the connection of concurrent schema writers does.
 * With `'lease'`, the lock is a lease of `FILE_LEASE_MS` that fences nothing: a writer breaks a
 * lock older than that, and a holder that stood still past it writes its stale state back.
 * With `'stamp'`, `saveMessages` takes the threads' new `updatedAt` before it waits for the lock
 * and stores it as is, so a save that waited longer sets it back.
 */
export class JsonFileStore extends InMemoryStore {
  /** Shared by processes through the file: not process-local, unlike the store it extends. */
  override readonly capabilities: StoreCapabilities = {
    atomicWorkingMemory: true,
    transactionalBatches: true,
    processLocal: false,
  };
  private readonly lock: string;
  private readonly brokenAtomic: boolean;

  constructor(
    readonly file: string,
    readonly defect: FileStoreDefect = 'none',
  ) {
    super({ vectors: false }); // vectors are not persisted to the file
    this.lock = `${file}.lock`;
    this.brokenAtomic = defect === 'atomic';
  }

  protected override run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    if (operation === 'init' || operation === 'close') return super.run(operation, fn);
    if (operation === 'updateWorkingMemoryAtomically' && this.brokenAtomic) return super.run(operation, fn);
    if (operation === 'saveMessages' && this.defect === 'stamp') {
      return super.run(operation, () => this.lockedPreStamped(fn as () => Promise<unknown>)) as Promise<T>;
    }
    if ((operation === 'updateThread' || operation === 'updateResource') && this.defect === 'metadata') {
      return super.run(operation, () => this.lockedStale(fn));
    }
    return super.run(operation, () => this.locked(fn));
  }

  protected override async doInit(): Promise<void> {
    if (this.defect !== 'init') return super.doInit();
    const marker = `${this.file}.init`;
    try {
      await mkdir(marker);
    } catch {
      throw new Error(`ECONNRESET: connection closed while another process initialises ${this.file}`);
    }
    try {
      await sleep(100);
    } finally {
      await rmdir(marker);
    }
  }

  protected override async doUpdateWorkingMemoryAtomically(
    args: NormalizedAtomicUpdate,
  ): Promise<string | null> {
    if (!this.brokenAtomic) return super.doUpdateWorkingMemoryAtomically(args);
    // Read under the lock…
    const current = await this.locked(async () => {
      if (args.scope === 'resource')
        return (await this.doGetResourceById(args.resourceId))?.workingMemory ?? null;
      const thread = await this.doGetThreadById(args.threadId);
      const stored = thread?.metadata.workingMemory;
      return typeof stored === 'string' ? stored : null;
    });
    // …let others run…
    await sleep(Math.random() * 3);
    // …and write what was computed from the stale read.
    const next = args.update(current);
    return this.locked(async () => {
      if (args.scope === 'resource')
        await this.doUpdateResource({ resourceId: args.resourceId, workingMemory: next });
      else
        await this.doUpdateThread({
          id: args.threadId,
          metadata: { workingMemory: next },
          workingMemoryVersion: undefined,
        });
      return next;
    });
  }

  private async locked<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        await mkdir(this.lock);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 20_000) throw error;
        if (this.defect === 'lease') await this.breakExpired();
        await sleep(Math.random() * 2);
      }
    }
    try {
      await this.load();
      const result = await fn();
      await this.save();
      return result;
    } finally {
      await rmdir(this.lock).catch((error: NodeJS.ErrnoException) => {
        // A broken lease may be gone already.
        if (this.defect !== 'lease' || error.code !== 'ENOENT') throw error;
      });
    }
  }

  /** Removes a lock held longer than its lease (the `'lease'` defect). */
  private async breakExpired(): Promise<void> {
    const since = await stat(this.lock).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (since > FILE_LEASE_MS) await rmdir(this.lock).catch(() => undefined);
  }

  /** A save whose threads get `updatedAt` stamped before the lock was waited for, as is. */
  private async lockedPreStamped(fn: () => Promise<unknown>): Promise<unknown> {
    const stamp = new Date();
    await sleep(Math.random() * 3);
    return this.locked(async () => {
      const saved = (await fn()) as Message[];
      for (const threadId of new Set(saved.map((m) => m.threadId))) {
        const thread = this.maps.threads.get(threadId);
        if (thread) this.maps.threads.set(threadId, { ...thread, updatedAt: stamp });
      }
      return saved;
    });
  }

  /** Loads, lets others run, then applies `fn` to the stale state and writes it all back. */
  private async lockedStale<T>(fn: () => Promise<T>): Promise<T> {
    const stale = await this.locked(async () => this.snapshot());
    await sleep(Math.random() * 3);
    return this.locked(async () => {
      this.restore(stale);
      return fn();
    });
  }

  private snapshot(): Maps {
    return {
      threads: new Map(this.maps.threads),
      messages: new Map(this.maps.messages),
      resources: new Map(this.maps.resources),
    };
  }

  private restore(maps: Maps): void {
    this.maps.threads = maps.threads;
    this.maps.messages = maps.messages;
    this.maps.resources = maps.resources;
  }

  private get maps(): Maps {
    return this as unknown as Maps;
  }

  private async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    const data = JSON.parse(text) as { threads: Thread[]; messages: Message[]; resources: Resource[] };
    const dated = <T extends { createdAt: Date | string; updatedAt?: Date | string }>(r: T): T => ({
      ...r,
      createdAt: new Date(r.createdAt),
      ...(r.updatedAt === undefined ? {} : { updatedAt: new Date(r.updatedAt) }),
    });
    this.maps.threads = new Map(data.threads.map((t) => [t.id, dated(t)]));
    this.maps.messages = new Map(data.messages.map((m) => [m.id, dated(m)]));
    this.maps.resources = new Map(data.resources.map((r) => [r.id, dated(r)]));
  }

  private async save(): Promise<void> {
    const data = {
      threads: [...this.maps.threads.values()],
      messages: [...this.maps.messages.values()],
      resources: [...this.maps.resources.values()],
    };
    const tmp = `${this.file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    await writeFile(tmp, JSON.stringify(data));
    await rename(tmp, this.file);
  }
}
