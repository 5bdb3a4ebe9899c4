import { MemoryError } from '../errors.ts';
import { jsonEqual } from '../storage/helpers.ts';
import type { JsonObject, JsonValue } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';

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

interface Context {
  root: JsonValue;
  patterns: Map<string, RegExp>;
  issues: string[];
  depth: number;
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

function resolveRef(root: JsonValue, ref: string, at: string): JsonValue {
  if (!ref.startsWith('#')) throw bad(at, `only local $ref ("#/…") is supported, got ${JSON.stringify(ref)}`);
  const pointer = ref.slice(1);
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) throw bad(at, `$ref ${JSON.stringify(ref)} is not a JSON Pointer`);
  let node: JsonValue | undefined = root;
  for (const raw of pointer.slice(1).split('/')) {
    const token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node) && /^\d+$/.test(token)) node = node[Number(token)];
    else if (isPlainObject(node) && Object.hasOwn(node, token)) node = (node as JsonObject)[token];
    else node = undefined;
    if (node === undefined) throw bad(at, `$ref ${JSON.stringify(ref)} points nowhere`);
  }
  return node;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (isPlainObject(value)) return 'object';
  return typeof value === 'object' ? 'a non-JSON object' : typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === 'number' && actual === 'integer');
}

function where(path: string): string {
  return path === '' ? 'the document' : path;
}

function child(path: string, key: string | number): string {
  return typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
}

function validate(schema: JsonValue, value: unknown, path: string, ctx: Context): void {
  if (ctx.depth > 500) {
    ctx.issues.push(`${where(path)}: schema recursion is too deep`);
    return;
  }
  if (schema === true) return;
  if (schema === false) {
    ctx.issues.push(`${where(path)}: no value is allowed here`);
    return;
  }
  const s = schema as JsonObject;
  const issue = (message: string) => ctx.issues.push(`${where(path)}: ${message}`);
  const nested = (sub: JsonValue, v: unknown, p: string) =>
    validate(sub, v, p, { ...ctx, depth: ctx.depth + 1 });
  const passes = (sub: JsonValue, v: unknown) => {
    const inner: Context = { ...ctx, issues: [], depth: ctx.depth + 1 };
    validate(sub, v, path, inner);
    return inner.issues.length === 0;
  };

  if (value === null && s.nullable === true) return;

  if (s.$ref !== undefined) nested(resolveRef(ctx.root, s.$ref as string, '#'), value, path);

  if (s.type !== undefined) {
    const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
    if (!types.some((t) => matchesType(value, t))) {
      issue(`expected ${types.join(' or ')}, got ${typeOf(value)}`);
      return;
    }
  }
  if (Array.isArray(s.enum) && !s.enum.some((option) => jsonEqual(option, value as JsonValue))) {
    issue(`must be one of ${s.enum.map((option) => JSON.stringify(option)).join(', ')}`);
  }
  if (s.const !== undefined && !jsonEqual(s.const, value as JsonValue)) {
    issue(`must equal ${JSON.stringify(s.const)}`);
  }
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) nested(sub, value, path);
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => passes(sub, value))) {
    issue('matches none of the anyOf alternatives');
  }
  if (Array.isArray(s.oneOf)) {
    const matched = s.oneOf.filter((sub) => passes(sub, value)).length;
    if (matched !== 1) issue(`must match exactly one oneOf alternative, matched ${matched}`);
  }
  if (s.not !== undefined && passes(s.not, value)) issue('matches a schema it must not match');

  if (isPlainObject(value)) validateObject(s, value, path, ctx, issue, nested);
  else if (Array.isArray(value)) validateArray(s, value, path, issue, nested, passes);
  else if (typeof value === 'string') validateString(s, value, ctx, issue);
  else if (typeof value === 'number') validateNumber(s, value, issue);
}

type Issue = (message: string) => void;
type Nested = (schema: JsonValue, value: unknown, path: string) => void;

