// biome-ignore-all lint/suspicious/noThenProperty: `then` is the JSON Schema keyword here
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileJsonSchema, isMemoryError, type JsonObject, type JsonValue } from '../src/index.ts';

const profile: JsonObject = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 20 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    score: { type: 'number', exclusiveMinimum: 0, multipleOf: 0.5 },
    nickname: { type: ['string', 'null'] },
    tone: { enum: ['formal', 'casual'] },
    kind: { const: 'profile' },
    tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' }, maxItems: 3, uniqueItems: true },
    prefs: {
      type: 'object',
      properties: { lang: { type: 'string' } },
      required: ['lang'],
      additionalProperties: false,
    },
    contact: {
      anyOf: [
        { type: 'string', pattern: '@' },
        { type: 'object', required: ['phone'] },
      ],
    },
    id: { oneOf: [{ type: 'integer' }, { type: 'number', minimum: 10 }] },
  },
  additionalProperties: false,
};

describe('compileJsonSchema', () => {
  const validate = compileJsonSchema(profile);

  it('accepts a valid document', () => {
    expect(
      validate({
        name: 'Sam',
        age: 33,
        score: 2.5,
        nickname: null,
        tone: 'formal',
        kind: 'profile',
        tags: ['a', 'b'],
        prefs: { lang: 'de' },
        contact: { phone: '1' },
        id: 5,
      }),
    ).toStrictEqual([]);
  });

  const failing: [string, unknown, RegExp][] = [
    ['a wrong type', { name: 3 }, /name: expected string, got integer/],
    ['an integer that is not', { age: 1.5 }, /age: expected integer, got number/],
    ['below minimum', { age: -1 }, /age: must be at least 0/],
    ['above maximum', { age: 151 }, /age: must be at most 150/],
    ['exclusiveMinimum', { score: 0 }, /score: must be greater than 0/],
    ['multipleOf', { score: 0.3 }, /score: must be a multiple of 0.5/],
    ['minLength', { name: '' }, /name: must be at least 1 characters long/],
    ['maxLength in code points', { name: '🙂'.repeat(21) }, /name: must be at most 20/],
    ['enum', { tone: 'rude' }, /tone: must be one of "formal", "casual"/],
    ['const', { kind: 'other' }, /kind: must equal "profile"/],
    ['nullable via type array rejects other types', { nickname: 1 }, /nickname: expected string or null/],
    ['items', { tags: ['A'] }, /tags\[0\]: must match the pattern/],
    ['maxItems', { tags: ['a', 'b', 'c', 'd'] }, /tags: must have at most 3 items/],
    ['uniqueItems', { tags: ['a', 'a'] }, /tags: items must be unique/],
    ['required', { prefs: {} }, /prefs: missing required property "lang"/],
    [
      'additionalProperties false (nested)',
      { prefs: { lang: 'de', x: 1 } },
      /prefs: unexpected property "x"/,
    ],
    ['additionalProperties false (top)', { extra: 1 }, /the document: unexpected property "extra"/],
    ['anyOf', { contact: 'nope' }, /contact: matches none of the anyOf/],
    ['oneOf with two matches', { id: 12 }, /id: must match exactly one oneOf alternative, matched 2/],
    ['not an object at all', [], /the document: expected object, got array/],
    ['a Date is not JSON', { prefs: new Date(0) }, /prefs: expected a JSON value, got a non-JSON object/],
  ];

  it.each(failing)('reports %s', (_name, value, message) => {
    const issues = validate(value);
    expect(issues.join('\n')).toMatch(message);
  });

  it('resolves local $ref into $defs and definitions, including recursion', () => {
    const v = compileJsonSchema({
      $defs: {
        node: {
          type: 'object',
          properties: { child: { $ref: '#/$defs/node' }, v: { $ref: '#/definitions/n' } },
        },
      },
      definitions: { n: { type: 'number' } },
      $ref: '#/$defs/node',
    });
    expect(v({ child: { child: { v: 1 } } })).toStrictEqual([]);
    expect(v({ child: { child: { v: 'x' } } })).toStrictEqual(['child.child.v: expected number, got string']);
  });

  it('supports OpenAPI nullable, draft-07 tuples, prefixItems, patternProperties, propertyNames, contains, allOf, not', () => {
    expect(compileJsonSchema({ type: 'string', nullable: true })(null)).toStrictEqual([]);
    const tuple = compileJsonSchema({ type: 'array', items: [{ type: 'string' }], additionalItems: false });
    expect(tuple(['a'])).toStrictEqual([]);
    expect(tuple(['a', 'b']).length).toBe(1);
    expect(
      compileJsonSchema({ prefixItems: [{ type: 'string' }], items: { type: 'number' } })(['a', 1, 2]),
    ).toStrictEqual([]);
    const pp = compileJsonSchema({
      patternProperties: { '^x-': { type: 'number' } },
      additionalProperties: false,
    });
    expect(pp({ 'x-a': 1 })).toStrictEqual([]);
    expect(pp({ 'x-a': 'no' }).length).toBe(1);
    expect(pp({ y: 1 }).length).toBe(1);
    expect(compileJsonSchema({ propertyNames: { maxLength: 2 } })({ abc: 1 }).length).toBe(1);
    expect(compileJsonSchema({ contains: { const: 1 } })([2, 3]).length).toBe(1);
    expect(compileJsonSchema({ allOf: [{ minimum: 1 }, { maximum: 2 }] })(3).length).toBe(1);
    expect(compileJsonSchema({ not: { type: 'string' } })('s').length).toBe(1);
    expect(compileJsonSchema({ type: 'number', minimum: 1, exclusiveMinimum: true })(1).length).toBe(1);
    expect(compileJsonSchema(true)({ anything: 1 })).toStrictEqual([]);
    expect(compileJsonSchema({ properties: { a: false } })({ a: 1 }).length).toBe(1);
  });

  const badSchemas: [string, unknown][] = [
    ['an array', []],
    ['a string', 'object'],
    ['an unknown keyword', { type: 'object', $dynamicRef: '#meta' }],
    ['an unknown type name', { type: 'date' }],
    ['an empty type array', { type: [] }],
    ['a remote $ref', { $ref: 'https://example.com/schema.json' }],
    ['a dangling $ref', { $ref: '#/$defs/missing' }],
    ['a malformed $ref', { $ref: '#/%E0%A4%A' }],
    ['a bad pattern', { pattern: '(' }],
    ['required not a list of strings', { required: 'a' }],
    ['negative minLength', { minLength: -1 }],
    ['multipleOf zero', { multipleOf: 0 }],
    ['a non-schema sub-schema', { properties: { a: 'string' } }],
    ['an empty anyOf', { anyOf: [] }],
  ];

  it.each(badSchemas)('refuses %s with INVALID_ARGUMENT', (_name, schema) => {
    let error: unknown;
    try {
      compileJsonSchema(schema);
    } catch (e) {
      error = e;
    }
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('ignores annotations and x- extensions', () => {
    const v = compileJsonSchema({
      $schema: 'http://json-schema.org/draft-07/schema#',
      title: 't',
      description: 'd',
      default: {},
      examples: [],
      'x-ui': { widget: 'text' },
      properties: { email: { type: 'string', format: 'email' } },
    });
    expect(v({ email: 'not-an-email' })).toStrictEqual([]);
  });
});

describe('compileJsonSchema: keywords of every draft, one wording', () => {
  const refusal = (schema: unknown): string => {
    try {
      compileJsonSchema(schema);
    } catch (error) {
      if (isMemoryError(error, 'INVALID_ARGUMENT')) return error.message;
      throw error;
    }
    throw new Error('expected INVALID_ARGUMENT');
  };

  it('names where a schema goes wrong and why', () => {
    expect(refusal({ properties: { a: { maxLenght: 3 } } })).toBe(
      'invalid JSON Schema at #/properties/a: the keyword "maxLenght" is not supported',
    );
    expect(refusal({ items: { minLength: -1 } })).toBe(
      'invalid JSON Schema at #/items: minLength must be a non-negative integer',
    );
    expect(refusal({ anyOf: [{}, 'string'] })).toBe(
      'invalid JSON Schema at #/anyOf/1: a sub-schema must be an object or a boolean',
    );
    expect(refusal({ type: ['string', 'date'] })).toMatch(
      /^invalid JSON Schema at #: type must be one of string, /,
    );
    expect(refusal({ pattern: '(' })).toBe(
      'invalid JSON Schema at #: pattern must be a valid regular expression',
    );
    expect(refusal({ $ref: 'https://example.com/s.json' })).toBe(
      'invalid JSON Schema at #: only references inside the schema resolve (remote $ref is not fetched), got "https://example.com/s.json"',
    );
    expect(refusal({ properties: { a: { $ref: '#/$defs/missing' } } })).toBe(
      'invalid JSON Schema at #/properties/a: $ref "#/$defs/missing" points nowhere',
    );
    expect(refusal({ $id: 'https://example.com/root.json', $ref: 'other.json' })).toMatch(
      /remote \$ref is not fetched/,
    );
  });

  it('resolves $ref through $id and $anchor inside the schema', () => {
    const v = compileJsonSchema({
      $id: 'https://example.com/profile.json',
      properties: { a: { $ref: 'profile.json#/$defs/n' }, b: { $ref: '#name' } },
      $defs: { n: { type: 'number' }, s: { $anchor: 'name', type: 'string' } },
    });
    expect(v({ a: 1, b: 'x' })).toStrictEqual([]);
    expect(v({ a: 'x', b: 1 })).toStrictEqual([
      'a: expected number, got string',
      'b: expected string, got integer',
    ]);
  });

  it('applies if/then/else, dependentRequired, dependencies, dependentSchemas, min/maxContains, unevaluatedProperties', () => {
    const conditional = compileJsonSchema({
      if: { properties: { kind: { const: 'person' } } },
      then: { required: ['name'] },
      else: { required: ['title'] },
    });
    expect(conditional({ kind: 'person' })).toStrictEqual(['the document: missing required property "name"']);
    expect(conditional({ kind: 'book' })).toStrictEqual(['the document: missing required property "title"']);
    expect(conditional({ kind: 'book', title: 't' })).toStrictEqual([]);
    expect(compileJsonSchema({ dependentRequired: { card: ['billing'] } })({ card: 1 })).toStrictEqual([
      'the document: has property "card", so it must have "billing"',
    ]);
    expect(compileJsonSchema({ dependencies: { card: ['billing'] } })({ card: 1 })).toStrictEqual([
      'the document: has property "card", so it must have "billing"',
    ]);
    expect(
      compileJsonSchema({ dependentSchemas: { card: { properties: { billing: { type: 'string' } } } } })({
        card: 1,
        billing: 2,
      }),
    ).toStrictEqual(['billing: expected string, got integer']);
    const counted = compileJsonSchema({ contains: { type: 'string' }, minContains: 2, maxContains: 3 });
    expect(counted(['a', 1])).toStrictEqual(['the document: must contain at least 2 matching items']);
    expect(counted(['a', 'b', 'c', 'd'])).toStrictEqual([
      'the document: must contain at most 3 matching items',
    ]);
    expect(counted(['a', 'b', 1])).toStrictEqual([]);
    const closed = compileJsonSchema({
      properties: { a: true },
      anyOf: [{ properties: { b: true } }],
      unevaluatedProperties: false,
    });
    expect(closed({ a: 1, b: 2 })).toStrictEqual([]);
    expect(closed({ a: 1, c: 3 })).toStrictEqual(['the document: unexpected property "c"']);
  });

  it('reads draft-04 boolean bounds, also beside $ref and with $schema draft-04', () => {
    const v = compileJsonSchema({
      $schema: 'http://json-schema.org/draft-04/schema#',
      definitions: { n: { type: 'number' } },
      properties: {
        low: { $ref: '#/definitions/n', minimum: 1, exclusiveMinimum: true },
        high: { maximum: 5, exclusiveMaximum: false },
      },
    });
    expect(v({ low: 1, high: 5 })).toStrictEqual(['low: must be greater than 1']);
    expect(v({ low: 1.5, high: 5 })).toStrictEqual([]);
  });

  it('lets null through a nullable schema, references into its definitions included', () => {
    const v = compileJsonSchema({
      nullable: true,
      type: 'object',
      $defs: { tag: { type: 'string', nullable: true, enum: ['a'] } },
      properties: { tag: { $ref: '#/$defs/tag' } },
      required: ['tag'],
    });
    expect(v(null)).toStrictEqual([]);
    expect(v({ tag: null })).toStrictEqual([]);
    expect(v({ tag: 'b' })).toStrictEqual(['tag: must be one of "a"']);
    expect(v({})).toStrictEqual(['the document: missing required property "tag"']);
  });

  it('reports false schemas from where they sit', () => {
    const v = compileJsonSchema({ prefixItems: [{ type: 'string' }], items: false });
    expect(v(['a', 'b', 'c'])).toStrictEqual(['the document: has too many items (at most 1)']);
    expect(compileJsonSchema(false)({})).toStrictEqual(['the document: no value is allowed here']);
  });

  it('reports property names under propertyNames, and a schema that recurses without end', () => {
    expect(compileJsonSchema({ propertyNames: { maxLength: 2 } })({ abc: 1 })).toStrictEqual([
      'abc (name): must be at most 2 characters long',
    ]);
    expect(compileJsonSchema({ $ref: '#' })({})).toStrictEqual([
      'the document: schema recursion is too deep',
    ]);
  });
});

describe('compileJsonSchema agrees with ajv', () => {
  const schemas: JsonObject[] = [
    profile,
    {
      type: 'object',
      properties: {
        list: { type: 'array', minItems: 1, items: { anyOf: [{ type: 'integer' }, { type: 'null' }] } },
        flag: { type: 'boolean' },
        nested: { type: 'object', additionalProperties: { type: 'string', maxLength: 2 }, maxProperties: 2 },
      },
      required: ['flag'],
    },
    {
      type: 'object',
      properties: { a: { not: { const: 1 } }, b: { oneOf: [{ type: 'string' }, { minimum: 3 }] } },
    },
  ];
  const keys = fc.constantFrom(
    'name',
    'age',
    'score',
    'nickname',
    'tone',
    'kind',
    'tags',
    'prefs',
    'contact',
    'id',
    'list',
    'flag',
    'nested',
    'a',
    'b',
    'lang',
    'phone',
    'x',
  );
  const leaf = fc.oneof(
    fc.constantFrom('formal', 'profile', 'de', 'a', 'ab', 'abc', 'A', '@x', '', 'x'),
    fc.integer({ min: -2, max: 200 }),
    fc.constantFrom(0.5, 2.5, 0.3, 1.5, 12.5),
    fc.boolean(),
    fc.constant(null),
  );
  const value = fc.letrec<{ v: JsonValue; o: JsonObject }>((tie) => ({
    v: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('v'), { maxLength: 4 }), tie('o')),
    o: fc.dictionary(keys, tie('v'), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>,
  })).o;

  it.each(schemas.map((schema, i) => [i, schema] as const))(
    'schema %i: same verdict on random documents',
    (_i, schema) => {
      const ajv = new Ajv({ strict: false, allowUnionTypes: true });
      const reference = ajv.compile(schema);
      const ours = compileJsonSchema(schema);
      let valid = 0;
      fc.assert(
        fc.property(value, (doc) => {
          const expected = reference(doc) === true;
          if (expected) valid++;
          expect(ours(doc).length === 0).toBe(expected);
        }),
        { numRuns: 1500 },
      );
      // the generator must exercise both verdicts for the comparison to mean anything
      expect(valid).toBeGreaterThan(0);
    },
  );
});
