import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createWorkingMemoryTool,
  InMemoryStore,
  isMemoryError,
  Memory,
  providerSafetyViolations,
  type SchemaSource,
  toMergePatchSchema,
  toProviderSafeSchema,
  type WorkingMemoryTool,
} from '../src/index.ts';

const ajv2020 = new Ajv2020({ strict: false, validateFormats: false });
const ajv07 = new Ajv({ strict: false, validateFormats: false });

/** Valid against both meta-schemas, and free of what providers reject. */
function expectProviderSafe(schema: unknown): void {
  expect(ajv2020.validateSchema(schema as object), JSON.stringify(ajv2020.errors)).toBe(true);
  expect(ajv07.validateSchema(schema as object), JSON.stringify(ajv07.errors)).toBe(true);
  expect(providerSafetyViolations(schema)).toEqual([]);
  const text = JSON.stringify(schema);
  for (const banned of [
    '"None"',
    '"$ref"',
    '"$schema"',
    '"$defs"',
    '"prefixItems"',
    '"oneOf"',
    '"const"',
    '"~standard"',
  ]) {
    expect(text).not.toContain(banned);
  }
}

async function toolFor(schema: SchemaSource): Promise<WorkingMemoryTool> {
  const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { schema } } });
  const tool = await createWorkingMemoryTool(memory, { resourceId: 'r' });
  expect(tool).not.toBeNull();
  return tool!;
}

/** A tool call a model would make: valid against the tool's inputSchema, and accepted by execute. */
async function roundTrip(tool: WorkingMemoryTool, patch: Record<string, unknown>): Promise<void> {
  const validate = ajv2020.compile(tool.inputSchema);
  expect(validate({ memory: patch }), JSON.stringify(validate.errors)).toBe(true);
  expect(validate({ memory: { name: null } }), JSON.stringify(validate.errors)).toBe(true);
  await expect(tool.execute({ memory: patch })).resolves.toMatchObject({ success: true, outcome: 'merged' });
}

const sample = { name: 'Sam', tags: ['a'], prefs: { tone: 'dry' }, point: [1, 'x'] };

describe('tool inputSchema from each schema source', () => {
  it('Zod 4', async () => {
    const tool = await toolFor(
      z.object({
        name: z.string().optional(),
        kind: z.literal('person').optional(),
        tags: z.array(z.string()).optional(),
        prefs: z.object({ tone: z.enum(['dry', 'warm']).optional() }).optional(),
        point: z.tuple([z.number(), z.string()]).optional(),
        nick: z.string().nullable().optional(),
        when: z.iso.datetime().optional(),
        either: z.union([z.string(), z.number()]).optional(),
        extra: z.record(z.string(), z.number()).optional(),
      }),
    );
    expectProviderSafe(tool.inputSchema);
    await roundTrip(tool, sample);
  });

  it('Valibot', async () => {
    const tool = await toolFor(
      toStandardJsonSchema(
        v.object({
          name: v.optional(v.string()),
          tags: v.optional(v.array(v.string())),
          prefs: v.optional(v.object({ tone: v.optional(v.picklist(['dry', 'warm'])) })),
          point: v.optional(v.tuple([v.number(), v.string()])),
          nick: v.optional(v.nullable(v.string())),
        }),
      ),
    );
    expectProviderSafe(tool.inputSchema);
    await roundTrip(tool, sample);
  });

  it('ArkType', async () => {
    const tool = await toolFor(
      type({
        'name?': 'string',
        'tags?': 'string[]',
        'prefs?': { 'tone?': "'dry' | 'warm'" },
        'point?': ['number', 'string'],
        'nick?': 'string | null',
      }),
    );
    expectProviderSafe(tool.inputSchema);
    await roundTrip(tool, sample);
  });

  it('plain JSON Schema ($schema, definitions, $ref, tuple items, oneOf, const)', async () => {
    const tool = await toolFor({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      definitions: { Tone: { type: 'string', enum: ['dry', 'warm'] } },
      properties: {
        name: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' } },
        prefs: { type: 'object', properties: { tone: { $ref: '#/definitions/Tone' } } },
        point: { type: 'array', items: [{ type: 'number' }, { type: 'string' }] },
        either: { oneOf: [{ type: 'string' }, { type: 'number' }] },
        kind: { const: 'person' },
      },
      required: ['name'],
    });
    expectProviderSafe(tool.inputSchema);
    await roundTrip(tool, sample);
  });
});

describe('tool inputSchema in template and vnext modes', () => {
  it('is provider-safe too', async () => {
    for (const version of ['stable', 'vnext'] as const) {
      const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { version } } });
      const tool = await createWorkingMemoryTool(memory, { resourceId: 'r' });
      expectProviderSafe(tool!.inputSchema);
    }
  });
});

