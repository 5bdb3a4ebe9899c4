import type { JsonObject, JsonValue } from '@engram/core';

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The deep merge a raw baseline does in JS: objects merge key by key, `null` deletes a key,
 * anything else replaces. What an application writing its own read-modify-write would do.
 */
export function deepMerge(stored: string | null, patch: JsonObject): string {
  let base: JsonObject = {};
  if (stored) {
    const parsed = JSON.parse(stored) as JsonValue;
    if (isObject(parsed)) base = parsed;
  }
  return JSON.stringify(mergeInto(base, patch));
}

function mergeInto(base: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (isObject(value)) out[key] = mergeInto(isObject(out[key]) ? out[key] : {}, value);
    else out[key] = value;
  }
  return out;
}
