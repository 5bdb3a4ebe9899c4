import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defaultWorkingMemoryTemplate,
  InMemoryStore,
  isMemoryError,
  Memory,
  type MemoryOptions,
  type MemoryStorage,
  type SchemaSource,
} from '../src/index.ts';
import { caught, NonAtomicStore, spyStore, uid } from './support.ts';

const zodSchema = z.object({
  name: z.string().optional(),
  age: z.number().int().min(0).optional(),
  prefs: z.object({ tone: z.enum(['formal', 'casual']).optional(), lang: z.string().optional() }).optional(),
  tags: z.array(z.string()).optional(),
});
const valibotSchema = v.object({
  name: v.optional(v.string()),
  age: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  prefs: v.optional(
    v.object({ tone: v.optional(v.picklist(['formal', 'casual'])), lang: v.optional(v.string()) }),
  ),
  tags: v.optional(v.array(v.string())),
});
const arkSchema = type({
  'name?': 'string',
  'age?': 'number.integer >= 0',
  'prefs?': { 'tone?': "'formal' | 'casual'", 'lang?': 'string' },
  'tags?': 'string[]',
});
const jsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer', minimum: 0 },
    prefs: { type: 'object', properties: { tone: { enum: ['formal', 'casual'] }, lang: { type: 'string' } } },
    tags: { type: 'array', items: { type: 'string' } },
  },
};

const schemas: [string, SchemaSource][] = [
  ['Zod 4', zodSchema],
  ['Valibot', valibotSchema],
  ['Valibot + toStandardJsonSchema', toStandardJsonSchema(valibotSchema)],
  ['ArkType', arkSchema],
  ['JSON Schema', jsonSchema],
];

function memoryWith(
  workingMemory: MemoryOptions['workingMemory'],
  storage: MemoryStorage = new InMemoryStore(),
  extra: MemoryOptions = {},
) {
  return new Memory({ storage, options: { ...extra, workingMemory } });
}

async function setup(memory: Memory) {
  const resourceId = uid('user');
  const thread = await memory.createThread({ resourceId });
  const sibling = await memory.createThread({ resourceId });
  return { resourceId, threadId: thread.id, siblingId: sibling.id };
}

/** What the storage holds for a resource and a thread, byte for byte. */
async function snapshot(storage: MemoryStorage, resourceId: string, threadId: string): Promise<string> {
  return JSON.stringify({
    resource: await storage.getResourceById({ resourceId }),
    thread: await storage.getThreadById({ threadId }),
  });
}

