import { MemoryError } from '../errors.ts';
import { jsonEqual } from '../storage/helpers.ts';
import type { JsonObject, JsonValue } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';

/** State shared while validating one value against a checked schema. */
export interface ValidationContext {
  root: JsonValue;
  patterns: Map<string, RegExp>;
  issues: string[];
  depth: number;
}

/**
 * Resolves a local `$ref` (`#`, `#/$defs/…`, `#/definitions/…`, any JSON Pointer into the root).
 * Throws `INVALID_ARGUMENT` for remote or dangling references.
 */
export function resolveRef(root: JsonValue, ref: string, at: string): JsonValue {
  if (!ref.startsWith('#'))
    throw badRef(at, `only local $ref ("#/…") is supported, got ${JSON.stringify(ref)}`);
  const pointer = ref.slice(1);
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) throw badRef(at, `$ref ${JSON.stringify(ref)} is not a JSON Pointer`);
  let node: JsonValue | undefined = root;
  for (const raw of pointer.slice(1).split('/')) {
    let token: string;
    try {
      token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      throw badRef(at, `$ref ${JSON.stringify(ref)} is not a valid JSON Pointer`);
    }
    if (Array.isArray(node) && /^\d+$/.test(token)) node = node[Number(token)];
    else if (isPlainObject(node) && Object.hasOwn(node, token)) node = (node as JsonObject)[token];
    else node = undefined;
    if (node === undefined) throw badRef(at, `$ref ${JSON.stringify(ref)} points nowhere`);
  }
  return node;
}

function badRef(at: string, message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `invalid JSON Schema at ${at}: ${message}`);
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

/** Pushes every issue of `value` against `schema` (already checked) onto `ctx.issues`. */
export function validate(schema: JsonValue, value: unknown, path: string, ctx: ValidationContext): void {
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
    const inner: ValidationContext = { ...ctx, issues: [], depth: ctx.depth + 1 };
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
  ctx: ValidationContext,
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

function validateString(s: JsonObject, value: string, ctx: ValidationContext, issue: Issue): void {
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
