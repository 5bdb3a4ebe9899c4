import { MemoryError } from '../errors.ts';
import type { JsonObject, JsonValue } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';
import { resolveRef, validate } from './json-schema-validate.ts';

/**
 * A small JSON Schema validator for working-memory documents. It interprets the schema
 * directly (no code generation, no `eval` or `new Function`), so it runs on edge runtimes.
 *
 * Supported keywords:
 * - any type: `type` (a name or an array of names, so `["string", "null"]` is nullable),
 *   `enum`, `const`, `anyOf`, `oneOf`, `allOf`, `not`, local `$ref` (`#`, `#/$defs/…`,
 *   `#/definitions/…`), and the OpenAPI-style `nullable: true`;
 * - objects: `properties`, `required`, `additionalProperties` (boolean or schema),
 *   `patternProperties`, `propertyNames`, `minProperties`, `maxProperties`;
 * - arrays: `items` (a schema, or an array of schemas as in draft-07 tuples), `prefixItems`,
 *   `additionalItems`, `contains`, `minItems`, `maxItems`, `uniqueItems`;
 * - strings: `minLength`, `maxLength` (counted in code points), `pattern`;
 * - numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (number, or the
 *   draft-04 boolean form), `multipleOf`.
 *
 * Annotations (`title`, `description`, `default`, `examples`, `format`, `$schema`, `$id`,
 * `$comment`, `deprecated`, `readOnly`, `writeOnly`, `x-…`) are accepted and ignored. Any
 * other keyword is rejected when the schema is compiled, so a schema never validates less
 * than its author expects.
 */

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);

const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'format',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentMediaType',
  'contentEncoding',
  '$defs',
  'definitions',
]);

const KEYWORDS = new Set([
  'type',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  '$ref',
  'nullable',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'minItems',
  'maxItems',
  'uniqueItems',
  'contains',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
]);

/** A JSON Schema document (draft-07 / 2020-12 subset) as a plain object. */
export type JsonSchema = JsonObject;

/** Checks a value against a compiled schema; returns the issues (empty when valid). */
export type JsonSchemaValidator = (value: unknown) => string[];

/**
 * Checks `schema` once (every keyword known, every sub-schema well-formed, every `$ref`
 * resolvable, every `pattern` a valid regular expression) and returns a validator.
 * Throws `INVALID_ARGUMENT` describing the first problem.
 */
export function compileJsonSchema(schema: unknown): JsonSchemaValidator {
  if (!isPlainObject(schema) && typeof schema !== 'boolean') {
    throw bad('#', 'a JSON Schema must be an object or a boolean');
  }
  const root = schema as JsonValue;
  const patterns = new Map<string, RegExp>();
  check(root, '#', root, patterns);
  return (value) => {
    const issues: string[] = [];
    validate(root, value, '', { root, patterns, issues, depth: 0 });
    return issues;
  };
}

function bad(at: string, message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `invalid JSON Schema at ${at}: ${message}`);
}