describe('Memory construction', () => {
  const storage = new InMemoryStore();

  it('fills in defaults and freezes the resolved options', () => {
    const memory = new Memory({ storage });
    expect(memory.storage).toBe(storage);
    expect(memory.options).toMatchObject({
      lastMessages: 10,
      readOnly: false,
      semanticRecall: false,
      workingMemory: {
        enabled: false,
        scope: 'resource',
        format: 'markdown',
        version: 'stable',
        useStateSignals: false,
      },
    });
    expect(Object.isFrozen(memory.options)).toBe(true);
    expect(Object.isFrozen(memory.options.workingMemory)).toBe(true);
    expect(new Memory({ storage, options: { workingMemory: {} } }).options.workingMemory.enabled).toBe(true);
    expect(
      new Memory({ storage, options: { workingMemory: { schema: jsonSchema } } }).options.workingMemory
        .format,
    ).toBe('json');
  });

  const invalidOptions: [string, MemoryOptions][] = [
    ['template and schema together', { workingMemory: { template: '# T', schema: zodSchema } }],
    ['an unknown scope', { workingMemory: { scope: 'global' as 'thread' } }],
    ['vnext with a schema', { workingMemory: { version: 'vnext', schema: zodSchema } }],
    ['an unknown version', { workingMemory: { version: 'v3' as 'vnext' } }],
    ['a non-string template', { workingMemory: { template: 3 as unknown as string } }],
    ['a bad schema', { workingMemory: { schema: 'zod' as unknown as SchemaSource } }],
    ['a negative lastMessages', { lastMessages: -1 }],
    ['a fractional lastMessages', { lastMessages: 1.5 }],
    ['a non-boolean readOnly', { readOnly: 'yes' as unknown as boolean }],
  ];
  it.each(invalidOptions)('refuses %s with INVALID_ARGUMENT', async (_name, options) => {
    const error = await caught(() => new Memory({ storage, options }));
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });

  const unknownKeys: [string, () => unknown, RegExp][] = [
    [
      'workingMemory.scopee',
      () => new Memory({ storage, options: { workingMemory: { scopee: 'thread' } as never } }),
      /unknown option options\.workingMemory\.scopee; did you mean options\.workingMemory\.scope\?/,
    ],
    [
      'workingMemory.Template',
      () => new Memory({ storage, options: { workingMemory: { Template: '# T' } as never } }),
      /options\.workingMemory\.Template; did you mean options\.workingMemory\.template\?/,
    ],
    [
      'options.lastMessage',
      () => new Memory({ storage, options: { lastMessage: 5 } as never }),
      /unknown option options\.lastMessage; did you mean options\.lastMessages\?/,
    ],
    [
      'options.readonly',
      () => new Memory({ storage, options: { readonly: true } as never }),
      /options\.readonly; did you mean options\.readOnly\?/,
    ],
    [
      'a constructor key (optons)',
      () => new Memory({ storage, optons: { lastMessages: 5 } } as never),
      /unknown option optons; did you mean options\?/,
    ],
    [
      'a key unlike any option',
      () => new Memory({ storage, options: { embedderModel: 'x' } as never }),
      /unknown option options\.embedderModel \(known: lastMessages, readOnly, workingMemory, semanticRecall, observationalMemory, threadTitle, turnRecords, recordConfiguration\)/,
    ],
    [
      'an unknown key whose value is undefined',
      () => new Memory({ storage, options: { workingMemory: { scopee: undefined } as never } }),
      /options\.workingMemory\.scopee/,
    ],
  ];
  it.each(unknownKeys)(
    'refuses the unknown key %s, naming it and the closest valid one',
    async (_name, make, message) => {
      const error = await caught(make);
      expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toMatch(message);
    },
  );

  it('accepts every documented key', () => {
    const memory = new Memory({
      storage,
      options: {
        lastMessages: 3,
        readOnly: false,
        semanticRecall: false,
        workingMemory: {
          enabled: true,
          scope: 'thread',
          template: '# T',
          version: 'stable',
          useStateSignals: false,
        },
      },
    });
    expect(memory.options.workingMemory.scope).toBe('thread');
    expect(
      new Memory({ storage, options: { workingMemory: { schema: jsonSchema } } }).options.workingMemory
        .format,
    ).toBe('json');
  });

  it('template and schema together names both in the message', async () => {
    const error = await caught(
      () => new Memory({ storage, options: { workingMemory: { template: '#', schema: jsonSchema } } }),
    );
    expect((error as Error).message).toMatch(/template.*schema.*not both/);
  });

  it.each([
    ['vector', { mode: 'vector' as const }],
    ['hybrid', { mode: 'hybrid' as const, topK: 3 }],
  ])(
    'refuses semanticRecall mode %s without an embedder (INVALID_ARGUMENT)',
    async (_name, semanticRecall) => {
      const error = await caught(() => new Memory({ storage, options: { semanticRecall } }));
      expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toMatch(/needs an embedder/);
    },
  );

  it('accepts semanticRecall: true without an embedder on a store with a keyword index (keyword mode)', () => {
    expect(() => new Memory({ storage, options: { semanticRecall: true } })).not.toThrow();
  });

  it('accepts semanticRecall: false', () => {
    expect(new Memory({ storage, options: { semanticRecall: false } }).options.semanticRecall).toBe(false);
  });

  it('needs a storage', async () => {
    const error = await caught(() => new Memory({} as { storage: MemoryStorage }));
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });
});