function validateObject(
  s: JsonObject,
  value: Record<string, unknown>,
  path: string,
  ctx: Context,
  issue: Issue,
  nested: Nested,
): void {
  const keys = Object.keys(value);
  const properties = isPlainObject(s.properties) ? (s.properties as JsonObject) : {};
  const patternProperties = isPlainObject(s.patternProperties) ? (s.patternProperties as JsonObject) : {};
  if (Array.isArray(s.required)) {
    for (const name of s.required as string[]) {
      if (!Object.hasOwn(value, name)) issue(`missing required property ${JSON.stringify(name)}`);
    }
  }
  for (const key of keys) {
    if (s.propertyNames !== undefined) nested(s.propertyNames, key, `${child(path, key)} (name)`);
    const item = value[key];
    let known = false;
    if (Object.hasOwn(properties, key)) {
      known = true;
      nested(properties[key] as JsonValue, item, child(path, key));
    }
    for (const [source, sub] of Object.entries(patternProperties)) {
      if (ctx.patterns.get(source)?.test(key)) {
        known = true;
        nested(sub, item, child(path, key));
      }
    }
    if (!known && s.additionalProperties !== undefined) {
      if (s.additionalProperties === false) issue(`unexpected property ${JSON.stringify(key)}`);
      else nested(s.additionalProperties, item, child(path, key));
    }
  }
  if (typeof s.minProperties === 'number' && keys.length < s.minProperties) {
    issue(`must have at least ${s.minProperties} properties`);
  }
  if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) {
    issue(`must have at most ${s.maxProperties} properties`);
  }
}

function validateArray(
  s: JsonObject,
  value: unknown[],
  path: string,
  issue: Issue,
  nested: Nested,
  passes: (schema: JsonValue, value: unknown) => boolean,
): void {
  const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : undefined;
  const rest = tuple === undefined ? s.items : Array.isArray(s.items) ? s.additionalItems : s.items;
  value.forEach((item, i) => {
    const sub = tuple !== undefined && i < tuple.length ? tuple[i] : rest;
    if (sub === undefined) return;
    if (sub === false) issue(`has too many items (at most ${tuple?.length ?? 0})`);
    else nested(sub, item, child(path, i));
  });
  if (typeof s.minItems === 'number' && value.length < s.minItems)
    issue(`must have at least ${s.minItems} items`);
  if (typeof s.maxItems === 'number' && value.length > s.maxItems)
    issue(`must have at most ${s.maxItems} items`);
  if (s.contains !== undefined && !value.some((item) => passes(s.contains as JsonValue, item))) {
    issue('must contain at least one matching item');
  }
  if (s.uniqueItems === true) {
    const duplicate = value.some((a, i) =>
      value.slice(i + 1).some((b) => jsonEqual(a as JsonValue, b as JsonValue)),
    );
    if (duplicate) issue('items must be unique');
  }
}

function validateString(s: JsonObject, value: string, ctx: Context, issue: Issue): void {
  const length = [...value].length;
  if (typeof s.minLength === 'number' && length < s.minLength) {
    issue(`must be at least ${s.minLength} characters long`);
  }
  if (typeof s.maxLength === 'number' && length > s.maxLength) {
    issue(`must be at most ${s.maxLength} characters long`);
  }
  if (typeof s.pattern === 'string' && !ctx.patterns.get(s.pattern)?.test(value)) {
    issue(`must match the pattern ${s.pattern}`);
  }
}

function validateNumber(s: JsonObject, value: number, issue: Issue): void {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf } = s;
  if (typeof minimum === 'number') {
    if (exclusiveMinimum === true ? value <= minimum : value < minimum) {
      issue(`must be ${exclusiveMinimum === true ? 'greater than' : 'at least'} ${minimum}`);
    }
  }
  if (typeof maximum === 'number') {
    if (exclusiveMaximum === true ? value >= maximum : value > maximum) {
      issue(`must be ${exclusiveMaximum === true ? 'less than' : 'at most'} ${maximum}`);
    }
  }
  if (typeof exclusiveMinimum === 'number' && value <= exclusiveMinimum) {
    issue(`must be greater than ${exclusiveMinimum}`);
  }
  if (typeof exclusiveMaximum === 'number' && value >= exclusiveMaximum) {
    issue(`must be less than ${exclusiveMaximum}`);
  }
  if (typeof multipleOf === 'number') {
    const quotient = value / multipleOf;
    if (Math.abs(quotient - Math.round(quotient)) > 1e-9 * Math.max(1, Math.abs(quotient))) {
      issue(`must be a multiple of ${multipleOf}`);
    }
  }
}
