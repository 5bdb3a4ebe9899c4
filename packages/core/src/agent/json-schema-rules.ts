import { MemoryError } from '../errors.ts';
import { isPlainObject } from '../storage/validate.ts';

/** A JSON Schema object (boolean schemas are not used in tool parameters). */
export type JsonSchemaObject = { [key: string]: unknown };

/**
 * The rules every tool `inputSchema` engram produces follows, so that the common model providers
 * (OpenAI, Anthropic, Google, Mistral, Bedrock) accept it. The schema stays valid JSON Schema
 * (draft 2020-12 and draft-07). It may accept more than the source schema does; the source
 * schema's own validator still checks every write.
 */
export const PROVIDER_SAFE_RULES: readonly string[] = [
  'The top level is an object schema: `type: "object"` with `properties`.',
  'Every `type` is one of string, number, integer, boolean, object, array, null (or a list of them); Python-style names such as "None" become "null", unknown names are rejected.',
  '`$ref` is resolved inline from `$defs`/`definitions`; no `$ref`, `$defs`, `definitions`, `$schema`, `$id`, `$anchor` or `$comment` is left. A recursive reference is cut to `{}` (any value) at its second appearance.',
  'Boolean subschemas become objects: `true` becomes `{}`, a `false` property is removed; `additionalProperties` stays a boolean or a schema.',
  'Tuples (`prefixItems`, or `items` as an array) become `items: { anyOf: [...] }`; `items` is always one schema.',
  '`oneOf` becomes `anyOf`; `allOf` of object schemas is merged into one object; `const` becomes a one-value `enum`; OpenAPI `nullable: true` becomes `anyOf` with `{ type: "null" }`.',
  'Only these keywords are kept: type, properties, required, additionalProperties, items, enum, anyOf, allOf, description, title, default, examples, format (well-known formats only), minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, pattern, minItems, maxItems, uniqueItems, minProperties, maxProperties. Others (patternProperties, propertyNames, if/then/else, not, dependent*, unevaluated*, vendor keys) are dropped.',
  '`required` lists only declared properties; `enum` is never empty; draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` become numbers.',
];

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const TYPE_ALIASES: Record<string, string> = {
  None: 'null',
  none: 'null',
  NoneType: 'null',
  nil: 'null',
  str: 'string',
  int: 'integer',
  float: 'number',
  bool: 'boolean',
  dict: 'object',
  list: 'array',
};
const FORMATS = new Set([
  'date-time',
  'date',
  'time',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uuid',
]);
const SCALAR_KEYS = [
  'description',
  'title',
  'default',
  'examples',
  'minimum',
  'maximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
] as const;

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `working memory schema: ${message}`);
}

interface Walk {
  root: JsonSchemaObject;
  /** `$ref`s being expanded on the current path, to cut recursion. */
  expanding: string[];
}

function resolveRef(ref: string, walk: Walk): unknown {
  if (ref === '#') return walk.root;
  if (!ref.startsWith('#/'))
    throw invalid(`only local $ref values are supported, got ${JSON.stringify(ref)}`);
  let node: unknown = walk.root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isPlainObject(node) || !(key in node)) throw invalid(`$ref ${JSON.stringify(ref)} does not resolve`);
    node = node[key];
  }
  return node;
}

function normalizeType(type: unknown, path: string): string | string[] | undefined {
  if (type === undefined) return undefined;
  const one = (t: unknown): string => {
    if (typeof t !== 'string') throw invalid(`${path}: type must be a string, got ${JSON.stringify(t)}`);
    const mapped = TYPE_ALIASES[t] ?? t;
    if (!TYPES.has(mapped)) throw invalid(`${path}: unknown type ${JSON.stringify(t)}`);
    return mapped;
  };
  if (Array.isArray(type)) {
    const list = [...new Set(type.map(one))];
    if (list.length === 0) throw invalid(`${path}: type must not be an empty list`);
    return list.length === 1 ? list[0] : list;
  }
  return one(type);
}

function withNull(schema: JsonSchemaObject): JsonSchemaObject {
  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf as JsonSchemaObject[];
    if (branches.some((b) => b.type === 'null')) return schema;
    return { ...schema, anyOf: [...branches, { type: 'null' }] };
  }
  if (schema.type === 'null') return schema;
  const { description, title, ...rest } = schema;
  const out: JsonSchemaObject = { anyOf: [rest, { type: 'null' }] };
  if (description !== undefined) out.description = description;
  if (title !== undefined) out.title = title;
  return out;
}

function mergeObjectBranches(branches: JsonSchemaObject[]): JsonSchemaObject | null {
  if (!branches.every((b) => b.type === 'object' || (b.type === undefined && isPlainObject(b.properties)))) {
    return null;
  }
  const properties: JsonSchemaObject = {};
  const required = new Set<string>();
  let additionalProperties: unknown;
  for (const branch of branches) {
    Object.assign(properties, branch.properties ?? {});
    for (const key of (branch.required as string[] | undefined) ?? []) required.add(key);
    if (branch.additionalProperties === false) additionalProperties = false;
  }
  const out: JsonSchemaObject = { type: 'object', properties };
  if (required.size > 0) out.required = [...required];
  if (additionalProperties === false) out.additionalProperties = false;
  return out;
}