describe('template mode', () => {
  it('uses the default template when none is given', async () => {
    const memory = memoryWith({ enabled: true });
    expect(await memory.getWorkingMemoryTemplate()).toStrictEqual({
      format: 'markdown',
      content: defaultWorkingMemoryTemplate,
    });
    for (const field of [
      'First Name',
      'Last Name',
      'Location',
      'Occupation',
      'Interests',
      'Goals',
      'Events',
      'Facts',
      'Projects',
    ]) {
      expect(defaultWorkingMemoryTemplate).toContain(field);
    }
    expect(memory.getWorkingMemorySchema()).toBeNull();
  });

  it('returns a custom template', async () => {
    const memory = memoryWith({ enabled: true, template: '# User\n- Name:\n' });
    expect(await memory.getWorkingMemoryTemplate()).toStrictEqual({
      format: 'markdown',
      content: '# User\n- Name:\n',
    });
  });

  it('replaces the whole document, and empty memory reads as null', async () => {
    const memory = memoryWith({ enabled: true });
    const { resourceId, threadId } = await setup(memory);
    expect(await memory.getWorkingMemory({ threadId, resourceId })).toBeNull();
    await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: '# User\n- Name: Sam\n' });
    await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: '# User\n- City: Berlin\n' });
    expect(await memory.getWorkingMemory({ threadId, resourceId })).toBe('# User\n- City: Berlin\n');
    await memory.updateWorkingMemory({ resourceId, workingMemory: '' });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('');
  });

  it('mergeWorkingMemory and applyWorkingMemoryPatch are UNSUPPORTED, storage unchanged', async () => {
    const memory = memoryWith({ enabled: true });
    const { resourceId, threadId } = await setup(memory);
    await memory.updateWorkingMemory({ resourceId, workingMemory: '# Notes' });
    const before = await snapshot(memory.storage, resourceId, threadId);
    for (const call of [
      () => memory.mergeWorkingMemory({ resourceId, workingMemory: { a: 1 } }),
      () => memory.applyWorkingMemoryPatch({ resourceId, patch: { a: 1 } }),
    ]) {
      const error = await caught(call);
      expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
      expect((error as Error).message).toMatch(/schema mode/);
    }
    expect(await snapshot(memory.storage, resourceId, threadId)).toBe(before);
  });

  it('updateWorkingMemory needs a string', async () => {
    const memory = memoryWith({ enabled: true });
    const error = await caught(() =>
      memory.updateWorkingMemory({ resourceId: 'r', workingMemory: { a: 1 } as unknown as string }),
    );
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(await memory.storage.getResourceById({ resourceId: 'r' })).toBeNull();
  });
});

