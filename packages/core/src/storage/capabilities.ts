import type { MemoryStorage } from './contract.ts';

/**
 * What a store promises beyond the contract's baseline, declared once as `store.capabilities`.
 * Each key has a default (`DEFAULT_CAPABILITIES`); a store declares the keys where it differs.
 * `Memory` and the conformance suite read them through `capabilitiesOf(store)`.
 */
export interface StoreCapabilities {
  /**
   * `updateWorkingMemoryAtomically` is a read-modify-write no other writer can interleave with,
   * across processes and machines. Default `false`: the store omits the method (or it rejects
   * with `UNSUPPORTED`) and `Memory` serialises writers in-process only.
   */
  readonly atomicWorkingMemory: boolean;
  /**
   * `saveMessages` is all-or-nothing and `deleteThread` removes the thread and its messages in
   * one transaction. Default `true`. `false` is the weaker promise: a batch that fails part-way
   * (after it passed the checks of its threads and ids, e.g. the connection dropped) may leave
   * some of its messages written — each exactly as given — and saving the same batch again
   * completes it; a `deleteThread` that failed completes when called again.
   */
  readonly transactionalBatches: boolean;
  /**
   * The data lives inside this process only (an in-memory store, libSQL `:memory:`), so
   * cross-process races cannot apply. Default `false`.
   */
  readonly processLocal: boolean;
}

/** The capabilities of a store that declares none. */
export const DEFAULT_CAPABILITIES: StoreCapabilities = Object.freeze({
  atomicWorkingMemory: false,
  transactionalBatches: true,
  processLocal: false,
});

/**
 * The capabilities of a store on a database server: working-memory updates atomic across
 * processes, batches and deletes all-or-nothing, data shared by every process that connects.
 */
export const SERVER_CAPABILITIES = Object.freeze({
  atomicWorkingMemory: true,
  transactionalBatches: true,
  processLocal: false,
} as const);

/** Every capability of a store, resolved; the last five are the presence of the optional domains. */
export interface ResolvedCapabilities extends StoreCapabilities {
  /** `store.vectors` is present: semantic recall works on this store (see `vectors.ts`). */
  readonly vectors: boolean;
  /** `store.keywords` is present: keyword and hybrid recall work on this store (see `keywords.ts`). */
  readonly keywords: boolean;
  /** `store.observations` is present: observational memory works on this store (see `observations.ts`). */
  readonly observations: boolean;
  /** `store.turns` is present: `options.turnRecords` works on this store (see `turns.ts`). */
  readonly turns: boolean;
  /** `store.settings` is present: `Memory` records its configuration there (see `settings.ts`). */
  readonly settings: boolean;
}

/**
 * The capabilities of any store: `store.capabilities` where it names a key, else the default.
 * `atomicWorkingMemory` also needs `updateWorkingMemoryAtomically` to be a function.
 */
export function capabilitiesOf(store: MemoryStorage): ResolvedCapabilities {
  const declared: Partial<StoreCapabilities> = store.capabilities ?? {};
  return {
    atomicWorkingMemory:
      declared.atomicWorkingMemory === true && typeof store.updateWorkingMemoryAtomically === 'function',
    transactionalBatches: declared.transactionalBatches ?? DEFAULT_CAPABILITIES.transactionalBatches,
    processLocal: declared.processLocal === true,
    vectors: store.vectors !== undefined,
    keywords: store.keywords !== undefined,
    observations: store.observations !== undefined,
    turns: store.turns !== undefined,
    settings: store.settings !== undefined,
  };
}
