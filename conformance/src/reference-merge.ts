import type { JsonObject, JsonValue } from '@engram/core';
import fc from 'fast-check';

/** The merge rules of the specification, written independently of core's implementation. */
export function referenceMerge(stored: string | null, patch: JsonObject): JsonObject {
  let base: unknown = null;
  try {
    base = stored === null ? null : JSON.parse(stored);
  } catch {
    base = null;
  }
  const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);
  const dropNulls = (o: JsonObject): JsonObject =>
    Object.fromEntries(
      Object.entries(o)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, isObject(v) ? dropNulls(v) : v]),
    );
  const merge = (target: JsonObject, p: JsonObject): JsonObject => {
    const out: JsonObject = { ...target };
    for (const [k, v] of Object.entries(p)) {
      if (v === null) delete out[k];
      else if (isObject(v)) out[k] = merge(isObject(out[k]) ? (out[k] as JsonObject) : {}, v);
      else out[k] = structuredClone(v);
    }
    return out;
  };
  return merge(isObject(base) ? dropNulls(base) : {}, patch);
}

const leaf: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.constantFrom('x', '', 'ü'),
  fc.integer({ min: 0, max: 9 }),
  fc.boolean(),
  fc.constant(null),
  fc.constant<JsonValue>([1, { a: null }]),
);
export const patchArbitrary: fc.Arbitrary<JsonObject> = fc.dictionary(
  fc.constantFrom('a', 'b', 'c'),
  fc.oneof(
    leaf,
    fc.dictionary(
      fc.constantFrom('a', 'b', 'c'),
      fc.oneof(leaf, fc.dictionary(fc.constantFrom('a', 'b'), leaf, { maxKeys: 2 })),
      { maxKeys: 3 },
    ),
  ),
  { maxKeys: 3 },
);