describe('scopes', () => {
  it('resource scope: shared by the threads of a resource, invisible to another resource', async () => {
    const memory = memoryWith({ enabled: true, scope: 'resource' });
    const { resourceId, threadId, siblingId } = await setup(memory);
    const other = await setup(memory);
    await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: 'shared' });
    expect(await memory.getWorkingMemory({ threadId: siblingId, resourceId })).toBe('shared');
    expect(await memory.getWorkingMemory({ resourceId })).toBe('shared');
    expect(
      await memory.getWorkingMemory({ threadId: other.threadId, resourceId: other.resourceId }),
    ).toBeNull();
    // stored on the resource, not on the thread
    expect((await memory.storage.getResourceById({ resourceId }))?.workingMemory).toBe('shared');
    expect((await memory.storage.getThreadById({ threadId }))?.metadata.workingMemory).toBeUndefined();
  });

  it('resource scope: prefix-like resource ids stay apart', async () => {
    const memory = memoryWith({ enabled: true });
    await memory.updateWorkingMemory({ resourceId: 'r1', workingMemory: 'one' });
    await memory.updateWorkingMemory({ resourceId: 'r10', workingMemory: 'ten' });
    expect(await memory.getWorkingMemory({ resourceId: 'r1' })).toBe('one');
    expect(await memory.getWorkingMemory({ resourceId: 'r10' })).toBe('ten');
  });

  it('thread scope: invisible to a sibling thread of the same resource', async () => {
    const memory = memoryWith({ enabled: true, scope: 'thread' });
    const { resourceId, threadId, siblingId } = await setup(memory);
    await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: 'mine' });
    expect(await memory.getWorkingMemory({ threadId, resourceId })).toBe('mine');
    expect(await memory.getWorkingMemory({ threadId: siblingId, resourceId })).toBeNull();
    expect((await memory.storage.getThreadById({ threadId }))?.metadata.workingMemory).toBe('mine');
    expect(await memory.storage.getResourceById({ resourceId })).toBeNull();
  });

  it('switching the configured scope never shows the other scope', async () => {
    const storage = new InMemoryStore();
    const resourceScoped = memoryWith({ enabled: true, scope: 'resource' }, storage);
    const threadScoped = memoryWith({ enabled: true, scope: 'thread' }, storage);
    const { resourceId, threadId } = await setup(resourceScoped);
    await resourceScoped.updateWorkingMemory({ threadId, resourceId, workingMemory: 'resource data' });
    expect(await threadScoped.getWorkingMemory({ threadId, resourceId })).toBeNull();
    await threadScoped.updateWorkingMemory({ threadId, resourceId, workingMemory: 'thread data' });
    expect(await resourceScoped.getWorkingMemory({ threadId, resourceId })).toBe('resource data');
    expect(await threadScoped.getWorkingMemory({ threadId, resourceId })).toBe('thread data');
  });

  it('createThread metadata.workingMemory is the initial thread memory; updateThread replaces it', async () => {
    const memory = memoryWith({ enabled: true, scope: 'thread' });
    const resourceId = uid('user');
    const thread = await memory.createThread({
      resourceId,
      threadId: uid('t'),
      title: 'Consultation',
      metadata: { workingMemory: '# Patient\n- Blood Type: O+\n', topic: 'health' },
    });
    expect(await memory.getWorkingMemory({ threadId: thread.id, resourceId })).toBe(
      '# Patient\n- Blood Type: O+\n',
    );
    const updated = await memory.updateThread({
      id: thread.id,
      title: thread.title,
      metadata: { ...thread.metadata, workingMemory: '# Patient\n- Blood Type: O+\n- Allergies: none\n' },
    });
    expect(updated.metadata.topic).toBe('health');
    expect(await memory.getWorkingMemory({ threadId: thread.id })).toBe(
      '# Patient\n- Blood Type: O+\n- Allergies: none\n',
    );
  });

  it('resource scope without a resourceId is INVALID_ARGUMENT, before any storage call', async () => {
    const { store, calls } = spyStore();
    const memory = memoryWith({ enabled: true }, store);
    for (const call of [
      () => memory.getWorkingMemory({ threadId: 't' }),
      () => memory.updateWorkingMemory({ threadId: 't', workingMemory: 'x' }),
      () => memory.editWorkingMemory({ threadId: 't', edit: () => 'x' }),
    ]) {
      const error = await caught(call);
      expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toMatch(/needs a resourceId/);
    }
    expect(calls).toStrictEqual([]);
  });

  it('thread scope without a threadId is INVALID_ARGUMENT; an unknown thread is NOT_FOUND', async () => {
    const memory = memoryWith({ enabled: true, scope: 'thread' });
    const missing = await caught(() => memory.getWorkingMemory({ resourceId: 'r' }));
    expect(isMemoryError(missing, 'INVALID_ARGUMENT')).toBe(true);
    const unknown = await caught(() =>
      memory.updateWorkingMemory({ threadId: 'nope', resourceId: 'r', workingMemory: 'x' }),
    );
    expect(isMemoryError(unknown, 'NOT_FOUND')).toBe(true);
    expect(await memory.storage.getThreadById({ threadId: 'nope' })).toBeNull();
  });

  it.each(['resource', 'thread'] as const)(
    '%s scope: a thread of another resource is INVALID_ARGUMENT, never a silent write',
    async (scope) => {
      const memory = memoryWith({ enabled: true, scope });
      const alice = await setup(memory);
      const bob = await setup(memory);
      await memory.updateWorkingMemory({
        threadId: bob.threadId,
        resourceId: bob.resourceId,
        workingMemory: 'bob',
      });
      const before = [
        await snapshot(memory.storage, alice.resourceId, bob.threadId),
        await snapshot(memory.storage, bob.resourceId, alice.threadId),
      ];
      for (const call of [
        () =>
          memory.updateWorkingMemory({
            threadId: bob.threadId,
            resourceId: alice.resourceId,
            workingMemory: 'x',
          }),
        () => memory.getWorkingMemory({ threadId: bob.threadId, resourceId: alice.resourceId }),
        () =>
          memory.editWorkingMemory({ threadId: alice.threadId, resourceId: bob.resourceId, edit: () => 'x' }),
      ]) {
        const error = await caught(call);
        expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
        expect((error as Error).message).toMatch(/does not belong to resource/);
      }
      expect([
        await snapshot(memory.storage, alice.resourceId, bob.threadId),
        await snapshot(memory.storage, bob.resourceId, alice.threadId),
      ]).toStrictEqual(before);
      expect(await memory.getWorkingMemory({ threadId: bob.threadId, resourceId: bob.resourceId })).toBe(
        'bob',
      );
    },
  );

  it.each([
    ['an operator object', { $gt: '' }],
    ['an empty string', ''],
    ['a 256-character string', 'x'.repeat(256)],
    ['a number', 42],
  ])('rejects %s as an id with INVALID_ARGUMENT before any storage call', async (_name, bad) => {
    for (const scope of ['resource', 'thread'] as const) {
      const { store, calls } = spyStore();
      const memory = memoryWith({ enabled: true, scope }, store);
      const asId = bad as unknown as string;
      for (const call of [
        () => memory.getWorkingMemory({ resourceId: asId, threadId: asId }),
        () => memory.updateWorkingMemory({ resourceId: asId, threadId: 't', workingMemory: 'x' }),
        () => memory.editWorkingMemory({ resourceId: 'r', threadId: asId, edit: () => 'x' }),
      ]) {
        expect(isMemoryError(await caught(call), 'INVALID_ARGUMENT')).toBe(true);
      }
      expect(calls).toStrictEqual([]);
    }
  });
});

