import { dereference, type OutputUnit, type Schema, Validator, validate } from '@cfworker/json-schema';
import { MemoryError } from '../errors.ts';
import type { JsonObject, JsonValue } from '../storage/records.ts';
import { isPlainObject, isStorableJson } from '../storage/validate.ts';
import { describeIssues, FALSE_MARK, nonJsonIssue, refusal } from './json-schema-issues.ts';
import { META_SCHEMA } from './json-schema-meta.ts';

/**
 * Validation of working-memory documents against a plain JSON Schema, by
 * `@cfworker/json-schema` (it interprets the schema: no code generation, no `eval` or
 * `new Function`, so it runs on edge runtimes).
 *
 * A schema is checked once against `META_SCHEMA` (every keyword known and well-formed, every
 * `pattern` a valid regular expression), every `$ref` must resolve inside the schema (remote
 * references are never fetched), then the forms of every draft are read as one: draft-04
 * boolean `exclusiveMinimum`/`exclusiveMaximum`, draft-07 `items` arrays with
 * `additionalItems`, `definitions` and `dependencies` next to 2020-12 `prefixItems`, `$defs`,
 * `dependentRequired` and `dependentSchemas`. Keywords beside `$ref` apply in every draft.
 * `nullable: true` (OpenAPI) lets `null` through every other keyword of its schema. `format`
 * is an annotation, as in draft 2020-12.
 */

/** A JSON Schema document (draft-04, -07, 2019-09 or 2020-12) as a plain object. */
export type JsonSchema = JsonObject;

/** Checks a value against a compiled schema; returns the issues (empty when valid). */
export type JsonSchemaValidator = (value: unknown) => string[];

/** Sub-schema positions: one schema, a list of schemas, or a map of named schemas. */
const ONE = [
  'not',
  'if',
  'then',
  'else',
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'additionalItems',
  'unevaluatedItems',
  'contains',
];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

/** Kept at a `nullable` schema's node so that references into them still resolve. */
const NODE_KEYS = ['$id', '$anchor', '$defs', 'definitions', '$schema'];

const meta = new Validator(META_SCHEMA as Schema, '2020-12', true);

/**
 * Checks `schema` once (see above) and returns a validator whose issues read
 * `<path>: <reason>` (`prefs.lang: expected string, got integer`).
 * Throws `INVALID_ARGUMENT` describing the first problem.
 */
export function compileJsonSchema(schema: unknown): JsonSchemaValidator {
  if (!isPlainObject(schema) && typeof schema !== 'boolean') {
    throw bad('#', 'a JSON Schema must be an object or a boolean');
  }
  if (!isStorableJson(schema, 0)) throw bad('#', 'a JSON Schema must hold only JSON values');
  const checked = meta.validate(schema);
  if (!checked.valid) {
    const { at, message } = refusal(checked.errors);
    throw bad(at, message);
  }
  checkRefs(copy(schema as JsonValue), (ref) => `$ref ${JSON.stringify(ref)} points nowhere`);
  const root = prepare(copy(schema as JsonValue));
  const lookup = checkRefs(
    root,
    (ref) => `$ref ${JSON.stringify(ref)} points inside a schema with nullable: true, which is not supported`,
  );
  return (value) => {
    const nonJson = nonJsonIssue(value);
    if (nonJson !== undefined) return [nonJson];
    let errors: OutputUnit[];
    try {
      const result = validate(value, root as Schema, '2020-12', lookup, false);
      if (result.valid) return [];
      errors = result.errors;
    } catch (error) {
      if (error instanceof RangeError) return ['the document: schema recursion is too deep'];
      throw error;
    }
    return describeIssues(errors, value, root, lookup);
  };
}

function bad(at: string, message: string, cause?: unknown): MemoryError {
  return new MemoryError(
    'INVALID_ARGUMENT',
    `invalid JSON Schema at ${at}: ${message}`,
    cause === undefined ? undefined : { cause },
  );
}

function copy(schema: JsonValue): JsonValue {
  return JSON.parse(JSON.stringify(schema)) as JsonValue;
}

/** Every sub-schema of a schema by its URI, as the validator resolves `$ref`. */
type Lookup = Record<string, Schema | boolean>;

/**
 * Indexes every sub-schema by URI (marking each `$ref` with the URI it resolves to) and throws
 * `INVALID_ARGUMENT` unless every `$ref` resolves inside the schema.
 */
function checkRefs(schema: JsonValue, dangling: (ref: string) => string): Lookup {
  let lookup: Lookup;
  try {
    lookup = dereference(schema as Schema);
  } catch (error) {
    throw bad('#', error instanceof Error ? error.message : String(error), error);
  }
  for (const node of Object.values(lookup)) {
    if (typeof node !== 'object' || typeof node.$ref !== 'string') continue;
    const at = `#${String(node.__absolute_uri__).split('#')[1] ?? ''}`;
    if (lookup[node.__absolute_ref__ as string] !== undefined) continue;
    if (!node.$ref.startsWith('#')) {
      throw bad(
        at,
        `only references inside the schema resolve (remote $ref is not fetched), got ${JSON.stringify(node.$ref)}`,
      );
    }
    throw bad(at, dangling(node.$ref));
  }
  return lookup;
}

/**
 * The schema as the validator reads it, in the 2020-12 forms: `false` becomes a marked
 * `{ not: {} }` (so an issue can say where it came from), draft-04 boolean exclusive bounds
 * become numbers, `format` is dropped, and a `nullable: true` schema becomes
 * `{ if: { type: "null" }, else: <its keywords> }`.
 */
function prepare(schema: JsonValue): JsonValue {
  if (schema === false) return { not: {}, [FALSE_MARK]: true };
  if (!isPlainObject(schema)) return schema;
  const s = schema as JsonObject;
  for (const key of ONE) if (s[key] !== undefined) s[key] = prepare(s[key]);
  if (s.items !== undefined) s.items = Array.isArray(s.items) ? s.items.map(prepare) : prepare(s.items);
  for (const key of LIST) if (Array.isArray(s[key])) s[key] = s[key].map(prepare);
  for (const key of [...MAP, 'dependencies']) {
    const entries = s[key];
    if (!isPlainObject(entries)) continue;
    for (const [name, item] of Object.entries(entries)) {
      if (key !== 'dependencies' || !Array.isArray(item)) (entries as JsonObject)[name] = prepare(item);
    }
  }
  delete s.format;
  boundsOfDraft04(s, 'minimum', 'exclusiveMinimum');
  boundsOfDraft04(s, 'maximum', 'exclusiveMaximum');
  if (s.nullable === undefined) return s;
  const nullable = s.nullable === true;
  delete s.nullable;
  if (!nullable) return s;
  const node: JsonObject = {};
  for (const key of NODE_KEYS) {
    if (s[key] !== undefined) node[key] = s[key] as JsonValue;
    delete s[key];
  }
  return { ...node, if: { type: 'null' }, else: s };
}

/** Draft-04 `{ minimum: 1, exclusiveMinimum: true }` is 2020-12 `{ exclusiveMinimum: 1 }`. */
function boundsOfDraft04(s: JsonObject, bound: string, exclusive: string): void {
  if (typeof s[exclusive] !== 'boolean') return;
  if (s[exclusive] === true && typeof s[bound] === 'number') {
    s[exclusive] = s[bound] as number;
    delete s[bound];
  } else {
    delete s[exclusive];
  }
}
