import { describe, expect, it } from 'vitest';
import {
  capabilitiesOf,
  DEFAULT_CAPABILITIES,
  type Driver,
  InMemoryStore,
  MemoryDriver,
  type MemoryStorage,
  Store,
  type StoreCapabilities,
} from '../src/driver.ts';
import { NonAtomicStore } from './support.ts';

/** The reference driver declaring other capabilities, with or without a strategy. */
function driverWith(capabilities: StoreCapabilities, strategy = true): Driver<unknown> {
  const inner = new MemoryDriver();
  return Object.assign(Object.create(inner) as MemoryDriver, {
    capabilities,
    workingMemory: strategy ? inner.workingMemory : undefined,
  });
}

const update = { scope: 'resource' as const, resourceId: 'r', update: () => 'x' };

describe('store capabilities', () => {
  it('a driver that declares no atomic working memory gives a store without the atomic update', async () => {
    const store = new Store(driverWith(DEFAULT_CAPABILITIES, false));
    expect(store.capabilities).toEqual(DEFAULT_CAPABILITIES);
    expect(capabilitiesOf(store)).toMatchObject({ ...DEFAULT_CAPABILITIES, vectors: true });
    await expect(store.updateWorkingMemoryAtomically(update)).rejects.toMatchObject({
      code: 'UNSUPPORTED',
      message: expect.stringContaining('atomicWorkingMemory: false'),
    });
    // Argument errors still come first.
    await expect(store.updateWorkingMemoryAtomically({ ...update, resourceId: '' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('the reference store declares atomic, transactional and process-local, with vectors', () => {
    const store = new InMemoryStore();
    expect(store.capabilities).toEqual({
      atomicWorkingMemory: true,
      transactionalBatches: true,
      processLocal: true,
    });
    expect(capabilitiesOf(store).vectors).toBe(true);
    expect(capabilitiesOf(new InMemoryStore({ vectors: false })).vectors).toBe(false);
    expect(new InMemoryStore({ vectors: false }).vectors).toBeUndefined();
    expect(capabilitiesOf(new InMemoryStore()).observations).toBe(true);
    expect(new InMemoryStore({ observations: false }).observations).toBeUndefined();
  });

  it('capabilitiesOf reports each optional domain the store has, and only those', () => {
    const all = { vectors: true, keywords: true, observations: true, turns: true, settings: true };
    expect(capabilitiesOf(new InMemoryStore())).toMatchObject(all);
    for (const domain of Object.keys(all) as (keyof typeof all)[]) {
      const without = capabilitiesOf(new InMemoryStore({ [domain]: false }));
      expect(without).toMatchObject({ ...all, [domain]: false });
    }
  });

  it('a driver declaring atomicWorkingMemory without a strategy is refused at construction', () => {
    const declared = { ...DEFAULT_CAPABILITIES, atomicWorkingMemory: true };
    expect(() => new Store(driverWith(declared, false))).toThrow(/supplies no workingMemory strategy/);
  });

  it('a getter can report a capability learnt at connect time', () => {
    let transactions = false;
    const inner = new MemoryDriver();
    const driver = Object.create(inner) as MemoryDriver;
    Object.defineProperty(driver, 'capabilities', {
      get: () => ({ ...inner.capabilities, transactionalBatches: transactions }),
    });
    const store = new Store(driver);
    expect(capabilitiesOf(store).transactionalBatches).toBe(false);
    transactions = true;
    expect(capabilitiesOf(store).transactionalBatches).toBe(true);
  });

  it('capabilitiesOf reads plain stores: what capabilities names, else the defaults', () => {
    const plain = new NonAtomicStore() as MemoryStorage;
    expect(capabilitiesOf(plain)).toEqual({
      ...DEFAULT_CAPABILITIES,
      vectors: false,
      keywords: false,
      observations: false,
      turns: false,
      settings: false,
    });
    const method = { updateWorkingMemoryAtomically: async () => null };
    const declared = {
      ...plain,
      name: 'x',
      capabilities: { atomicWorkingMemory: true, transactionalBatches: false, processLocal: true },
      ...method,
    };
    expect(capabilitiesOf(declared as MemoryStorage)).toMatchObject({
      atomicWorkingMemory: true,
      transactionalBatches: false,
      processLocal: true,
    });
    // A declaration without the method is not atomic.
    const claim = { ...plain, name: 'y', capabilities: { atomicWorkingMemory: true } };
    expect(capabilitiesOf(claim as MemoryStorage).atomicWorkingMemory).toBe(false);
  });
});