describe('readOnly and disabled', () => {
  it('options.readOnly: reads work, every working-memory write is UNSUPPORTED and nothing is written', async () => {
    const storage = new InMemoryStore();
    const writer = memoryWith({ enabled: true, schema: zodSchema }, storage);
    const { resourceId, threadId } = await setup(writer);
    await writer.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Sam' } });
    const reader = memoryWith({ enabled: true, schema: zodSchema }, storage, { readOnly: true });
    expect(await reader.getWorkingMemory({ resourceId })).toBe('{"name":"Sam"}');
    const before = await snapshot(storage, resourceId, threadId);
    for (const call of [
      () => reader.updateWorkingMemory({ resourceId, workingMemory: '{}' }),
      () => reader.mergeWorkingMemory({ resourceId, workingMemory: { name: 'X' } }),
      () => reader.applyWorkingMemoryPatch({ resourceId, patch: { name: 'X' } }),
      () => reader.editWorkingMemory({ resourceId, edit: () => '{}' }),
      () => reader.updateThread({ id: threadId, metadata: { workingMemory: 'x' } }),
      () => reader.createThread({ resourceId, metadata: { workingMemory: 'x' } }),
    ]) {
      const error = await caught(call);
      expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
      expect((error as Error).message).toMatch(/read-only/);
    }
    expect(await snapshot(storage, resourceId, threadId)).toBe(before);
    // other thread writes still work
    await reader.updateThread({ id: threadId, title: 'renamed' });
  });

  it('per-call readOnly: true refuses the write', async () => {
    const memory = memoryWith({ enabled: true });
    const error = await caught(() =>
      memory.updateWorkingMemory({ resourceId: 'r', workingMemory: 'x', readOnly: true }),
    );
    expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
    expect(await memory.storage.getResourceById({ resourceId: 'r' })).toBeNull();
    await memory.updateWorkingMemory({ resourceId: 'r', workingMemory: 'x', readOnly: false });
    expect(await memory.getWorkingMemory({ resourceId: 'r' })).toBe('x');
  });

  it('disabled working memory is UNSUPPORTED', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    for (const call of [
      () => memory.getWorkingMemory({ resourceId: 'r' }),
      () => memory.updateWorkingMemory({ resourceId: 'r', workingMemory: 'x' }),
      () => memory.editWorkingMemory({ resourceId: 'r', edit: () => 'x' }),
    ]) {
      const error = await caught(call);
      expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
      expect((error as Error).message).toMatch(/disabled/);
    }
  });
});

