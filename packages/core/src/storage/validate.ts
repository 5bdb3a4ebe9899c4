import { MemoryError } from '../errors.ts';
import type { JsonObject } from './records.ts';

/** The longest id accepted anywhere. */
export const MAX_ID_LENGTH = 255;

/** The longest message `type` accepted: what every adapter stores (Oracle's column is `VARCHAR2(255 CHAR)`). */
export const MAX_TYPE_LENGTH = 255;

function invalid(message: string, details?: Record<string, unknown>): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message, { details });
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Throws `INVALID_ARGUMENT` when a string cannot be stored as text everywhere: a lone UTF-16
 * surrogate has no UTF-8 encoding (databases would replace it with U+FFFD or refuse it), and,
 * with `plain` (ids, titles, working memory: stored in text columns, not inside JSON), a NUL
 * character, which PostgreSQL refuses and SQLite cuts the text at.
 */
export function assertText(value: string, field: string, plain: boolean): void {
  const lone = LONE_SURROGATE.exec(value);
  if (lone) {
    const code = lone[0].charCodeAt(0).toString(16).toUpperCase();
    throw invalid(
      `${field} holds a lone UTF-16 surrogate (U+${code} at index ${lone.index}); text must be well-formed Unicode, as databases store it as UTF-8`,
      { field },
    );
  }
  if (plain && value.includes('\u0000')) {
    throw invalid(
      `${field} holds a NUL character (U+0000 at index ${value.indexOf('\u0000')}); ids, titles and working memory are stored as database text, which cannot hold NUL`,
      { field },
    );
  }
}

/** True when `assertText(value, …, plain)` accepts `value` (checked without building a message). */
export function isStorableText(value: string, plain: boolean): boolean {
  return !LONE_SURROGATE.test(value) && !(plain && value.includes('\u0000'));
}

/** True when `assertId` accepts `value`. */
export function isStorableId(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_ID_LENGTH &&
    isStorableText(value, true)
  );
}

/** Throws `INVALID_ARGUMENT` unless `value` is a non-empty string of at most 255 characters. */
export function assertId(value: unknown, field: string): asserts value is string {
  if (typeof value !== 'string') {
    throw invalid(`${field} must be a string id, got ${describe(value)}`, { field });
  }
  if (value.length === 0) throw invalid(`${field} must not be empty`, { field });
  if (value.length > MAX_ID_LENGTH) {
    throw invalid(`${field} is ${value.length} characters long; ids are at most ${MAX_ID_LENGTH}`, {
      field,
    });
  }
  assertText(value, field, true);
}

/** Like `assertId`, but `undefined` passes. */
export function assertOptionalId(value: unknown, field: string): asserts value is string | undefined {
  if (value !== undefined) assertId(value, field);
}

/** Throws `INVALID_ARGUMENT` unless `value` is an array of valid ids. */
export function assertIds(value: unknown, field: string): asserts value is string[] {
  if (!Array.isArray(value)) throw invalid(`${field} must be an array of ids, got ${describe(value)}`);
  value.forEach((id, i) => {
    assertId(id, `${field}[${i}]`);
  });
}

/** True for `{}`-like objects (not arrays, dates, class instances or null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Throws `INVALID_ARGUMENT` unless `value` is a plain object holding only JSON values. */
export function assertJsonObject(value: unknown, field: string): asserts value is JsonObject {
  if (!isPlainObject(value)) throw invalid(`${field} must be a plain JSON object, got ${describe(value)}`);
  assertJson(value, field, 0);
}

/** Throws `INVALID_ARGUMENT` unless `value` is a JSON value (no undefined, functions, NaN, cycles). */
export function assertJson(value: unknown, field: string, depth = 0): void {
  // Most values are valid: check without building a field name per key, and only walk the value
  // again, naming where it goes wrong, when the quick check fails.
  if (isStorableJson(value, depth)) return;
  explainJson(value, field, depth);
}

/**
 * How many arrays and objects a JSON value (message content, metadata with its own object) may
 * nest: what every adapter stores. MongoDB holds 100 levels in a document, of which the record
 * and its field take two, and on FerretDB 1.x an array directly inside an array takes two more
 * (it is wrapped), so 48 nested arrays are the most it holds.
 */
export const MAX_JSON_DEPTH = 48;

