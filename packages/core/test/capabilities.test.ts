import { describe, expect, it } from 'vitest';
import {
  capabilitiesOf,
  DEFAULT_CAPABILITIES,
  InMemoryStore,
  MemoryError,
  type MemoryStorage,
  type NormalizedAtomicUpdate,
  StoreBase,
  type StoreCapabilities,
} from '../src/index.ts';
import { NonAtomicStore } from './support.ts';

const unused = (): never => {
  throw new Error('not used by these tests');
};

/** A StoreBase subclass that declares nothing and implements no atomic update. */
class Bare extends StoreBase {
  readonly name = 'bare';
  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return new MemoryError('STORAGE', `bare: ${operation} failed: ${String(error)}`);
  }
  protected async doInit(): Promise<void> {}
  protected async doClose(): Promise<void> {}
  protected doGetThreadById = unused;
  protected doCreateThread = unused;
  protected doSaveThread = unused;
  protected doUpdateThread = unused;
  protected doDeleteThread = unused;
  protected readThreadPage = unused;
  protected doSaveMessages = unused;
  protected readMessagePage = unused;
  protected doListMessagesById = unused;
  protected doUpdateMessages = unused;
  protected doDeleteMessages = unused;
  protected doGetResourceById = unused;
  protected doUpdateResource = unused;
}

/** The older way: the separate fields, declared as fields. */
class Legacy extends Bare {
  readonly supportsAtomicWorkingMemoryMerge = true;
  readonly processLocal = true;
  protected async doUpdateWorkingMemoryAtomically(args: NormalizedAtomicUpdate): Promise<string | null> {
    return args.update('legacy');
  }
}

/** Declares atomic updates but forgot to implement them. */
class Forgetful extends Bare {
  override readonly capabilities: StoreCapabilities = { ...DEFAULT_CAPABILITIES, atomicWorkingMemory: true };
}

/** A capability only known once connected, as a getter. */
class Discovering extends Bare {
  transactions = false;
  override get capabilities(): StoreCapabilities {
    return { ...DEFAULT_CAPABILITIES, transactionalBatches: this.transactions };
  }
}

const update = { scope: 'resource' as const, resourceId: 'r', update: () => 'x' };

describe('store capabilities', () => {
  it('a StoreBase store that declares nothing has the defaults, and no atomic update', async () => {
    const store = new Bare();
    expect(store.capabilities).toEqual({
      atomicWorkingMemory: false,
      transactionalBatches: true,
      processLocal: false,
    });
    expect(store.supportsAtomicWorkingMemoryMerge).toBe(false);
    expect(store.processLocal).toBe(false);
    expect(capabilitiesOf(store)).toEqual({ ...DEFAULT_CAPABILITIES, vectors: false });
    await expect(store.updateWorkingMemoryAtomically(update)).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      message: expect.stringContaining('atomicWorkingMemory: false'),
    });
    // Argument errors still come first.
    await expect(store.updateWorkingMemoryAtomically({ ...update, resourceId: '' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('the older fields declared by a subclass still count, and derive capabilities', async () => {
    const store = new Legacy();
    expect(store.capabilities).toEqual({
      atomicWorkingMemory: true,
      transactionalBatches: true,
      processLocal: true,
    });
    expect(capabilitiesOf(store).atomicWorkingMemory).toBe(true);
    expect(await store.updateWorkingMemoryAtomically({ ...update, update: (v) => `${v}!` })).toBe('legacy!');
  });

  it('declared capabilities derive the older fields', () => {
    const store = new InMemoryStore();
    expect(store.capabilities).toEqual({
      atomicWorkingMemory: true,
      transactionalBatches: true,
      processLocal: true,
    });
    expect(store.supportsAtomicWorkingMemoryMerge).toBe(true);
    expect(store.processLocal).toBe(true);
    expect(capabilitiesOf(store).vectors).toBe(true);
    expect(capabilitiesOf(new InMemoryStore({ vectors: false })).vectors).toBe(false);
  });

  it('declaring atomicWorkingMemory without doUpdateWorkingMemoryAtomically is UNSUPPORTED, naming the gap', async () => {
    await expect(new Forgetful().updateWorkingMemoryAtomically(update)).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      message: expect.stringContaining('implements no doUpdateWorkingMemoryAtomically'),
    });
  });

  it('a getter can report a capability learnt at connect time', () => {
    const store = new Discovering();
    expect(capabilitiesOf(store).transactionalBatches).toBe(false);
    store.transactions = true;
    expect(capabilitiesOf(store).transactionalBatches).toBe(true);
  });

  it('capabilitiesOf reads plain stores: capabilities first, then the older fields, then defaults', () => {
    const plain = new NonAtomicStore() as MemoryStorage;
    expect(capabilitiesOf(plain)).toEqual({ ...DEFAULT_CAPABILITIES, vectors: false });
    const method = { updateWorkingMemoryAtomically: async () => null };
    const legacy = {
      ...plain,
      name: 'x',
      supportsAtomicWorkingMemoryMerge: true,
      processLocal: true,
      ...method,
    };
    expect(capabilitiesOf(legacy as MemoryStorage)).toMatchObject({
      atomicWorkingMemory: true,
      processLocal: true,
    });
    const both = { ...legacy, capabilities: { atomicWorkingMemory: false, transactionalBatches: false } };
    expect(capabilitiesOf(both as MemoryStorage)).toMatchObject({
      atomicWorkingMemory: false,
      transactionalBatches: false,
      processLocal: true,
    });
    // A declaration without the method is not atomic.
    const claim = { ...plain, name: 'y', capabilities: { atomicWorkingMemory: true } };
    expect(capabilitiesOf(claim as MemoryStorage).atomicWorkingMemory).toBe(false);
  });
});