describe.each(schemas)('schema mode with %s', (_name, schema) => {
  it('reports json format and the JSON Schema as the template', async () => {
    const memory = memoryWith({ enabled: true, schema });
    const template = await memory.getWorkingMemoryTemplate();
    expect(template.format).toBe('json');
    expect(JSON.parse(template.content)).toStrictEqual(memory.getWorkingMemorySchema()?.jsonSchema);
  });

  it.each(['resource', 'thread'] as const)(
    'merges in %s scope and returns the stored document',
    async (scope) => {
      const memory = memoryWith({ enabled: true, scope, schema });
      const { resourceId, threadId } = await setup(memory);
      const first = await memory.mergeWorkingMemory({
        threadId,
        resourceId,
        workingMemory: { name: 'Sam', prefs: { tone: 'formal', lang: null }, tags: ['a'] },
      });
      expect(first).toStrictEqual({ name: 'Sam', prefs: { tone: 'formal' }, tags: ['a'] });
      const second = await memory.mergeWorkingMemory({
        threadId,
        resourceId,
        workingMemory: '{"prefs":{"lang":"de"},"tags":["b","c"],"name":null}',
      });
      expect(second).toStrictEqual({ prefs: { tone: 'formal', lang: 'de' }, tags: ['b', 'c'] });
      expect(JSON.parse((await memory.getWorkingMemory({ threadId, resourceId }))!)).toStrictEqual(second);
    },
  );

  it.each(['resource', 'thread'] as const)(
    '%s scope: a merged document failing the schema is VALIDATION, storage byte-for-byte unchanged',
    async (scope) => {
      const memory = memoryWith({ enabled: true, scope, schema });
      const { resourceId, threadId } = await setup(memory);
      await memory.mergeWorkingMemory({ threadId, resourceId, workingMemory: { name: 'Sam', age: 30 } });
      const before = await snapshot(memory.storage, resourceId, threadId);
      for (const patch of [
        { age: -1 },
        { prefs: { tone: 'rude' } },
        { name: 42 },
        { tags: [1] },
        { age: 1.5 },
      ]) {
        for (const call of [
          () => memory.mergeWorkingMemory({ threadId, resourceId, workingMemory: patch }),
          () => memory.applyWorkingMemoryPatch({ threadId, resourceId, patch }),
        ]) {
          const error = await caught(call);
          expect(isMemoryError(error, 'VALIDATION')).toBe(true);
          expect((error as Error).message).toMatch(/does not match the schema: .+/);
          expect(await snapshot(memory.storage, resourceId, threadId)).toBe(before);
        }
      }
    },
  );

  it('a failing first write creates nothing', async () => {
    const memory = memoryWith({ enabled: true, schema });
    const resourceId = uid('fresh');
    const error = await caught(() =>
      memory.mergeWorkingMemory({ resourceId, workingMemory: { age: 'old' } }),
    );
    expect(isMemoryError(error, 'VALIDATION')).toBe(true);
    expect(await memory.storage.getResourceById({ resourceId })).toBeNull();
  });

  it('updateWorkingMemory (replace) validates the whole document', async () => {
    const memory = memoryWith({ enabled: true, schema });
    const resourceId = uid('user');
    await memory.updateWorkingMemory({ resourceId, workingMemory: '{"name":"Sam"}' });
    // Not JSON, or JSON that is not an object: VALIDATION about the document, never "patch".
    for (const text of ['Name: Sam', 'hello', '', '[1]', '42', 'null', '"{}"']) {
      const error = await caught(() => memory.updateWorkingMemory({ resourceId, workingMemory: text }));
      expect(isMemoryError(error, 'VALIDATION')).toBe(true);
      expect((error as Error).message).toMatch(/document/);
      expect((error as Error).message).not.toMatch(/patch/);
      if (/[a-z]{4}/i.test(text) && text !== 'null') expect((error as Error).message).not.toContain(text);
      expect((error as Error).cause).toBeUndefined();
    }
    const failing = await caught(() =>
      memory.updateWorkingMemory({ resourceId, workingMemory: '{"age":-3}' }),
    );
    expect(isMemoryError(failing, 'VALIDATION')).toBe(true);
    expect(await memory.getWorkingMemory({ resourceId })).toBe('{"name":"Sam"}');
    const notString = await caught(() =>
      memory.updateWorkingMemory({ resourceId, workingMemory: { name: 'x' } as unknown as string }),
    );
    expect(isMemoryError(notString, 'INVALID_ARGUMENT')).toBe(true);
  });

  it.each(['thread', 'resource'] as const)(
    '%s scope: createThread/updateThread refuse thread memory the schema rejects (VALIDATION, nothing written)',
    async (scope) => {
      const memory = memoryWith({ enabled: true, scope, schema });
      const resourceId = uid('user');
      for (const bad of ['{"age":"old"}', 'hello', '[1]', '{"age":-1}']) {
        const threadId = uid('t');
        const error = await caught(() =>
          memory.createThread({ resourceId, threadId, metadata: { workingMemory: bad } }),
        );
        expect(isMemoryError(error, 'VALIDATION')).toBe(true);
        expect(await memory.storage.getThreadById({ threadId })).toBeNull();
      }
      const notString = await caught(() =>
        memory.createThread({ resourceId, metadata: { workingMemory: { age: 3 } } }),
      );
      expect(isMemoryError(notString, 'INVALID_ARGUMENT')).toBe(true);

      const thread = await memory.createThread({
        resourceId,
        metadata: { workingMemory: '{"name":"Sam","age":30}', other: 1 },
      });
      const before = await snapshot(memory.storage, resourceId, thread.id);
      for (const bad of ['{"age":"old"}', 'hello', '{"prefs":{"tone":"rude"}}']) {
        const error = await caught(() =>
          memory.updateThread({ id: thread.id, title: 'changed', metadata: { workingMemory: bad } }),
        );
        expect(isMemoryError(error, 'VALIDATION')).toBe(true);
        expect(await snapshot(memory.storage, resourceId, thread.id)).toBe(before);
      }
      // Valid values and null (no memory) are accepted; other metadata is untouched by the check.
      await memory.updateThread({ id: thread.id, metadata: { workingMemory: '{"age":31}' } });
      await memory.updateThread({ id: thread.id, metadata: { other: 2 } });
      if (scope === 'thread') {
        expect(await memory.mergeWorkingMemory({ threadId: thread.id, workingMemory: {} })).toStrictEqual({
          age: 31,
        });
      }
      await memory.updateThread({ id: thread.id, metadata: { workingMemory: null } });
      expect((await memory.getThreadById({ threadId: thread.id }))?.metadata).toStrictEqual({
        workingMemory: null,
        other: 2,
      });
    },
  );
});