function check(schema: JsonValue, at: string, root: JsonValue, patterns: Map<string, RegExp>): void {
  if (typeof schema === 'boolean') return;
  if (!isPlainObject(schema)) throw bad(at, 'a sub-schema must be an object or a boolean');
  const s = schema as JsonObject;
  for (const key of Object.keys(s)) {
    if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key) && !key.startsWith('x-')) {
      throw bad(at, `the keyword ${JSON.stringify(key)} is not supported`);
    }
  }
  const sub = (value: JsonValue | undefined, path: string) => {
    if (value !== undefined) check(value, path, root, patterns);
  };
  const subList = (value: JsonValue | undefined, key: string) => {
    if (value === undefined) return;
    if (!Array.isArray(value) || value.length === 0) throw bad(at, `${key} must be a non-empty array`);
    value.forEach((item, i) => {
      sub(item, `${at}/${key}/${i}`);
    });
  };
  const subMap = (value: JsonValue | undefined, key: string) => {
    if (value === undefined) return;
    if (!isPlainObject(value)) throw bad(at, `${key} must be an object`);
    for (const [name, item] of Object.entries(value)) sub(item as JsonValue, `${at}/${key}/${name}`);
  };
  const count = (key: string) => {
    const value = s[key];
    if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 0)) {
      throw bad(at, `${key} must be a non-negative integer`);
    }
  };
  const number = (key: string) => {
    const value = s[key];
    if (value !== undefined && typeof value !== 'number') throw bad(at, `${key} must be a number`);
  };

  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (types.length === 0 || !types.every((t) => typeof t === 'string' && TYPES.has(t))) {
      throw bad(at, `type must be one of ${[...TYPES].join(', ')}, or an array of them`);
    }
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) throw bad(at, 'enum must be an array');
  if (s.nullable !== undefined && typeof s.nullable !== 'boolean')
    throw bad(at, 'nullable must be a boolean');
  subList(s.anyOf, 'anyOf');
  subList(s.oneOf, 'oneOf');
  subList(s.allOf, 'allOf');
  sub(s.not, `${at}/not`);
  if (s.$ref !== undefined) {
    if (typeof s.$ref !== 'string') throw bad(at, '$ref must be a string');
    const target = resolveRef(root, s.$ref, at);
    if (typeof target !== 'boolean' && !isPlainObject(target)) {
      throw bad(at, `$ref ${JSON.stringify(s.$ref)} does not point at a schema`);
    }
  }
  subMap(s.$defs, '$defs');
  subMap(s.definitions, 'definitions');
  subMap(s.properties, 'properties');
  subMap(s.patternProperties, 'patternProperties');
  sub(s.propertyNames, `${at}/propertyNames`);
  sub(s.contains, `${at}/contains`);
  if (isPlainObject(s.patternProperties)) {
    for (const source of Object.keys(s.patternProperties)) compilePattern(source, at, patterns);
  }
  if (
    s.required !== undefined &&
    (!Array.isArray(s.required) || !s.required.every((name) => typeof name === 'string'))
  ) {
    throw bad(at, 'required must be an array of strings');
  }
  if (typeof s.additionalProperties !== 'boolean') sub(s.additionalProperties, `${at}/additionalProperties`);
  count('minProperties');
  count('maxProperties');
  if (Array.isArray(s.items)) subList(s.items, 'items');
  else if (typeof s.items !== 'boolean') sub(s.items, `${at}/items`);
  subList(s.prefixItems, 'prefixItems');
  if (typeof s.additionalItems !== 'boolean') sub(s.additionalItems, `${at}/additionalItems`);
  count('minItems');
  count('maxItems');
  if (s.uniqueItems !== undefined && typeof s.uniqueItems !== 'boolean') {
    throw bad(at, 'uniqueItems must be a boolean');
  }
  count('minLength');
  count('maxLength');
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== 'string') throw bad(at, 'pattern must be a string');
    compilePattern(s.pattern, at, patterns);
  }
  number('minimum');
  number('maximum');
  for (const key of ['exclusiveMinimum', 'exclusiveMaximum']) {
    const value = s[key];
    if (value !== undefined && typeof value !== 'number' && typeof value !== 'boolean') {
      throw bad(at, `${key} must be a number (or a boolean, draft-04)`);
    }
  }
  if (s.multipleOf !== undefined && (typeof s.multipleOf !== 'number' || s.multipleOf <= 0)) {
    throw bad(at, 'multipleOf must be a number greater than 0');
  }
}

function compilePattern(source: string, at: string, patterns: Map<string, RegExp>): void {
  if (patterns.has(source)) return;
  try {
    patterns.set(source, new RegExp(source, 'u'));
  } catch (error) {
    throw new MemoryError('INVALID_ARGUMENT', `invalid JSON Schema at ${at}: bad pattern ${source}`, {
      cause: error,
    });
  }
}
