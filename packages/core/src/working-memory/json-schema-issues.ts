import type { OutputUnit, Schema } from '@cfworker/json-schema';
import type { JsonObject, JsonValue } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';
import { expectedShape } from './json-schema-meta.ts';

/**
 * The wording of JSON Schema issues, in one place: `<path>: <reason>` for a document that fails
 * its schema (`prefs.lang: expected string, got integer`, `tags[0]: must match the pattern
 * ^[a-z]+$`, `the document: missing required property "name"`), and the reason a schema itself
 * is refused. The validator's output units are read here; nothing else formats them.
 */

/** Marks the `{ not: {} }` that stands for a `false` schema, so its issue can say what it forbids. */
export const FALSE_MARK = 'x-engram-false';

/** Output units that only say "a sub-schema had errors"; the units after them say which. */
const WRAPPERS = new Set([
  '$ref',
  '$recursiveRef',
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  'propertyNames',
  'allOf',
  'if',
  'dependentSchemas',
  'false',
]);

/** Inside these, a failing sub-schema is not an issue of the document (only the verdict is). */
const SOFT = new Set(['anyOf', 'oneOf', 'not', 'contains', 'if']);
const NAMED = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'dependencies',
]);
const LISTED = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);

/** Where an output unit's keyword sits in the (prepared) schema. */
interface Place {
  /** The schema holding the keyword. */
  node: JsonObject;
  /** The schema holding `node`, and the keyword `node` sits under there. */
  parent: JsonObject | undefined;
  under: string;
  /** `node` is a single sub-schema of `under` (not one of a list or a map). */
  single: boolean;
  soft: boolean;
  /** The value is a property name (under `propertyNames`). */
  names: boolean;
}

