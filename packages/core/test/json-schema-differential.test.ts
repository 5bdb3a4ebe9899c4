// biome-ignore-all lint/suspicious/noThenProperty: `then` is the JSON Schema keyword here
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileJsonSchema, type JsonObject, type JsonValue } from '../src/index.ts';

/**
 * Generated schemas over the keywords working-memory schemas use (draft-07 and draft 2020-12
 * forms) and generated documents: engram's validator and Ajv must give the same verdict on
 * every pair, and an invalid document must always come with at least one issue.
 */

type Draft = '07' | '2020-12';
type Schema = JsonObject | boolean;
type Model = Record<string, fc.Arbitrary<unknown>>;

const KEYS = ['a', 'b', 'c', 'xa', 'yb'] as const;

function schemas(draft: Draft): fc.Arbitrary<JsonObject> {
  const defs = draft === '07' ? 'definitions' : '$defs';
  const leaf = (withRef: boolean): fc.Arbitrary<Schema> =>
    fc.constantFrom<Schema>(
      { type: 'string' },
      { type: 'integer' },
      { type: 'number' },
      { type: 'boolean' },
      { type: 'null' },
      { type: 'object' },
      { type: 'array' },
      { type: ['string', 'null'] },
      { type: ['integer', 'array'] },
      { minLength: 1 },
      { maxLength: 2 },
      { pattern: '^a' },
      { pattern: 'b$' },
      { minimum: 0 },
      { maximum: 2 },
      { exclusiveMinimum: 0 },
      { exclusiveMaximum: 2 },
      { multipleOf: 0.5 },
      { multipleOf: 2 },
      { enum: ['a', 1, null] },
      { enum: [[1], { a: 1 }] },
      { const: 'a' },
      { const: { a: 1 } },
      { minItems: 1 },
      { maxItems: 1 },
      { uniqueItems: true },
      { minProperties: 1 },
      { maxProperties: 1 },
      { required: ['a'] },
      { required: ['a', 'b'] },
      true,
      false,
      ...(withRef ? [{ $ref: `#/${defs}/d` }] : []),
    );
  const tree = (withRef: boolean) =>
    fc.letrec<{ s: Schema }>((tie) => {
      const some = fc.array(tie('s'), { minLength: 1, maxLength: 3 });
      const byKey = fc.dictionary(fc.constantFrom(...KEYS), tie('s'), { maxKeys: 2 });
      const object = fc.record(
        {
          type: fc.constant('object'),
          properties: byKey,
          required: fc.subarray(['a', 'b'], { minLength: 1 }),
          additionalProperties: fc.oneof(fc.boolean(), tie('s')),
          patternProperties: fc.dictionary(fc.constantFrom('^x', 'b$'), tie('s'), { maxKeys: 2 }),
          propertyNames: fc.constantFrom<JsonObject>({ maxLength: 1 }, { pattern: '^[ab]' }),
          ...(draft === '07'
            ? {
                dependencies: fc.dictionary(
                  fc.constantFrom('a', 'b'),
                  fc.oneof(fc.constant(['c']), tie('s')) as fc.Arbitrary<JsonValue>,
                  { maxKeys: 2 },
                ),
              }
            : {
                dependentRequired: fc.dictionary(fc.constantFrom('a', 'b'), fc.constant(['c']), {
                  maxKeys: 2,
                }),
                dependentSchemas: fc.dictionary(fc.constantFrom('a', 'b'), tie('s'), { maxKeys: 1 }),
              }),
        } as Model,
        { requiredKeys: [] },
      );
      // Ajv 8.20 skips `contains` next to a tuple (`prefixItems`, or a draft-07 `items` array):
      // it accepts [] against { prefixItems: [{}], contains: {} }, which the spec refuses. So a
      // generated array schema has a tuple or `contains`, never both.
      const tuple = fc.record(
        {
          type: fc.constant('array'),
          ...(draft === '07'
            ? { items: some, additionalItems: tie('s') }
            : { prefixItems: some, items: tie('s') }),
          minItems: fc.integer({ min: 0, max: 2 }),
          uniqueItems: fc.boolean(),
        } as Model,
        { requiredKeys: [] },
      );
      const list = fc.record(
        {
          type: fc.constant('array'),
          items: tie('s'),
          contains: tie('s'),
          ...(draft === '2020-12'
            ? { minContains: fc.integer({ min: 0, max: 2 }), maxContains: fc.integer({ min: 1, max: 2 }) }
            : {}),
          maxItems: fc.integer({ min: 0, max: 2 }),
          uniqueItems: fc.boolean(),
        } as Model,
        { requiredKeys: [] },
      );
      const combined = fc.oneof(
        fc.record({ anyOf: some }),
        fc.record({ oneOf: some }),
        fc.record({ allOf: some }),
        fc.record({ not: tie('s') }),
        fc.record({ if: tie('s'), then: tie('s'), else: tie('s') }, { requiredKeys: ['if'] }),
      );
      const unevaluated =
        draft === '2020-12'
          ? [
              fc.record({
                properties: byKey,
                anyOf: fc.array(fc.record({ properties: byKey }), { minLength: 1, maxLength: 2 }),
                unevaluatedProperties: fc.oneof(fc.boolean(), tie('s')),
              }),
            ]
          : [];
      const refSibling = withRef
        ? [fc.record({ $ref: fc.constant(`#/${defs}/d`), minProperties: fc.nat(1) })]
        : [];
      return {
        s: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          leaf(withRef),
          object,
          tuple,
          list,
          combined,
          ...unevaluated,
          ...refSibling,
        ) as fc.Arbitrary<Schema>,
      };
    }).s;
  return fc.tuple(tree(false), tree(true)).map(([d, body]) => {
    const root: JsonObject = typeof body === 'boolean' ? { allOf: [body] } : { ...body };
    root[defs] = { d };
    if (draft === '2020-12') root.$schema = 'https://json-schema.org/draft/2020-12/schema';
    else root.$schema = 'http://json-schema.org/draft-07/schema#';
    return root;
  });
}

