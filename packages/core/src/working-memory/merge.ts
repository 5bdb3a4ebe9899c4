import { MemoryError } from '../errors.ts';
import { defineKey } from '../storage/helpers.ts';
import type { JsonObject, JsonValue } from '../storage/records.ts';
import { assertJson, describe, isPlainObject } from '../storage/validate.ts';

/**
 * Merges a patch into stored working memory (schema mode), following these rules:
 *
 * - objects merge deeply, key by key;
 * - a `null` value deletes that key, at any depth — also inside an object the patch creates
 *   and on the first write, so a merge never stores `null` as an object member;
 * - arrays replace the old value whole (their elements are kept as given);
 * - any other value replaces the old one;
 * - a stored value that is not a JSON object (`null`, a Markdown string, an array, invalid
 *   JSON) counts as `{}`; a `null` member already in the stored document is dropped as well;
 * - the patch must be a plain JSON object, or a string holding one, else `INVALID_ARGUMENT`.
 *
 * Never mutates its inputs. Keys such as `__proto__`, `constructor` and `prototype` become
 * ordinary own properties of the result; they never reach or change a prototype.
 */
export function mergeWorkingMemory(stored: string | null | JsonValue, patch: unknown): JsonObject {
  // `parseStored` always returns an object of its own (freshly parsed, or a copy), so the patch
  // goes into it in place instead of copying every stored key first.
  return mergeInto(parseStored(stored), parsePatch(patch));
}

/** Reads a stored working-memory value as a JSON object; anything else counts as `{}`. */
export function parseStored(stored: unknown): JsonObject {
  if (typeof stored === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(stored);
    } catch {
      return {};
    }
    // A freshly parsed document belongs to no one: drop its nulls in place instead of copying.
    return isPlainObject(parsed) ? dropNulls(parsed as JsonObject) : {};
  }
  return isPlainObject(stored) ? withoutNulls(stored as JsonObject) : {};
}

/** Deletes the `null` members of an object this module owns, at every depth; returns it. */
function dropNulls(value: JsonObject): JsonObject {
  for (const key of Object.keys(value)) {
    const item = value[key];
    if (item === null) delete value[key];
    else if (isPlainObject(item)) dropNulls(item as JsonObject);
  }
  return value;
}

/** Checks a patch: a plain JSON object, or a string holding one. Throws `INVALID_ARGUMENT`. */
export function parsePatch(patch: unknown): JsonObject {
  let value: unknown = patch;
  if (typeof patch === 'string') {
    try {
      value = JSON.parse(patch);
    } catch (error) {
      throw new MemoryError('INVALID_ARGUMENT', 'working memory patch is a string that is not valid JSON', {
        cause: error,
      });
    }
  }
  if (!isPlainObject(value)) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `working memory patch must be a JSON object (or a string holding one), got ${describe(value)}`,
    );
  }
  assertJson(value, 'patch');
  return value as JsonObject;
}

/** Merges `patch` into `base`, an object this module owns: changed in place and returned. */
function mergeInto(base: JsonObject, patch: JsonObject): JsonObject {
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete base[key];
      continue;
    }
    if (isPlainObject(value)) {
      const current = Object.hasOwn(base, key) ? base[key] : undefined;
      const start = isPlainObject(current) ? (current as JsonObject) : {};
      defineKey(base, key, mergeInto(start, value as JsonObject));
      continue;
    }
    defineKey(base, key, copyJson(value));
  }
  return base;
}

/** A deep copy of an object without its `null` members (arrays are copied as they are). */
function withoutNulls(value: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    if (item === null) continue;
    defineKey(out, key, isPlainObject(item) ? withoutNulls(item as JsonObject) : copyJson(item));
  }
  return out;
}

/**
 * A deep copy of a JSON value (own keys such as `__proto__` stay ordinary own properties), as
 * JSON text would carry it: `-0` becomes `0`, so every store returns what a JSON column returns.
 */
export function copyJson(value: JsonValue): JsonValue {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(copyJson);
  if (isPlainObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) defineKey(out, key, copyJson(item as JsonValue));
    return out;
  }
  return value;
}