function convert(node: unknown, walk: Walk, path: string): JsonSchemaObject | null {
  if (node === true) return {};
  if (node === false) return null;
  if (!isPlainObject(node)) throw invalid(`${path}: a schema must be an object or a boolean`);

  if (typeof node.$ref === 'string') {
    const ref = node.$ref;
    if (walk.expanding.includes(ref)) return {};
    walk.expanding.push(ref);
    try {
      const { $ref: _ignored, ...siblings } = node;
      const target = convert(resolveRef(ref, walk), walk, `${path}→${ref}`);
      if (target === null) return null;
      const extra = convert(siblings, walk, path) ?? {};
      return { ...target, ...extra };
    } finally {
      walk.expanding.pop();
    }
  }

  const out: JsonSchemaObject = {};
  const type = normalizeType(node.type, path);
  if (type !== undefined) out.type = type;

  for (const key of SCALAR_KEYS) if (node[key] !== undefined) out[key] = node[key];
  if (typeof node.format === 'string' && FORMATS.has(node.format)) out.format = node.format;

  for (const key of ['exclusiveMinimum', 'exclusiveMaximum'] as const) {
    const value = node[key];
    if (typeof value === 'number') out[key] = value;
    else if (value === true) {
      const bound = key === 'exclusiveMinimum' ? 'minimum' : 'maximum';
      if (typeof out[bound] === 'number') {
        out[key] = out[bound];
        delete out[bound];
      }
    }
  }

  if (node.const !== undefined) out.enum = [node.const];
  else if (node.enum !== undefined) {
    if (!Array.isArray(node.enum) || node.enum.length === 0)
      throw invalid(`${path}: enum must be a non-empty list`);
    out.enum = node.enum;
  }

  if (node.properties !== undefined) {
    if (!isPlainObject(node.properties)) throw invalid(`${path}: properties must be an object`);
    const properties: JsonSchemaObject = {};
    for (const [key, value] of Object.entries(node.properties)) {
      const converted = convert(value, walk, `${path}.${key}`);
      if (converted !== null) Object.defineProperty(properties, key, { value: converted, enumerable: true });
    }
    out.properties = properties;
    if (Array.isArray(node.required)) {
      const required = node.required.filter((k): k is string => typeof k === 'string' && k in properties);
      if (required.length > 0) out.required = [...new Set(required)];
    }
  }
  if (node.additionalProperties !== undefined) {
    if (typeof node.additionalProperties === 'boolean') out.additionalProperties = node.additionalProperties;
    else out.additionalProperties = convert(node.additionalProperties, walk, `${path}[*]`) ?? false;
  }

  const tuple = Array.isArray(node.prefixItems)
    ? node.prefixItems
    : Array.isArray(node.items)
      ? node.items
      : null;
  if (tuple) {
    const members: JsonSchemaObject[] = [];
    tuple.forEach((item: unknown, i: number) => {
      const converted = convert(item, walk, `${path}[${i}]`);
      if (converted !== null) members.push(converted);
    });
    if (isPlainObject(node.items)) {
      const rest = convert(node.items, walk, `${path}[]`);
      if (rest !== null) members.push(rest);
    }
    if (members.length === 1) out.items = members[0];
    else if (members.length > 1) out.items = { anyOf: members };
  } else if (node.items !== undefined) {
    const items = convert(node.items, walk, `${path}[]`);
    if (items !== null) out.items = items;
    else out.maxItems = 0;
  }

  const union = node.anyOf ?? node.oneOf;
  if (union !== undefined) {
    if (!Array.isArray(union) || union.length === 0)
      throw invalid(`${path}: anyOf/oneOf must be a non-empty list`);
    const branches = union
      .map((b: unknown, i: number) => convert(b, walk, `${path}|${i}`))
      .filter((b): b is JsonSchemaObject => b !== null);
    if (branches.length === 1) Object.assign(out, branches[0]);
    else if (branches.length > 1) out.anyOf = branches;
  }
  if (node.allOf !== undefined) {
    if (!Array.isArray(node.allOf) || node.allOf.length === 0)
      throw invalid(`${path}: allOf must be a non-empty list`);
    const branches = node.allOf
      .map((b: unknown, i: number) => convert(b, walk, `${path}&${i}`))
      .filter((b): b is JsonSchemaObject => b !== null);
    const merged = mergeObjectBranches(branches);
    if (merged) {
      const properties = {
        ...((out.properties as JsonSchemaObject) ?? {}),
        ...(merged.properties as JsonSchemaObject),
      };
      const required = [
        ...new Set([...((out.required as string[]) ?? []), ...((merged.required as string[]) ?? [])]),
      ];
      Object.assign(out, merged, { properties });
      if (required.length > 0) out.required = required;
    } else if (branches.length > 0) out.allOf = branches;
  }

  if (node.nullable === true) return withNull(out);
  return out;
}

