import { capabilitiesOf, type MemoryStorage } from '@engram/core';

/** Thrown by a check that does not apply to the store under test (a declared capability). */
export class SkipCheck extends Error {
  override readonly name = 'SkipCheck';
}

/** Ends the current check as skipped, with `reason`. */
export function skipCheck(reason: string): never {
  throw new SkipCheck(reason);
}

/** Name suffix of checks that apply only to stores declaring `capabilities.atomicWorkingMemory`. */
export const NEEDS_ATOMIC = ' [needs capabilities.atomicWorkingMemory]';

/** Name suffix of checks that apply only to stores without `capabilities.atomicWorkingMemory`. */
export const FOR_NON_ATOMIC = ' [stores without capabilities.atomicWorkingMemory]';

/** Name suffix of checks of the all-or-nothing promise of `capabilities.transactionalBatches: true`. */
export const NEEDS_TRANSACTIONAL = ' [capabilities.transactionalBatches: true]';

/** Name suffix of checks of the weaker promise of `capabilities.transactionalBatches: false`. */
export const FOR_NON_TRANSACTIONAL = ' [capabilities.transactionalBatches: false]';

/**
 * Skips the check unless the store declares (and implements) atomic working-memory updates;
 * returns its `updateWorkingMemoryAtomically`, bound.
 */
export function requireAtomic(
  store: MemoryStorage,
): NonNullable<MemoryStorage['updateWorkingMemoryAtomically']> {
  const atomic = store.updateWorkingMemoryAtomically?.bind(store);
  if (!capabilitiesOf(store).atomicWorkingMemory || !atomic) {
    skipCheck('needs capabilities.atomicWorkingMemory, which this store does not declare');
  }
  return atomic;
}
