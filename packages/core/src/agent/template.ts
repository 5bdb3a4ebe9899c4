import type { JsonValue } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';

const EMPTY_BY_TYPE: Record<string, JsonValue> = {
  string: '',
  number: 0,
  integer: 0,
  boolean: false,
  array: [],
  null: '',
};

/**
 * An empty value shaped like `schema`, shown to the model so it knows the fields it may fill:
 * objects recurse into their properties, arrays are `[]`, strings `''`, numbers `0`, booleans
 * `false`. Accepts a JSON Schema or a plain field map (`{ name: { type: 'string' } }`). Never
 * returns `null`.
 */
export function emptyShape(schema: unknown, depth = 0): JsonValue {
  if (depth > 32 || !isPlainObject(schema)) return '';
  const branches = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(branches)) {
    const first = branches.find((b) => isPlainObject(b) && b.type !== 'null');
    return emptyShape(first, depth + 1);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (isPlainObject(schema.properties)) return shapeOf(schema.properties, depth);
  if (typeof type === 'string') return type === 'object' ? {} : (EMPTY_BY_TYPE[type] ?? '');
  // A field map: every value describes one field.
  return shapeOf(schema, depth);
}

function shapeOf(fields: Record<string, unknown>, depth: number): JsonValue {
  const out: { [key: string]: JsonValue } = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key.startsWith('$')) continue;
    Object.defineProperty(out, key, { value: emptyShape(value, depth + 1), enumerable: true });
  }
  return out;
}
