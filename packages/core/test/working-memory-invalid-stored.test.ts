import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createWorkingMemoryTool,
  InMemoryStore,
  isMemoryError,
  Memory,
  type MemoryOptions,
  type MemoryStorage,
  type SchemaSource,
} from '../src/index.ts';
import { caught, uid } from './support.ts';

/** The schema the document was written under, and the one it has since changed to. */
const before = z.object({ name: z.string().optional(), city: z.string().optional() });
const after = z.object({
  name: z.string().optional(),
  city: z.object({ name: z.string() }).optional(),
});
const afterAsync = after.refine(async () => true);

function memoryWith(
  storage: MemoryStorage,
  schema: SchemaSource,
  extra: MemoryOptions['workingMemory'] = {},
) {
  return new Memory({ storage, options: { workingMemory: { schema, ...extra } } });
}

/** A resource whose stored document was valid under `before` and is invalid under `after`. */
async function staleDocument() {
  const storage = new InMemoryStore();
  const resourceId = uid('user');
  await memoryWith(storage, before).mergeWorkingMemory({
    resourceId,
    workingMemory: { name: 'Sam', city: 'Paris' },
  });
  const stored = await storage.getResourceById({ resourceId });
  return { storage, resourceId, stored: JSON.stringify(stored) };
}

async function storedText(storage: MemoryStorage, resourceId: string): Promise<string> {
  return JSON.stringify(await storage.getResourceById({ resourceId }));
}

describe('a stored document that no longer matches the schema', () => {
  it.each([
    ['sync', after],
    ['async', afterAsync],
  ] as const)(
    '%s schema, default reject: VALIDATION says the stored document is invalid, which fields, how to repair; nothing written',
    async (_name, schema) => {
      const { storage, resourceId, stored } = await staleDocument();
      const memory = memoryWith(storage, schema);
      const error = await caught(() =>
        memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Ann' } }),
      );
      expect(isMemoryError(error, 'VALIDATION')).toBe(true);
      const message = (error as Error).message;
      expect(message).toMatch(/the stored working memory does not match the schema/);
      expect(message).toMatch(/city: /);
      expect(message).toMatch(/onInvalidStored/);
      expect(message).toMatch(/updateWorkingMemory/);
      expect(message).toMatch(/--allow-edits/);
      const details = (error as { details: Record<string, unknown> }).details;
      expect(details.invalidStored).toBe(true);
      expect((details.storedIssues as string[]).join()).toMatch(/^city: /);
      expect(await storedText(storage, resourceId)).toBe(stored);
    },
  );

  it('a valid stored document and a bad patch: the patch is blamed, not the stored document', async () => {
    const storage = new InMemoryStore();
    const resourceId = uid('user');
    const memory = memoryWith(storage, after);
    await memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Sam' } });
    const error = await caught(() =>
      memory.mergeWorkingMemory({ resourceId, workingMemory: { city: 'Paris' } }),
    );
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    expect((error as Error).message).not.toMatch(/stored/);
    expect((error as { details: Record<string, unknown> }).details.invalidStored).toBeUndefined();
  });

  it.each([
    ['sync', after],
    ['async', afterAsync],
  ] as const)("%s schema, 'reset': the patch is merged into {} and written", async (_name, schema) => {
    const { storage, resourceId } = await staleDocument();
    const memory = memoryWith(storage, schema, { onInvalidStored: 'reset' });
    const merged = await memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Ann' } });
    expect(merged).toStrictEqual({ name: 'Ann' });
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId })) ?? 'null')).toStrictEqual({
      name: 'Ann',
    });
  });

  it("'reset' with a patch that fails the schema on its own: VALIDATION, nothing written", async () => {
    const { storage, resourceId, stored } = await staleDocument();
    const memory = memoryWith(storage, after, { onInvalidStored: 'reset' });
    const error = await caught(() =>
      memory.mergeWorkingMemory({ resourceId, workingMemory: { city: 'Rome' } }),
    );
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    expect((error as Error).message).toMatch(/onInvalidStored: 'reset'/);
    expect(await storedText(storage, resourceId)).toBe(stored);
  });

  it('a repair function: gets the stored document and its issues; the patch merges into its result', async () => {
    const { storage, resourceId } = await staleDocument();
    const seen: unknown[] = [];
    const memory = memoryWith(storage, after, {
      onInvalidStored: (doc, issues) => {
        seen.push(doc, issues);
        return { ...doc, city: { name: String(doc.city) } };
      },
    });
    const merged = await memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Ann' } });
    expect(merged).toStrictEqual({ name: 'Ann', city: { name: 'Paris' } });
    expect(seen[0]).toStrictEqual({ name: 'Sam', city: 'Paris' });
    expect((seen[1] as string[]).join()).toMatch(/^city: /);
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId })) ?? 'null')).toStrictEqual(merged);
  });

  it.each([
    ['an invalid document', (): unknown => ({ city: 42 })],
    ['a Promise', (): unknown => Promise.resolve({})],
    ['no object', (): unknown => 'x'],
  ] as [string, () => unknown][])(
    'a repair function returning %s: VALIDATION naming onInvalidStored, nothing written',
    async (_name, fn) => {
      const { storage, resourceId, stored } = await staleDocument();
      const memory = memoryWith(storage, after, { onInvalidStored: fn as never });
      const error = await caught(() =>
        memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Ann' } }),
      );
      expect(isMemoryError(error, 'VALIDATION')).toBe(true);
      expect((error as Error).message).toMatch(/^options\.workingMemory\.onInvalidStored /);
      expect(await storedText(storage, resourceId)).toBe(stored);
    },
  );

  it('the tool tells the model briefly that the stored memory is invalid, not its patch', async () => {
    const { storage, resourceId, stored } = await staleDocument();
    const memory = memoryWith(storage, after);
    const tool = await createWorkingMemoryTool(memory, { resourceId });
    const error = await caught(() => tool?.execute({ memory: { name: 'Ann' } }));
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/^The stored working memory does not match the schema \(city: /);
    expect(message).toMatch(/not the cause/);
    expect(message.length).toBeLessThan(400);
    expect(await storedText(storage, resourceId)).toBe(stored);
  });

  it.each([
    ['a string', 'drop', /must be 'reject', 'reset' or a function/],
    ['a number', 1, /must be 'reject', 'reset' or a function/],
  ])('onInvalidStored as %s is INVALID_ARGUMENT at construction', (_name, value, pattern) => {
    const make = () => memoryWith(new InMemoryStore(), after, { onInvalidStored: value as never });
    expect(make).toThrow(/^options\.workingMemory\.onInvalidStored /);
    expect(make).toThrow(pattern);
  });

  it('onInvalidStored without a schema is INVALID_ARGUMENT at construction', () => {
    const make = () =>
      new Memory({
        storage: new InMemoryStore(),
        options: { workingMemory: { template: '# Me', onInvalidStored: 'reset' } },
      });
    expect(make).toThrow(/onInvalidStored works with a schema only/);
  });
});
