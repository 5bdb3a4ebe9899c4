import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { InMemoryStore, isMemoryError, Memory, type SchemaSource } from '../src/index.ts';
import { caught, uid } from './support.ts';

/** Merges `{ name, favouriteColour }` and returns what was stored (or the error). */
async function mergeUnknownKey(schema: SchemaSource) {
  const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { schema } } });
  const resourceId = uid('user');
  const returned = await memory.mergeWorkingMemory({
    resourceId,
    workingMemory: { name: 'Sam', favouriteColour: 'red' },
  });
  const stored = JSON.parse((await memory.getWorkingMemory({ resourceId })) ?? 'null');
  expect(stored).toStrictEqual(returned);
  return stored;
}

const strips: [string, SchemaSource][] = [
  ['Zod 4 z.object', z.object({ name: z.string() })],
  ['Zod 3 z.object', z3.object({ name: z3.string() })],
  ['Valibot v.object', v.object({ name: v.string() })],
  ["ArkType with '+': 'delete'", type({ '+': 'delete', name: 'string' })],
];
const keeps: [string, SchemaSource][] = [
  ['Zod 4 z.looseObject', z.looseObject({ name: z.string() })],
  ['Zod 3 .passthrough()', z3.object({ name: z3.string() }).passthrough()],
  ['Valibot v.looseObject', v.looseObject({ name: v.string() })],
  ['ArkType (default: unknown keys allowed)', type({ name: 'string' })],
  ['JSON Schema without additionalProperties', { type: 'object', properties: { name: { type: 'string' } } }],
];
const rejects: [string, SchemaSource][] = [
  ['Zod 4 z.strictObject', z.strictObject({ name: z.string() })],
  ['Valibot v.strictObject', v.strictObject({ name: v.string() })],
  ["ArkType with '+': 'reject'", type({ '+': 'reject', name: 'string' })],
  [
    'JSON Schema with additionalProperties: false',
    { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false },
  ],
];

describe('unknown keys in a merge: the schema output is stored', () => {
  it.each(strips)('%s: the unknown key is dropped', async (_name, schema) => {
    expect(await mergeUnknownKey(schema)).toStrictEqual({ name: 'Sam' });
  });

  it.each(keeps)('%s: the unknown key is kept', async (_name, schema) => {
    expect(await mergeUnknownKey(schema)).toStrictEqual({ name: 'Sam', favouriteColour: 'red' });
  });

  it.each(rejects)('%s: VALIDATION naming the key, nothing written', async (_name, schema) => {
    const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { schema } } });
    const resourceId = uid('user');
    const error = await caught(() =>
      memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Sam', favouriteColour: 'red' } }),
    );
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    expect((error as Error).message).toMatch(/favouriteColour/);
    expect(await memory.getWorkingMemory({ resourceId })).toBeNull();
  });

  it('a Zod default shows in the stored document; null still deletes and arrays still replace', async () => {
    const schema = z.object({
      name: z.string().optional(),
      tone: z.string().default('casual'),
      tags: z.array(z.string()).optional(),
      prefs: z.object({ lang: z.string().optional(), unit: z.string().optional() }).optional(),
    });
    const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { schema } } });
    const resourceId = uid('user');
    await memory.mergeWorkingMemory({
      resourceId,
      workingMemory: { name: 'Sam', tags: ['a', 'b'], prefs: { lang: 'en', unit: 'km', extra: 1 } },
    });
    const merged = await memory.mergeWorkingMemory({
      resourceId,
      workingMemory: { name: null, tags: ['c'], prefs: { unit: null } },
    });
    expect(merged).toStrictEqual({ tone: 'casual', tags: ['c'], prefs: { lang: 'en' } });
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId })) ?? 'null')).toStrictEqual(merged);
  });

  it('a transform whose output is not a JSON object is VALIDATION, nothing written', async () => {
    const schema = z.object({ name: z.string() }).transform(() => new Date(0));
    const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { schema } } });
    const resourceId = uid('user');
    const error = await caught(() =>
      memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Sam' } }),
    );
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    expect((error as Error).message).toMatch(/the schema's output is .*not a JSON object/);
    expect(await memory.getWorkingMemory({ resourceId })).toBeNull();
  });
});