/** The issue for a value that is not JSON (only direct callers can pass one), else undefined. */
export function nonJsonIssue(value: unknown, path = '', depth = 0): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return undefined;
  if (depth > 2_000) return `${where(path)}: is nested too deeply (over 2000 levels)`;
  const entries: [string, unknown][] | undefined = Array.isArray(value)
    ? value.map((item, i) => [child(path, i), item])
    : isPlainObject(value)
      ? Object.entries(value).map(([key, item]) => [child(path, key), item])
      : undefined;
  if (entries === undefined) {
    return `${where(path)}: expected a JSON value, got ${typeof value === 'number' ? value : typeOf(value)}`;
  }
  for (const [at, item] of entries) {
    const found = nonJsonIssue(item, at, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The document's issues, one line each, from the validator's output units. */
export function describeIssues(
  errors: OutputUnit[],
  value: unknown,
  root: JsonValue,
  lookup: Record<string, Schema | boolean>,
): string[] {
  const issues = new Set<string>();
  for (const error of errors) {
    if (WRAPPERS.has(error.keyword)) continue;
    const place = locate(root, lookup, error.keywordLocation);
    if (place === undefined || place.soft) continue;
    for (const issue of reasons(error, place, instanceAt(value, error.instanceLocation, place.names))) {
      issues.add(issue);
    }
  }
  // the verdict is the validator's: an invalid document always has at least one issue
  const first = errors[0];
  if (issues.size === 0 && first !== undefined) {
    issues.add(`${where(instanceAt(value, first.instanceLocation, false).path)}: ${first.error}`);
  }
  return [...issues];
}

interface Instance {
  path: string;
  value: unknown;
  /** The path of the value's container and the value's key there. */
  parentPath: string;
  key: string;
}

function reasons(error: OutputUnit, at: Place, instance: Instance): string[] {
  const { node } = at;
  const { value } = instance;
  const here = (message: string) => [`${where(instance.path)}: ${message}`];
  switch (error.keyword) {
    case 'type': {
      const types = (Array.isArray(node.type) ? node.type : [node.type]) as string[];
      return here(`expected ${types.join(' or ')}, got ${typeOf(value)}`);
    }
    case 'enum':
      return here(`must be one of ${(node.enum as JsonValue[]).map((o) => JSON.stringify(o)).join(', ')}`);
    case 'const':
      return here(`must equal ${JSON.stringify(node.const)}`);
    case 'anyOf':
      return here('matches none of the anyOf alternatives');
    case 'oneOf':
      return here(
        `must match exactly one oneOf alternative, matched ${/\((\d+) matches\)/.exec(error.error)?.[1] ?? 'another number'}`,
      );
    case 'not':
      return node[FALSE_MARK] === true ? forbidden(at, instance) : here('matches a schema it must not match');
    case 'required':
      return missing(value, node.required as string[]).map(
        (name) => `${where(instance.path)}: missing required property ${JSON.stringify(name)}`,
      );
    case 'dependentRequired':
    case 'dependencies':
      return dependants(
        value,
        (error.keyword === 'dependencies' ? node.dependencies : node.dependentRequired) as JsonObject,
      ).map(
        ([name, needed]) =>
          `${where(instance.path)}: has property ${JSON.stringify(name)}, so it must have ${JSON.stringify(needed)}`,
      );
    case 'minProperties':
      return here(`must have at least ${node.minProperties} properties`);
    case 'maxProperties':
      return here(`must have at most ${node.maxProperties} properties`);
    case 'minItems':
      return here(`must have at least ${node.minItems} items`);
    case 'maxItems':
      return here(`must have at most ${node.maxItems} items`);
    case 'uniqueItems':
      return here('items must be unique');
    case 'contains':
      return here('must contain at least one matching item');
    case 'minContains':
      return here(`must contain at least ${node.minContains} matching items`);
    case 'maxContains':
      return here(`must contain at most ${node.maxContains} matching items`);
    case 'minLength':
      return here(`must be at least ${node.minLength} characters long`);
    case 'maxLength':
      return here(`must be at most ${node.maxLength} characters long`);
    case 'pattern':
      return here(`must match the pattern ${node.pattern}`);
    case 'minimum':
      return here(`must be at least ${node.minimum}`);
    case 'maximum':
      return here(`must be at most ${node.maximum}`);
    case 'exclusiveMinimum':
      return here(`must be greater than ${node.exclusiveMinimum}`);
    case 'exclusiveMaximum':
      return here(`must be less than ${node.exclusiveMaximum}`);
    case 'multipleOf':
      return here(`must be a multiple of ${node.multipleOf}`);
    default:
      return here(error.error);
  }
}

/** What a `false` schema forbids, said from where it sits. */
function forbidden(at: Place, instance: Instance): string[] {
  const parentPath = where(instance.parentPath);
  if (at.single && (at.under === 'additionalProperties' || at.under === 'unevaluatedProperties')) {
    return [`${parentPath}: unexpected property ${JSON.stringify(instance.key)}`];
  }
  if (at.single && ['items', 'additionalItems', 'unevaluatedItems'].includes(at.under)) {
    const tuple = at.parent?.prefixItems ?? at.parent?.items;
    return [`${parentPath}: has too many items (at most ${Array.isArray(tuple) ? tuple.length : 0})`];
  }
  return [`${where(instance.path)}: no value is allowed here`];
}

function missing(value: unknown, names: string[]): string[] {
  return isPlainObject(value) ? names.filter((name) => !Object.hasOwn(value, name)) : [];
}

function dependants(value: unknown, rules: JsonObject): [string, string][] {
  if (!isPlainObject(value)) return [];
  return Object.entries(rules).flatMap(([name, needed]) =>
    Object.hasOwn(value, name) && Array.isArray(needed)
      ? missing(value, needed as string[]).map((other): [string, string] => [name, other])
      : [],
  );
}

/**
 * Follows a keyword location (the path the validator took, through `$ref`s) to the schema that
 * holds its last keyword.
 */
function locate(
  root: JsonValue,
  lookup: Record<string, Schema | boolean>,
  location: string,
): Place | undefined {
  const tokens = pointerTokens(location);
  let node = root as JsonObject;
  const place: Place = { node, parent: undefined, under: '', single: false, soft: false, names: false };
  let keyword: string | undefined;
  for (const token of tokens.slice(0, -1)) {
    if (!isPlainObject(node)) return undefined;
    if (keyword !== undefined) {
      place.parent = node;
      place.under = keyword;
      place.single = false;
      node = (node[keyword] as JsonObject)[token] as JsonObject;
      keyword = undefined;
      continue;
    }
    if (token === '$ref') {
      node = lookup[node.__absolute_ref__ as string] as JsonObject;
      continue;
    }
    if (SOFT.has(token)) place.soft = true;
    if (token === 'propertyNames') place.names = true;
    if (NAMED.has(token) || LISTED.has(token) || (token === 'items' && Array.isArray(node.items))) {
      keyword = token;
    } else {
      place.parent = node;
      place.under = token;
      place.single = true;
      node = node[token] as JsonObject;
    }
  }
  if (!isPlainObject(node)) return undefined;
  place.node = node;
  return place;
}

function instanceAt(value: unknown, location: string, names: boolean): Instance {
  let path = '';
  let parentPath = '';
  let key = '';
  let current = value;
  for (const token of pointerTokens(location)) {
    parentPath = path;
    key = token;
    if (Array.isArray(current)) {
      path = child(path, Number(token));
      current = current[Number(token)];
    } else {
      path = child(path, token);
      current = isPlainObject(current) ? current[token] : undefined;
    }
  }
  return names
    ? { path: `${path} (name)`, value: key, parentPath, key }
    : { path, value: current, parentPath, key };
}

/**
 * Why a schema is refused, from its check against the meta-schema (see `json-schema-meta.ts`):
 * where in the schema, and which keyword is unknown or malformed.
 */
export function refusal(errors: OutputUnit[]): { at: string; message: string } {
  let at = '#';
  for (const error of errors) {
    if (error.keyword === '$ref') at = error.instanceLocation;
    if (
      ['$ref', 'properties', 'additionalProperties', 'items', 'propertyNames', 'if'].includes(error.keyword)
    )
      continue;
    const location = error.keywordLocation;
    const tail = pointerTokens(`#${location.slice(location.lastIndexOf('/$ref') + '/$ref'.length)}`);
    const display = `#${pointerTokens(at)
      .map((t) => `/${t}`)
      .join('')}`;
    if (tail[0] === 'propertyNames') {
      const name = pointerTokens(error.instanceLocation).at(-1) ?? '';
      return { at: display, message: `the keyword ${JSON.stringify(name)} is not supported` };
    }
    if (tail[0] === 'properties' && tail[1] !== undefined) {
      return { at: display, message: `${tail[1]} must be ${expectedShape(tail[1])}` };
    }
    return { at: display, message: 'a sub-schema must be an object or a boolean' };
  }
  return { at, message: 'the schema is not valid' };
}

function pointerTokens(location: string): string[] {
  const pointer = location.startsWith('#') ? location.slice(1) : location;
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => {
      let token = raw;
      try {
        token = decodeURIComponent(raw);
      } catch {}
      return token.replaceAll('~1', '/').replaceAll('~0', '~');
    });
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (isPlainObject(value)) return 'object';
  return typeof value === 'object' ? 'a non-JSON object' : typeof value;
}

function where(path: string): string {
  return path === '' ? 'the document' : path;
}

function child(path: string, key: string | number): string {
  return typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
}