describe('toProviderSafeSchema', () => {
  it('maps type "None" to "null" and rejects unknown types', () => {
    expect(toProviderSafeSchema({ type: 'object', properties: { a: { type: 'None' } } })).toEqual({
      type: 'object',
      properties: { a: { type: 'null' } },
    });
    expect(toProviderSafeSchema({ type: ['string', 'None'] })).toEqual({ type: ['string', 'null'] });
    const error = (() => {
      try {
        toProviderSafeSchema({ type: 'object', properties: { a: { type: 'strin' } } });
      } catch (e) {
        return e;
      }
    })();
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  it('inlines $ref from $defs and cuts recursion', () => {
    const safe = toProviderSafeSchema({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        Node: { type: 'object', properties: { label: { type: 'string' }, next: { $ref: '#/$defs/Node' } } },
      },
      properties: { head: { $ref: '#/$defs/Node' } },
    });
    expect(safe).toEqual({
      type: 'object',
      properties: {
        head: { type: 'object', properties: { label: { type: 'string' }, next: {} } },
      },
    });
    expect(() => toProviderSafeSchema({ properties: { a: { $ref: 'http://x/y' } } })).toThrow(/local \$ref/);
    expect(() => toProviderSafeSchema({ properties: { a: { $ref: '#/$defs/Missing' } } })).toThrow(
      /does not resolve/,
    );
  });

  it('turns tuples into one items schema, oneOf into anyOf, const into enum, nullable into anyOf', () => {
    const safe = toProviderSafeSchema({
      type: 'object',
      properties: {
        t: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'string' }], items: false },
        o: { oneOf: [{ type: 'string' }, { type: 'number' }] },
        c: { const: 'x' },
        n: { type: 'string', nullable: true },
        gone: false,
        any: true,
      },
      required: ['gone', 't'],
      patternProperties: { '^x-': { type: 'string' } },
      propertyNames: { pattern: '^[a-z]+$' },
      'x-vendor': 1,
    });
    expect(safe).toEqual({
      type: 'object',
      properties: {
        t: { type: 'array', items: { anyOf: [{ type: 'number' }, { type: 'string' }] } },
        o: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        c: { enum: ['x'] },
        n: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        any: {},
      },
      required: ['t'],
    });
    expectProviderSafe(safe);
  });

  it('merges allOf of objects and keeps numbers for exclusive bounds', () => {
    const safe = toProviderSafeSchema({
      allOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'number', maximum: 5, exclusiveMaximum: true } } },
      ],
    });
    expect(safe).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'number', exclusiveMaximum: 5 } },
      required: ['a'],
    });
  });

  it('a merge patch accepts null for every property and map entry, and requires nothing', () => {
    const patch = toMergePatchSchema(
      toProviderSafeSchema({
        type: 'object',
        properties: {
          a: { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] },
          m: { type: 'object', additionalProperties: { type: 'number' } },
          list: {
            type: 'array',
            items: { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] },
          },
        },
        required: ['a'],
      }),
    );
    const validate = ajv2020.compile(patch);
    for (const ok of [
      {},
      { a: {} },
      { a: { b: null } },
      { a: null },
      { m: { k: null, j: 2 } },
      { list: [{ x: 'y' }] },
    ]) {
      expect(validate(ok), JSON.stringify(ok)).toBe(true);
    }
    // Array items are whole values: they keep their required fields.
    expect(validate({ list: [{}] })).toBe(false);
    expect(validate({ a: { b: 3 } })).toBe(false);
  });

  it('never mutates its input', () => {
    const input = { type: 'object', properties: { a: { type: 'None' } }, required: ['a'] };
    const copy = structuredClone(input);
    toMergePatchSchema(toProviderSafeSchema(input));
    expect(input).toEqual(copy);
  });

  it('a schema that does not describe an object cannot be a tool parameter', async () => {
    const memory = new Memory({
      storage: new InMemoryStore(),
      options: { workingMemory: { schema: { type: 'object', properties: {} } } },
    });
    // Memory accepts it; the tool works with an empty object schema.
    const tool = await createWorkingMemoryTool(memory, { resourceId: 'r' });
    expectProviderSafe(tool!.inputSchema);
  });

  it('providerSafetyViolations reports what it finds', () => {
    expect(
      providerSafetyViolations({
        type: 'object',
        properties: {
          a: { type: 'None' },
          b: { type: 'array', items: [{ type: 'string' }] },
          c: { $ref: '#/x' },
        },
      }),
    ).toEqual(['$.a: type "None"', '$.b: tuple items', '$.c: keyword $ref']);
    expect(providerSafetyViolations({ type: 'string' })).toContain(
      '$: top level is not an object schema with properties',
    );
  });
});