describe('mergeWorkingMemory rules', () => {
  it('is UNSUPPORTED on a storage that declares no atomic support, and says what to do', async () => {
    const storage = new NonAtomicStore();
    const memory = memoryWith({ enabled: true, schema: zodSchema }, storage);
    expect(await memory.supportsAtomicWorkingMemoryMerge()).toBe(false);
    const { resourceId, threadId } = await setup(memory);
    const error = await caught(() =>
      memory.mergeWorkingMemory({ threadId, resourceId, workingMemory: { name: 'Sam' } }),
    );
    expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
    expect((error as Error).message).toMatch(/supportsAtomicWorkingMemoryMerge/);
    expect(await storage.getResourceById({ resourceId })).toBeNull();
  });

  it('a store claiming support without the method is treated as non-atomic', async () => {
    const inner = new NonAtomicStore();
    const liar = Object.assign(Object.create(inner) as NonAtomicStore, {
      capabilities: { atomicWorkingMemory: true },
    });
    const memory = memoryWith({ enabled: true, schema: zodSchema }, liar);
    expect(await memory.supportsAtomicWorkingMemoryMerge()).toBe(false);
  });

  it('is true on InMemoryStore', async () => {
    expect(await memoryWith({ enabled: true }).supportsAtomicWorkingMemoryMerge()).toBe(true);
  });

  it('uses the storage atomic update (one call per merge)', async () => {
    const { store, calls } = spyStore();
    const memory = memoryWith({ enabled: true, schema: zodSchema }, store);
    await memory.mergeWorkingMemory({ resourceId: 'r', workingMemory: { name: 'Sam' } });
    expect(calls.filter((c) => c === 'updateWorkingMemoryAtomically')).toHaveLength(1);
    expect(calls).not.toContain('updateResource');
  });

  it.each([
    ['an array', [1]],
    ['a number', 3],
    ['a non-JSON string', 'name=Sam'],
    ['null', null],
  ])('an invalid patch (%s) is INVALID_ARGUMENT before any storage call', async (_name, patch) => {
    const { store, calls } = spyStore();
    const memory = memoryWith({ enabled: true, schema: zodSchema }, store);
    const error = await caught(() =>
      memory.mergeWorkingMemory({ resourceId: 'r', workingMemory: patch as object }),
    );
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(calls).toStrictEqual([]);
  });

  it('treats a stored Markdown value as {} when switching to schema mode', async () => {
    const storage = new InMemoryStore();
    await memoryWith({ enabled: true }, storage).updateWorkingMemory({
      resourceId: 'r',
      workingMemory: '# old',
    });
    const memory = memoryWith({ enabled: true, schema: zodSchema }, storage);
    expect(
      await memory.mergeWorkingMemory({ resourceId: 'r', workingMemory: { name: 'Sam' } }),
    ).toStrictEqual({ name: 'Sam' });
  });

  it('works with an async schema, and rejects an invalid document without writing', async () => {
    // looseObject: the k0…k19 keys below are not in the schema and a plain z.object drops them.
    const asyncSchema = z
      .looseObject({ name: z.string().optional(), n: z.number().optional() })
      .refine(async (doc) => doc.name !== 'forbidden', 'name is forbidden');
    for (const storage of [new InMemoryStore(), new NonAtomicStore()]) {
      const memory = memoryWith({ enabled: true, schema: asyncSchema }, storage);
      expect(await memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { name: 'Sam' } })).toStrictEqual(
        { name: 'Sam' },
      );
      const error = await caught(() =>
        memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { name: 'forbidden' } }),
      );
      expect(isMemoryError(error, 'VALIDATION')).toBe(true);
      expect((error as Error).message).toMatch(/name is forbidden/);
      expect(await memory.getWorkingMemory({ resourceId: 'r' })).toBe('{"name":"Sam"}');
      // concurrent async merges of different keys all survive
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { [`k${i}`]: i } }),
        ),
      );
      const doc = JSON.parse((await memory.getWorkingMemory({ resourceId: 'r' }))!);
      expect(Object.keys(doc)).toHaveLength(21);
    }
  });
});

