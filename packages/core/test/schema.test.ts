import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { Ajv } from 'ajv';
import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  compileJsonSchema,
  isMemoryError,
  isStandardSchema,
  resolveSchema,
  type SchemaSource,
} from '../src/index.ts';
import { caught } from './support.ts';

const zodSchema = z.object({
  name: z.string().optional(),
  age: z.number().int().min(0).optional(),
  prefs: z.object({ tone: z.enum(['formal', 'casual']).optional() }).optional(),
});
const valibotSchema = v.object({
  name: v.optional(v.string()),
  age: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  prefs: v.optional(v.object({ tone: v.optional(v.picklist(['formal', 'casual'])) })),
});
const arkSchema = type({
  'name?': 'string',
  'age?': 'number.integer >= 0',
  'prefs?': { 'tone?': "'formal' | 'casual'" },
});
const jsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer', minimum: 0 },
    prefs: { type: 'object', properties: { tone: { enum: ['formal', 'casual'] } } },
  },
};

const sources: [string, SchemaSource, string][] = [
  ['Zod 4', zodSchema, 'zod'],
  ['Valibot (plain)', valibotSchema, 'valibot'],
  ['Valibot (toStandardJsonSchema)', toStandardJsonSchema(valibotSchema), 'valibot'],
  ['ArkType', arkSchema, 'arktype'],
  ['JSON Schema', jsonSchema, 'json-schema'],
];

