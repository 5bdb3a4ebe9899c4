import type { JsonValue, MemoryErrorCode } from '@engram/core';
import { jsonEqual } from '@engram/core/driver';

/** A failed expectation of the suite. */
export class ConformanceError extends Error {
  override readonly name = 'ConformanceError';
}

/** Fails with `message` unless `condition` holds. */
export function expectTrue(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceError(message);
}

/**
 * Turns a value into plain JSON for comparison and display: a `Date` becomes
 * `"<Date …ISO…>"` (so a date returned as a string never equals one returned as a `Date`),
 * `undefined` becomes `"<undefined>"`, object key order is kept but ignored when comparing.
 */
export function normalize(value: unknown): JsonValue {
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? '<Invalid Date>' : `<Date ${value.toISOString()}>`;
  }
  if (value === undefined) return '<undefined>';
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : `<number ${value}>`;
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: normalize(item), enumerable: true, writable: true });
    }
    return out;
  }
  return `<${typeof value}>`;
}

/** Short JSON for messages. */
export function show(value: unknown, max = 1_500): string {
  const text = JSON.stringify(normalize(value));
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * Fails unless `actual` equals `expected` as JSON, with dates compared as `Date` objects at
 * millisecond precision and object key order ignored.
 */
export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const [got, want] = [normalize(actual), normalize(expected)];
  if (!jsonEqual(got, want)) {
    throw new ConformanceError(
      `${what}\n  first difference ${firstDifference(got, want, '$')}\n  expected: ${show(expected)}\n  actual:   ${show(actual)}`,
    );
  }
}

/** Where `actual` first differs from `expected` (`at $.path: …`), for messages with long dumps. */
export function difference(actual: unknown, expected: unknown): string {
  return firstDifference(normalize(actual), normalize(expected), '$');
}

/**
 * Where two unequal normalized values first differ (depth first, array items in order, then
 * object keys), with both sides there: what a long, truncated dump of each would hide.
 */
function firstDifference(actual: JsonValue, expected: JsonValue, path: string): string {
  const both = (a: JsonValue, e: JsonValue) => `at ${path}: expected ${show(e, 300)}, actual ${show(a, 300)}`;
  if (Array.isArray(actual) && Array.isArray(expected)) {
    for (let i = 0; i < Math.max(actual.length, expected.length); i++) {
      if (i >= actual.length || i >= expected.length) {
        return `at ${path}: expected ${expected.length} items, actual ${actual.length}`;
      }
      if (!jsonEqual(actual[i] as JsonValue, expected[i] as JsonValue)) {
        return firstDifference(actual[i] as JsonValue, expected[i] as JsonValue, `${path}[${i}]`);
      }
    }
  }
  const isObject = (v: JsonValue): v is { [key: string]: JsonValue } =>
    v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObject(actual) && isObject(expected)) {
    for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
      const [a, e] = [Object.hasOwn(actual, key), Object.hasOwn(expected, key)];
      if (!a || !e) return `at ${path}.${key}: ${a ? 'not expected' : 'missing'}`;
      if (!jsonEqual(actual[key] as JsonValue, expected[key] as JsonValue)) {
        return firstDifference(actual[key] as JsonValue, expected[key] as JsonValue, `${path}.${key}`);
      }
    }
  }
  return both(actual, expected);
}

/** Fails unless `value` is a valid `Date` object, optionally at exactly `expected`. */
export function expectDate(value: unknown, what: string, expected?: Date): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new ConformanceError(`${what} must be a Date object, got ${show(value)} (${typeof value})`);
  }
  if (expected && value.getTime() !== expected.getTime()) {
    throw new ConformanceError(
      `${what}: expected ${expected.toISOString()}, got ${value.toISOString()} (millisecond precision)`,
    );
  }
}

/** The ids of a list of records, in order. */
export function idsOf(records: readonly { id: string }[]): string[] {
  return records.map((record) => record.id);
}

/** Fails unless `error` looks like a `MemoryError` with one of `codes`. */
export function expectMemoryError(error: unknown, codes: readonly MemoryErrorCode[], what: string): void {
  if (!isMemoryErrorLike(error)) {
    throw new ConformanceError(
      `${what}: expected a MemoryError (${codes.join(' or ')}), got ${describeError(error)}`,
    );
  }
  if (!codes.includes(error.code)) {
    throw new ConformanceError(
      `${what}: expected code ${codes.join(' or ')}, got ${error.code} (${error.message})`,
    );
  }
}

/** Awaits `promise` and fails unless it rejects with a `MemoryError` of one of `codes`. */
export async function expectRejects(
  promise: Promise<unknown> | (() => Promise<unknown>),
  codes: readonly MemoryErrorCode[],
  what: string,
): Promise<void> {
  let value: unknown;
  try {
    value = await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    expectMemoryError(error, codes, what);
    return;
  }
  throw new ConformanceError(
    `${what}: expected a MemoryError (${codes.join(' or ')}), but it resolved with ${show(value, 300)}`,
  );
}

/**
 * True for a `MemoryError`. Matched by name and code rather than `instanceof`, so an adapter
 * that resolves a second copy of `@engram/core` is judged on what it throws, not on how it
 * was bundled.
 */
export function isMemoryErrorLike(error: unknown): error is Error & { code: MemoryErrorCode } {
  return (
    error instanceof Error &&
    error.name === 'MemoryError' &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}

/** A one-line description of any thrown value. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${code === undefined ? '' : ` ${String(code)}`}: ${error.message}`;
  }
  return show(error, 200);
}