describe('editWorkingMemory', () => {
  it('runs the edit atomically and returns the stored value', async () => {
    const memory = memoryWith({ enabled: true });
    await memory.updateWorkingMemory({ resourceId: 'r', workingMemory: 'a' });
    const seen: (string | null)[] = [];
    const result = await memory.editWorkingMemory({
      resourceId: 'r',
      edit: (current) => {
        seen.push(current);
        return `${current}b`;
      },
    });
    expect(result).toBe('ab');
    expect(seen).toStrictEqual(['a']);
    expect(await memory.getWorkingMemory({ resourceId: 'r' })).toBe('ab');
  });

  it.each([
    ['atomic', () => new InMemoryStore()],
    ['fallback', () => new NonAtomicStore()],
  ])('%s: an edit that throws writes nothing and its error propagates as-is', async (_name, make) => {
    const memory = memoryWith({ enabled: true, scope: 'thread' }, make());
    const { resourceId, threadId } = await setup(memory);
    await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: 'keep' });
    const before = await snapshot(memory.storage, resourceId, threadId);
    const boom = new Error('boom');
    const error = await caught(() =>
      memory.editWorkingMemory({
        threadId,
        edit: () => {
          throw boom;
        },
      }),
    );
    expect(error).toBe(boom);
    expect(await snapshot(memory.storage, resourceId, threadId)).toBe(before);
  });

  it.each([
    ['atomic', () => new InMemoryStore()],
    ['fallback', () => new NonAtomicStore()],
  ])('%s: an edit returning a non-string is INVALID_ARGUMENT and writes nothing', async (_name, make) => {
    const memory = memoryWith({ enabled: true }, make());
    await memory.updateWorkingMemory({ resourceId: 'r', workingMemory: 'keep' });
    const error = await caught(() =>
      memory.editWorkingMemory({ resourceId: 'r', edit: () => ({ a: 1 }) as unknown as string }),
    );
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(await memory.getWorkingMemory({ resourceId: 'r' })).toBe('keep');
  });

  it('needs a function', async () => {
    const memory = memoryWith({ enabled: true });
    const error = await caught(() =>
      memory.editWorkingMemory({ resourceId: 'r', edit: 'x' as unknown as () => string }),
    );
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });
});