describe('resolveSchema', () => {
  it.each(sources)(
    '%s: validates with the library and reports issues with paths',
    async (_name, source, vendor) => {
      const schema = resolveSchema(source);
      expect(schema.vendor).toBe(vendor);
      const doc = { name: 'Sam', age: 3, prefs: { tone: 'formal' } };
      expect(await schema.validate(doc)).toStrictEqual({ ok: true, value: doc });
      const bad = await schema.validate({ name: 1, prefs: { tone: 'rude' } });
      expect(bad.ok).toBe(false);
      if (!bad.ok) {
        expect(bad.issues.length).toBeGreaterThanOrEqual(1);
        expect(bad.issues.join('\n')).toMatch(/name/);
      }
      expect((await schema.validate({ age: -1 })).ok).toBe(false);
      expect((await schema.validate({ age: 1.5 })).ok).toBe(false);
    },
  );

  it.each(sources.filter(([name]) => name !== 'Valibot (plain)'))(
    '%s: gives a JSON Schema that describes the document (checked with ajv)',
    (_name, source) => {
      const schema = resolveSchema(source);
      expect(schema.jsonSchemaSource).not.toBe('fallback');
      expect(schema.jsonSchema.$schema).toBeUndefined();
      expect(schema.jsonSchema.type).toBe('object');
      const props = schema.jsonSchema.properties as Record<string, unknown>;
      expect(Object.keys(props).sort()).toStrictEqual(['age', 'name', 'prefs']);
      const check = new Ajv({ strict: false }).compile(schema.jsonSchema);
      expect(check({ name: 'Sam', age: 3, prefs: { tone: 'casual' } })).toBe(true);
      expect(check({ name: 1 })).toBe(false);
      expect(check({ prefs: { tone: 'rude' } })).toBe(false);
      expect(JSON.parse(JSON.stringify(schema.jsonSchema))).toStrictEqual(schema.jsonSchema);
    },
  );

  it('Zod and ArkType use the Standard JSON Schema interface', () => {
    expect(resolveSchema(zodSchema).jsonSchemaSource).toBe('standard-json-schema');
    expect(resolveSchema(arkSchema).jsonSchemaSource).toBe('standard-json-schema');
    expect(resolveSchema(toStandardJsonSchema(valibotSchema)).jsonSchemaSource).toBe('standard-json-schema');
  });

  it('falls back to the library method when ~standard.jsonSchema is missing', () => {
    const calls: unknown[] = [];
    const legacy = {
      '~standard': { version: 1 as const, vendor: 'legacy', validate: (value: unknown) => ({ value }) },
      toJSONSchema(options: unknown) {
        calls.push(options);
        return { type: 'object', properties: { a: { type: 'string' } } };
      },
    };
    const schema = resolveSchema(legacy);
    expect(schema.jsonSchemaSource).toBe('library');
    expect(schema.jsonSchema).toStrictEqual({ type: 'object', properties: { a: { type: 'string' } } });
    expect(calls).toStrictEqual([{ target: 'draft-7', io: 'input' }]);
  });

  it('a plain Valibot schema (no converter) validates and gets a permissive object schema', () => {
    const schema = resolveSchema(valibotSchema);
    expect(schema.jsonSchemaSource).toBe('fallback');
    expect(schema.jsonSchema).toStrictEqual({ type: 'object' });
  });

  it('handles a Standard Schema whose validate is async', async () => {
    const asyncSchema = z
      .object({ name: z.string() })
      .refine(async (doc) => doc.name !== 'forbidden', 'name is forbidden');
    const schema = resolveSchema(asyncSchema);
    const pending = schema.validate({ name: 'forbidden' });
    expect(pending).toBeInstanceOf(Promise);
    const result = await pending;
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues).toStrictEqual(['name is forbidden']);
    expect(await schema.validate({ name: 'ok' })).toStrictEqual({ ok: true, value: { name: 'ok' } });
  });

  it('a schema that cannot become JSON Schema is refused with INVALID_ARGUMENT', async () => {
    const error = await caught(() => resolveSchema(z.object({ when: z.date() })));
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  it.each([
    ['null', null],
    ['a string', 'object'],
    ['an array', [{ type: 'object' }]],
    ['a number', 1],
    ['a JSON Schema of a string', { type: 'string' }],
    ['a JSON Schema with an unsupported keyword', { type: 'object', maxLenght: 3 }],
    ['an object with a bad ~standard', { '~standard': { version: 2 } }],
  ])('refuses %s', async (_name, source) => {
    const error = await caught(() => resolveSchema(source as SchemaSource));
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('recognises Standard Schemas that are functions (ArkType)', () => {
    expect(typeof arkSchema).toBe('function');
    expect(isStandardSchema(arkSchema)).toBe(true);
    expect(isStandardSchema(jsonSchema)).toBe(false);
  });
});

describe('derived JSON Schemas run on the built-in validator', () => {
  const rich: [string, SchemaSource][] = [
    [
      'Zod 4',
      z.object({
        name: z.string().min(1).max(5).optional(),
        age: z.number().int().positive().nullable().optional(),
        tone: z.enum(['a', 'b']).optional(),
        tags: z.array(z.string()).max(2).optional(),
        pair: z.tuple([z.string(), z.number()]).optional(),
        scores: z.record(z.string(), z.number()).optional(),
        either: z.union([z.string(), z.number()]).optional(),
      }),
    ],
    [
      'ArkType',
      type({
        'name?': '0 < string <= 5',
        'age?': 'number.integer > 0 | null',
        'tone?': "'a' | 'b'",
        'tags?': 'string[] <= 2',
        'scores?': 'Record<string, number>',
        'either?': 'string | number',
      }),
    ],
    [
      'Valibot',
      toStandardJsonSchema(
        v.object({
          name: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(5))),
          age: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1)))),
          tone: v.optional(v.picklist(['a', 'b'])),
          tags: v.optional(v.pipe(v.array(v.string()), v.maxLength(2))),
          scores: v.optional(v.record(v.string(), v.number())),
          either: v.optional(v.union([v.string(), v.number()])),
        }),
      ),
    ],
  ];
  const docs: unknown[] = [
    {},
    { name: 'Sam', age: 3, tone: 'a', tags: ['x'], scores: { a: 1 }, either: 'x' },
    { age: null },
    { name: '' },
    { name: 'toolong' },
    { age: 0 },
    { age: 1.5 },
    { tone: 'c' },
    { tags: ['a', 'b', 'c'] },
    { scores: { a: 'x' } },
    { either: true },
    { name: 3 },
  ];

  it.each(rich)('%s: same verdicts as the library', async (_name, source) => {
    const resolved = resolveSchema(source);
    const ours = compileJsonSchema(resolved.jsonSchema);
    for (const doc of docs) {
      const library = (await resolved.validate(doc)).ok;
      expect({ doc, ok: ours(doc).length === 0 }).toStrictEqual({ doc, ok: library });
    }
  });
});
