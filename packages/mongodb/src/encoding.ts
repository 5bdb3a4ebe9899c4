import { createHash } from 'node:crypto';
import { defineKey, isPlainObject, type JsonObject, type JsonValue } from '@engram/core/driver';
import { mongoError } from './errors.ts';

/**
 * How JSON values (message content, metadata) become BSON documents and back.
 *
 * JSON allows any string as an object key; MongoDB field names may not be empty in update paths,
 * may not contain NUL, and keys holding `.` or starting with `$` are either rejected (FerretDB,
 * MongoDB before 5.0) or only reachable through `$getField`/`$setField` (MongoDB 5.0+); FerretDB
 * also refuses path elements with leading or trailing whitespace. So at every depth `%`, `.` and
 * NUL, a leading `$` and leading or trailing whitespace are percent-escaped (`%2E`, `%uXXXX`, …),
 * the empty key is stored as `%`, and every other key exactly as given (the README has the
 * table). A literal `%` is always escaped, so decoding is exact. `__proto__` is stored as an
 * ordinary field and read back as an own property, never as a prototype.
 *
 * Arrays directly inside arrays are stored natively on MongoDB. Servers that cannot store them
 * (FerretDB 1.x answers "nested arrays are not supported") get each inner array wrapped as
 * `{ "%a": [...] }`; `%a` is never an encoded key, so reading unwraps it on any server.
 */

/** How values are written for the connected server. */
export interface Codec {
  /** Wrap arrays that sit directly inside arrays as `{ "%a": [...] }`. */
  wrapNestedArrays: boolean;
}

/** The codec for MongoDB itself: everything native except the escaped keys. */
export const NATIVE: Codec = { wrapNestedArrays: false };

const ARRAY_WRAPPER = '%a';
/** Whitespace as JavaScript's `\s` and Go's `unicode.IsSpace` (FerretDB) define it. */
const SPACE = /[\s\u0085]/;

function escapeChar(c: string): string {
  const code = c.charCodeAt(0);
  const hex = code.toString(16).toUpperCase();
  return code < 0x100 ? `%${hex.padStart(2, '0')}` : `%u${hex.padStart(4, '0')}`;
}

/**
 * MongoDB accepts 100 levels of nesting in a stored document; the record and the field holding
 * the value take two, so values may nest this deep.
 */
export const MAX_VALUE_DEPTH = 96;

/** The stored form of one object key. */
export function encodeKey(key: string): string {
  if (key === '') return '%';
  let out = key.replace(/[%.\0]/g, escapeChar).replace(/^\$/, '%24');
  const first = out.charAt(0);
  if (SPACE.test(first)) out = escapeChar(first) + out.slice(1);
  const last = out.charAt(out.length - 1);
  if (SPACE.test(last)) out = out.slice(0, -1) + escapeChar(last);
  return out;
}

/** The key an `encodeKey` result came from. */
export function decodeKey(stored: string): string {
  if (stored === '%') return '';
  if (!stored.includes('%')) return stored;
  return stored.replace(/%(?:u([0-9A-F]{4})|([0-9A-F]{2}))/g, (_match, wide?: string, narrow?: string) =>
    String.fromCharCode(Number.parseInt(wide ?? narrow ?? '', 16)),
  );
}

/**
 * The BSON-ready form of a JSON value: the same shape with every object key encoded (and inner
 * arrays wrapped when the codec says so). `depth` is the stored nesting level of `value`, `inArray`
 * whether it sits directly inside an array. Throws `INVALID_ARGUMENT` for values nested too deeply.
 */
export function encodeValue(
  value: JsonValue,
  field: string,
  codec: Codec,
  depth = 0,
  inArray = false,
): unknown {
  if (depth > MAX_VALUE_DEPTH) {
    const message = `${field} is nested more than ${MAX_VALUE_DEPTH} levels deep; MongoDB stores at most 100`;
    throw mongoError('INVALID_ARGUMENT', message);
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const wrap = inArray && codec.wrapNestedArrays;
    const level = wrap ? depth + 2 : depth + 1;
    const items = value.map((item, i) => encodeValue(item, `${field}[${i}]`, codec, level, true));
    return wrap ? { [ARRAY_WRAPPER]: items } : items;
  }
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    defineKey(out, encodeKey(key), encodeValue(item, `${field}.${key}`, codec, depth + 1) as JsonValue);
  }
  return out;
}

/** True for `{ "%a": [...] }`, the stored form of an array inside an array. */
function isWrappedArray(stored: unknown): stored is { [ARRAY_WRAPPER]: unknown[] } {
  return isPlainObject(stored) && Object.keys(stored).length === 1 && Array.isArray(stored[ARRAY_WRAPPER]);
}

/** The JSON value an `encodeValue` result came from. */
export function decodeValue(stored: unknown): JsonValue {
  if (stored === null || stored === undefined) return null;
  if (typeof stored === 'string' || typeof stored === 'number' || typeof stored === 'boolean') return stored;
  if (Array.isArray(stored)) {
    return stored.map((item) => decodeValue(isWrappedArray(item) ? item[ARRAY_WRAPPER] : item));
  }
  if (typeof stored === 'object') return decodeObject(stored as Record<string, unknown>);
  // Types no engram write produces (a Long or Decimal128 written by other software): keep their
  // JSON form rather than drop them.
  return JSON.parse(JSON.stringify(stored)) as JsonValue;
}

/** A stored object (metadata) as a JSON object; anything else counts as `{}`. */
export function decodeObject(stored: unknown): JsonObject {
  const out: JsonObject = {};
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return out;
  for (const [key, item] of Object.entries(stored as Record<string, unknown>)) {
    defineKey(out, decodeKey(key), decodeValue(item));
  }
  return out;
}

/** JSON text with object keys sorted at every depth: equal for `jsonEqual` values. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as JsonValue)}`).join(',')}}`;
}

/**
 * The SHA-256 of a value's canonical JSON. Threads keep one per metadata key so that
 * `listThreads({ metadata })` compares JSON values exactly (key order ignored, `null` distinct
 * from a missing key, arrays never matched element-wise) with a plain equality filter.
 */
export function valueHash(value: JsonValue): string {
  return createHash('sha256').update(canonicalJson(value)).digest('base64url');
}
