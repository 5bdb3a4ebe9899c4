import { MemoryError } from './errors.ts';

/** Levenshtein distance, case-insensitive: how many edits turn `a` into `b`. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const row = [i];
    for (let j = 1; j <= y.length; j++) {
      const substitution = previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1);
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, substitution));
    }
    previous = row;
  }
  return previous[y.length]!;
}

/** The known key closest to `key`, when it is close enough to be a likely typo. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const d = distance(key, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/**
 * Throws `INVALID_ARGUMENT` for the first own key of `object` that is not in `known`, naming it
 * (prefixed with `path`, e.g. `options.workingMemory.`), the closest known key when one is a
 * likely typo, and every known key. A misspelt option is never silently ignored.
 */
export function assertKnownKeys(
  object: object,
  known: readonly string[],
  path: string,
  what = 'option',
  adapter?: string,
): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const suggestion = closestKey(key, known);
    const hint = suggestion === undefined ? '' : `; did you mean ${path}${suggestion}?`;
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${adapter ? `${adapter}: ` : ''}unknown ${what} ${path}${key}${hint} (known: ${known.join(', ')})`,
      { adapter, details: { key: `${path}${key}`, suggestion: suggestion && `${path}${suggestion}` } },
    );
  }
}

/**
 * Throws `INVALID_ARGUMENT` (`<adapter>: unknown option schemaname; did you mean schemaName?`)
 * for a key of a store's options (or, with `path` such as `vectors.`, of a nested object) that
 * `known` (see `keysOf`) does not name. Ignored, a misspelt `schemaName` or prefix puts one
 * tenant's records where another's are.
 */
export function assertStoreOptions(
  options: object,
  known: readonly string[],
  adapter: string,
  path = '',
): void {
  assertKnownKeys(options, known, path, 'option', adapter);
}

/** Every key of any member of a union (`keyof` of a union holds only the keys all members share). */
type KeyOfAny<T> = T extends unknown ? keyof T : never;

/**
 * The keys of an arguments type `T` (of every member, for a union), from an object naming each
 * with `true`: a key of `T` left out, or one `T` does not have, does not compile, so the list
 * cannot drift from the type.
 */
export function keysOf<T>(keys: { [K in KeyOfAny<T>]-?: true }): readonly string[] {
  return Object.keys(keys);
}