/** True when `assertJson` accepts `value` (it never accepts what `explainJson` refuses). */
export function isStorableJson(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return !LONE_SURROGATE.test(value);
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (depth >= MAX_JSON_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isStorableJson(value[i], depth + 1)) return false;
    return true;
  }
  if (!isPlainObject(value)) return false;
  for (const key of Object.keys(value)) {
    if (LONE_SURROGATE.test(key) || !isStorableJson(value[key], depth + 1)) return false;
  }
  return true;
}

/** Throws `INVALID_ARGUMENT` naming the first part of `value` that is not storable JSON. */
function explainJson(value: unknown, field: string, depth: number): void {
  if (depth >= MAX_JSON_DEPTH && value !== null && typeof value === 'object') {
    throw invalid(
      `${field} is nested too deeply: JSON values hold at most ${MAX_JSON_DEPTH} levels of arrays and objects (metadata counts as one), what every adapter stores`,
      { field, max: MAX_JSON_DEPTH },
    );
  }
  if (typeof value === 'string') {
    assertText(value, field, false);
    return;
  }
  if (value === null || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`${field} holds ${value}, which JSON cannot represent`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      explainJson(item, `${field}[${i}]`, depth + 1);
    });
    return;
  }
  if (isPlainObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      assertText(key, `${field} key ${JSON.stringify(key)}`, false);
      explainJson(item, `${field}.${key}`, depth + 1);
    }
    return;
  }
  throw invalid(`${field} holds ${describe(value)}, which is not a JSON value`);
}

/** Throws `INVALID_ARGUMENT` unless `value` is a valid `Date`. */
export function assertDate(value: unknown, field: string): asserts value is Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw invalid(`${field} must be a valid Date, got ${describe(value)}`, { field });
  }
}

/**
 * The first and last instants a record may carry (`createdAt`, `updatedAt`): 0001-01-01 to
 * 9999-12-31 UTC, which every supported database holds (Oracle's `TIMESTAMP` ends in 9999,
 * PostgreSQL's `timestamptz` begins in 4714 BC), so a record one store took can be moved to any
 * other. Dates that are only compared (`dateRange`, cursors) may be any valid `Date`.
 */
export const STORED_DATES = {
  min: '0001-01-01T00:00:00.000Z',
  max: '9999-12-31T23:59:59.999Z',
} as const;

const MIN_STORED_TIME = Date.parse(STORED_DATES.min);
const MAX_STORED_TIME = Date.parse(STORED_DATES.max);

/** True when `assertStoredDate` accepts `value` (a `Date` within `STORED_DATES`). */
export function isStoredDate(value: unknown): boolean {
  if (!(value instanceof Date)) return false;
  const time = value.getTime();
  return time >= MIN_STORED_TIME && time <= MAX_STORED_TIME;
}

/** Throws `INVALID_ARGUMENT` unless `value` is a valid `Date` within `STORED_DATES`. */
export function assertStoredDate(value: unknown, field: string): asserts value is Date {
  assertDate(value, field);
  if (!isStoredDate(value)) {
    throw invalid(
      `${field} is ${value.toISOString()}; a stored date must be from ${STORED_DATES.min} to ${STORED_DATES.max}, the range every supported database holds`,
      { field, min: STORED_DATES.min, max: STORED_DATES.max },
    );
  }
}

/**
 * The largest `perPage`, include window (`withPreviousMessages`, `withNextMessages`) and row
 * offset (`page × perPage`) a listing accepts: 2³¹ − 1, the largest 32-bit signed integer. Every
 * backend represents it exactly (a PostgreSQL `integer`, a MongoDB int32, a Lua number formatted
 * for Redis, a SQLite or Oracle integer), so a listing within these bounds never fails in the
 * database; larger values are refused by core with `INVALID_ARGUMENT`. Use `perPage: false` to
 * list everything.
 */
export const MAX_LISTING_COUNT = 2_147_483_647;

/**
 * Throws `INVALID_ARGUMENT` unless `value` is an integer from 0 to `max` (or `undefined`): not a
 * string, `NaN`, `Infinity`, a fraction or negative. Returns it, with `-0` turned into `0`.
 */
export function assertCount(value: unknown, field: string, max = MAX_LISTING_COUNT): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw invalid(`${field} must be an integer from 0 to ${max}, got ${describe(value)}`, {
      field,
      min: 0,
      max,
    });
  }
  return value + 0;
}

/** A short, safe description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : 'a Date';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return `${typeof value} ${String(value)}`;
}