/**
 * Rewrites a JSON Schema so that it follows `PROVIDER_SAFE_RULES`. Throws `INVALID_ARGUMENT` for
 * input that cannot be made safe (unknown types, unresolvable `$ref`s, empty enums). Never
 * mutates its input.
 */
export function toProviderSafeSchema(schema: unknown): JsonSchemaObject {
  if (!isPlainObject(schema)) throw invalid('the schema must be a JSON Schema object');
  const converted = convert(schema, { root: schema, expanding: [] }, '$') ?? {};
  return converted;
}

/**
 * The schema of a merge patch for objects described by `schema`: nothing is required at any
 * object level, and every property also accepts `null` (which deletes the key). Array items keep
 * their schema whole, since arrays replace. The input must already be provider-safe.
 */
export function toMergePatchSchema(schema: JsonSchemaObject): JsonSchemaObject {
  const patch = (node: JsonSchemaObject): JsonSchemaObject => {
    if (Array.isArray(node.anyOf)) {
      return { ...node, anyOf: (node.anyOf as JsonSchemaObject[]).map(patch) };
    }
    const extra = node.additionalProperties;
    const isObject = isPlainObject(node.properties) || isPlainObject(extra);
    if (!isObject) return node;
    const { required: _required, ...rest } = node;
    const out: JsonSchemaObject = { ...rest };
    if (isPlainObject(node.properties)) {
      const properties: JsonSchemaObject = {};
      for (const [key, value] of Object.entries(node.properties)) {
        Object.defineProperty(properties, key, {
          value: withNull(patch(value as JsonSchemaObject)),
          enumerable: true,
        });
      }
      out.properties = properties;
    }
    // Map-like objects (`additionalProperties: <schema>`) merge too: null deletes an entry.
    if (isPlainObject(extra)) out.additionalProperties = withNull(patch(extra));
    return out;
  };
  return patch(schema);
}

/**
 * Checks a schema against `PROVIDER_SAFE_RULES` and returns the list of violations (empty when
 * it follows them). `toolInputSchema` output always passes; use it to check a schema of your own.
 */
export function providerSafetyViolations(schema: unknown): string[] {
  const problems: string[] = [];
  const allowed = new Set<string>([
    ...SCALAR_KEYS,
    'type',
    'properties',
    'required',
    'additionalProperties',
    'items',
    'enum',
    'anyOf',
    'allOf',
    'format',
    'exclusiveMinimum',
    'exclusiveMaximum',
  ]);
  const visit = (node: unknown, path: string): void => {
    if (!isPlainObject(node)) {
      problems.push(`${path}: schema is not an object`);
      return;
    }
    for (const key of Object.keys(node)) if (!allowed.has(key)) problems.push(`${path}: keyword ${key}`);
    const types = node.type === undefined ? [] : Array.isArray(node.type) ? node.type : [node.type];
    for (const t of types) if (!TYPES.has(t as string)) problems.push(`${path}: type ${JSON.stringify(t)}`);
    if (Array.isArray(node.items)) problems.push(`${path}: tuple items`);
    else if (node.items !== undefined) visit(node.items, `${path}[]`);
    if (Array.isArray(node.enum) && node.enum.length === 0) problems.push(`${path}: empty enum`);
    if (node.format !== undefined && !FORMATS.has(node.format as string)) problems.push(`${path}: format`);
    if (isPlainObject(node.properties)) {
      for (const [key, value] of Object.entries(node.properties)) visit(value, `${path}.${key}`);
      for (const key of (node.required as string[] | undefined) ?? []) {
        if (!(key in node.properties)) problems.push(`${path}: required ${key} is not a property`);
      }
    }
    if (isPlainObject(node.additionalProperties)) visit(node.additionalProperties, `${path}[*]`);
    for (const key of ['anyOf', 'allOf'] as const) {
      const list = node[key];
      if (list !== undefined) {
        if (!Array.isArray(list) || list.length === 0) problems.push(`${path}: empty ${key}`);
        else
          list.forEach((b, i) => {
            visit(b, `${path}.${key}[${i}]`);
          });
      }
    }
    for (const key of ['exclusiveMinimum', 'exclusiveMaximum'] as const) {
      if (node[key] !== undefined && typeof node[key] !== 'number') problems.push(`${path}: boolean ${key}`);
    }
  };
  visit(schema, '$');
  if (isPlainObject(schema) && (schema.type !== 'object' || !isPlainObject(schema.properties))) {
    problems.push('$: top level is not an object schema with properties');
  }
  return problems;
}

/** Throws `INVALID_ARGUMENT` unless the schema describes a JSON object. */
export function assertObjectSchema(schema: JsonSchemaObject): void {
  const isObject =
    schema.type === 'object' || (schema.type === undefined && isPlainObject(schema.properties));
  if (!isObject) throw invalid('working memory must be described by an object schema (type: "object")');
}
