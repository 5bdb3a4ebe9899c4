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
): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const suggestion = closestKey(key, known);
    const hint = suggestion === undefined ? '' : `; did you mean ${path}${suggestion}?`;
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `unknown ${what} ${path}${key}${hint} (known: ${known.join(', ')})`,
      { details: { key: `${path}${key}`, suggestion: suggestion && `${path}${suggestion}` } },
    );
  }
}

/**
 * The keys of an arguments type `T`, from an object naming each with `true`: a key of `T` left
 * out, or one `T` does not have, does not compile, so the list cannot drift from the type.
 */
export function keysOf<T>(keys: { [K in keyof T]-?: true }): readonly string[] {
  return Object.keys(keys);
}
