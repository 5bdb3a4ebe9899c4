/** Thrown by a check that does not apply to the store under test (a declared capability). */
export class SkipCheck extends Error {
  override readonly name = 'SkipCheck';
}

/** Ends the current check as skipped, with `reason`. */
export function skipCheck(reason: string): never {
  throw new SkipCheck(reason);
}