const documents = fc
  .letrec<{ v: JsonValue }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom<JsonValue>(
        'a',
        'b',
        'ab',
        'ba',
        '',
        '🙂🙂',
        'xyz',
        0,
        1,
        2,
        1.5,
        -1,
        0.5,
        3,
        true,
        false,
        null,
      ),
      fc.array(tie('v'), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom(...KEYS), tie('v'), { maxKeys: 3 }) as fc.Arbitrary<JsonValue>,
    ),
    // as parsed from JSON: plain objects only (Ajv tells {} and a null-prototype {} apart in uniqueItems)
  }))
  .v.map((doc) => JSON.parse(JSON.stringify(doc)) as JsonValue);

const PER_SCHEMA = 6;

describe.each<[Draft, () => Ajv]>([
  ['07', () => new Ajv({ strict: false, allowUnionTypes: true })],
  ['2020-12', () => new Ajv2020({ strict: false, allowUnionTypes: true }) as unknown as Ajv],
])('compileJsonSchema agrees with ajv on generated draft-%s schemas', (draft, makeAjv) => {
  it('same verdict on 3,000 generated schema/document pairs, and issues for every invalid one', () => {
    const ajv = makeAjv();
    let pairs = 0;
    let valid = 0;
    fc.assert(
      fc.property(
        schemas(draft),
        fc.array(documents, { minLength: PER_SCHEMA, maxLength: PER_SCHEMA }),
        (schema, docs) => {
          const reference = ajv.compile(schema);
          const ours = compileJsonSchema(schema);
          for (const doc of docs) {
            const expected = reference(doc) === true;
            const issues = ours(doc);
            pairs++;
            if (expected) valid++;
            if (expected !== (issues.length === 0)) {
              expect({ doc, issues, valid: issues.length === 0 }).toStrictEqual({
                doc,
                issues,
                valid: expected,
              });
            }
          }
        },
      ),
      { numRuns: 500, seed: draft === '07' ? 7 : 2020 },
    );
    expect(pairs).toBe(500 * PER_SCHEMA);
    // both verdicts must be common for the comparison to mean anything
    expect(valid / pairs).toBeGreaterThan(0.15);
    expect(valid / pairs).toBeLessThan(0.85);
  }, 300_000);
});
