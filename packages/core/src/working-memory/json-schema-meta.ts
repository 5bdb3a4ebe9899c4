// biome-ignore-all lint/suspicious/noThenProperty: `then` is the JSON Schema keyword here
import type { JsonObject } from '../storage/records.ts';

/**
 * What engram accepts as a working-memory JSON Schema, written as a JSON Schema that the
 * validator checks each user schema against before using it. Every keyword the validator
 * applies is listed with the shape of its value; annotations are listed so they pass; any other
 * keyword (`$dynamicRef`, `$recursiveRef`, a typo such as `maxLenght`) is refused, so a schema
 * never validates less than its author expects. Each keyword's `description` completes the
 * sentence "<keyword> must be …" in the error that refuses a schema.
 */

const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'];

const schema = { $ref: '#/$defs/schema' };
const aSchema = { description: 'a schema (an object or a boolean)', ...schema };
const count = { description: 'a non-negative integer', type: 'integer', minimum: 0 };
const number = { description: 'a number', type: 'number' };
const text = { description: 'a string', type: 'string' };
const strings = { description: 'an array of strings', type: 'array', items: { type: 'string' } };
const list = { description: 'a non-empty array of schemas', type: 'array', minItems: 1, items: schema };
const map = {
  description: 'an object whose values are schemas',
  type: 'object',
  additionalProperties: schema,
};
const exclusive = { description: 'a number (or a boolean, draft-04)', type: ['number', 'boolean'] };

/** The keywords the validator applies, with the shape each value must have. */
const KEYWORDS: Record<string, JsonObject> = {
  type: {
    description: `one of ${TYPES.join(', ')}, or a non-empty array of them`,
    anyOf: [{ enum: TYPES }, { type: 'array', minItems: 1, items: { enum: TYPES } }],
  },
  enum: { description: 'an array', type: 'array' },
  const: {},
  anyOf: list,
  oneOf: list,
  allOf: list,
  not: aSchema,
  if: aSchema,
  then: aSchema,
  else: aSchema,
  $ref: text,
  $anchor: { description: 'a plain name', type: 'string', pattern: '^[A-Za-z_][-A-Za-z0-9._]*$' },
  nullable: { description: 'a boolean', type: 'boolean' },
  properties: map,
  required: strings,
  additionalProperties: aSchema,
  unevaluatedProperties: aSchema,
  patternProperties: {
    description: 'an object of schemas keyed by valid regular expressions',
    type: 'object',
    propertyNames: { format: 'regex' },
    additionalProperties: schema,
  },
  propertyNames: aSchema,
  minProperties: count,
  maxProperties: count,
  dependentRequired: {
    description: 'an object whose values are arrays of strings',
    type: 'object',
    additionalProperties: strings,
  },
  dependentSchemas: map,
  dependencies: {
    description: 'an object whose values are schemas or arrays of strings',
    type: 'object',
    additionalProperties: { if: { type: 'array' }, then: strings, else: schema },
  },
  items: {
    description: 'a schema, or a non-empty array of schemas (draft-07 tuple)',
    if: { type: 'array' },
    then: { minItems: 1, items: schema },
    else: schema,
  },
  prefixItems: list,
  additionalItems: aSchema,
  unevaluatedItems: aSchema,
  contains: aSchema,
  minContains: count,
  maxContains: count,
  minItems: count,
  maxItems: count,
  uniqueItems: { description: 'a boolean', type: 'boolean' },
  minLength: count,
  maxLength: count,
  pattern: { description: 'a valid regular expression', type: 'string', format: 'regex' },
  minimum: number,
  maximum: number,
  exclusiveMinimum: exclusive,
  exclusiveMaximum: exclusive,
  multipleOf: { description: 'a number greater than 0', type: 'number', exclusiveMinimum: 0 },
};

/** Accepted and ignored (`format` included: it is an annotation, as in draft 2020-12). */
const ANNOTATIONS: Record<string, JsonObject> = {
  $schema: text,
  $id: text,
  $comment: text,
  $defs: map,
  definitions: map,
  title: text,
  description: text,
  default: {},
  examples: {},
  format: text,
  deprecated: {},
  readOnly: {},
  writeOnly: {},
  contentMediaType: text,
  contentEncoding: text,
};

/** The schema every working-memory JSON Schema must match. */
export const META_SCHEMA: JsonObject = {
  $defs: {
    schema: {
      type: ['object', 'boolean'],
      propertyNames: {
        anyOf: [{ enum: [...Object.keys(KEYWORDS), ...Object.keys(ANNOTATIONS)] }, { pattern: '^x-' }],
      },
      properties: { ...KEYWORDS, ...ANNOTATIONS },
    },
  },
  ...schema,
};

/** The end of "<keyword> must be …" for a keyword whose value has the wrong shape. */
export function expectedShape(keyword: string): string {
  const entry = KEYWORDS[keyword] ?? ANNOTATIONS[keyword];
  return typeof entry?.description === 'string' ? entry.description : 'a valid value';
}
