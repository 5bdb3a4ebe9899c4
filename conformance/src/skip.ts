/** Thrown by a check that does not apply to the store under test (a declared capability). */
export class SkipCheck extends Error {
  override readonly name = 'SkipCheck';
}

/** Ends the current check as skipped, with `reason`. */
export function skipCheck(reason: string): never {
  throw new SkipCheck(reason);
}

/** Name suffix of checks that apply only to stores declaring `supportsAtomicWorkingMemoryMerge: true`. */
export const NEEDS_ATOMIC = ' [needs supportsAtomicWorkingMemoryMerge]';

/** Name suffix of checks that apply only to stores declaring `supportsAtomicWorkingMemoryMerge: false`. */
export const FOR_NON_ATOMIC = ' [stores without supportsAtomicWorkingMemoryMerge]';
