import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createWorkingMemoryTool,
  getWorkingMemoryTools,
  InMemoryStore,
  isDuplicateEntry,
  isMemoryError,
  Memory,
  type MemoryOptions,
  normalizeEntry,
  type WorkingMemoryTool,
} from '../src/index.ts';

const TEMPLATE = '# Profile\n- Name:\n- City:\n';

function ids() {
  const n = Math.random().toString(36).slice(2);
  return { threadId: `t-${n}`, resourceId: `r-${n}` };
}

async function setup(
  options: MemoryOptions['workingMemory'],
  extra: Omit<MemoryOptions, 'workingMemory'> = {},
) {
  const storage = new InMemoryStore();
  await storage.init();
  const memory = new Memory({ storage, options: { ...extra, workingMemory: { enabled: true, ...options } } });
  const { threadId, resourceId } = ids();
  await memory.createThread({ threadId, resourceId });
  return { storage, memory, threadId, resourceId };
}

async function toolOf(memory: Memory, bound: { threadId?: string; resourceId?: string } = {}) {
  const tool = await createWorkingMemoryTool(memory, bound);
  expect(tool).not.toBeNull();
  return tool as WorkingMemoryTool;
}

async function rejects(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isMemoryError(error)).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  return error as Error;
}

describe('working-memory tool: template mode', () => {
  it('is updateWorkingMemory with { memory: string } and replaces the document', async () => {
    const { memory, threadId, resourceId } = await setup({ template: TEMPLATE });
    const tool = await toolOf(memory, { threadId, resourceId });
    expect(tool.name).toBe('updateWorkingMemory');
    expect(tool.mode).toBe('template');
    expect(tool.description).toMatch(/complete Markdown/);
    expect(tool.inputSchema).toMatchObject({
      type: 'object',
      properties: { memory: { type: 'string' } },
      required: ['memory'],
    });
    await memory.updateWorkingMemory({ resourceId, workingMemory: 'OLD FACT' });
    const result = await tool.execute({ memory: '# Profile\n- Name: Sam\n- City:\n' });
    expect(result).toMatchObject({ success: true, outcome: 'replaced' });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('# Profile\n- Name: Sam\n- City:\n');
  });

  it('rejects input that is not { memory: string } and writes nothing', async () => {
    const { memory, resourceId } = await setup({ template: TEMPLATE });
    const tool = await toolOf(memory, { resourceId });
    await rejects(tool.execute({ memory: { name: 'Sam' } }), 'INVALID_ARGUMENT');
    await rejects(tool.execute('Sam'), 'INVALID_ARGUMENT');
    await rejects(tool.execute({}), 'INVALID_ARGUMENT');
    expect(await memory.getWorkingMemory({ resourceId })).toBeNull();
  });

  it('writes the thread scope when configured', async () => {
    const { memory, threadId, resourceId } = await setup({ template: TEMPLATE, scope: 'thread' });
    const tool = await toolOf(memory, { threadId, resourceId });
    await tool.execute({ memory: 'THREAD NOTE' });
    expect(await memory.getWorkingMemory({ threadId })).toBe('THREAD NOTE');
    expect((await memory.getThreadById({ threadId }))?.metadata.workingMemory).toBe('THREAD NOTE');
    expect(await memory.storage.getResourceById({ resourceId })).toBeNull();
  });

  it('takes ids from the call context or a request context; ids bound at creation win', async () => {
    const { memory, resourceId } = await setup({ template: TEMPLATE });
    const unbound = await toolOf(memory);
    await unbound.execute({ memory: 'FROM-MAP' }, { requestContext: new Map([['resourceId', resourceId]]) });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('FROM-MAP');
    await unbound.execute({ memory: 'FROM-CONTEXT' }, { resourceId });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('FROM-CONTEXT');
    const bound = await toolOf(memory, { resourceId });
    await bound.execute({ memory: 'BOUND' }, { resourceId: 'someone-else' });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('BOUND');
    expect(await memory.getWorkingMemory({ resourceId: 'someone-else' })).toBeNull();
    await rejects(unbound.execute({ memory: 'x' }), 'INVALID_ARGUMENT');
  });

  it('a thread that belongs to another resource is an error, not a write', async () => {
    const { memory, threadId, resourceId } = await setup({ template: TEMPLATE });
    await memory.updateWorkingMemory({ resourceId: 'intruder', workingMemory: 'INTRUDER' });
    const tool = await toolOf(memory, { threadId, resourceId: 'intruder' });
    const error = await rejects(tool.execute({ memory: 'HIJACK' }), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/does not belong to resource "intruder"/);
    expect(await memory.getWorkingMemory({ resourceId: 'intruder' })).toBe('INTRUDER');
    expect(await memory.getWorkingMemory({ resourceId })).toBeNull();
  });
});

describe('working-memory tool: when it is offered', () => {
  it('is not offered in read-only mode (options or per call) or when disabled', async () => {
    const { memory, resourceId } = await setup({ template: TEMPLATE });
    expect(await createWorkingMemoryTool(memory, { resourceId, readOnly: true })).toBeNull();
    expect(await getWorkingMemoryTools(memory, { resourceId, readOnly: true })).toEqual({});
    expect(Object.keys(await getWorkingMemoryTools(memory, { resourceId }))).toEqual(['updateWorkingMemory']);

    const readOnly = await setup({ template: TEMPLATE }, { readOnly: true });
    expect(await createWorkingMemoryTool(readOnly.memory, { resourceId })).toBeNull();

    const disabled = await setup({ enabled: false });
    expect(await getWorkingMemoryTools(disabled.memory, { resourceId })).toEqual({});
  });

  it('is setWorkingMemory under useStateSignals', async () => {
    const { memory, resourceId } = await setup({ template: TEMPLATE, useStateSignals: true });
    const tools = await getWorkingMemoryTools(memory, { resourceId });
    expect(Object.keys(tools)).toEqual(['setWorkingMemory']);
    await tools.setWorkingMemory!.execute({ memory: 'VIA SIGNALS' });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('VIA SIGNALS');
  });

  it('useStateSignals with vnext is a configuration error', async () => {
    const { memory, resourceId } = await setup({
      template: TEMPLATE,
      useStateSignals: true,
      version: 'vnext',
    }).catch((error) => {
      // Memory itself may refuse the combination at construction.
      expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
      return { memory: null, resourceId: '' };
    });
    if (memory) await rejects(createWorkingMemoryTool(memory, { resourceId }), 'INVALID_ARGUMENT');
  });
});

describe('working-memory tool: schema mode', () => {
  const schema = z.object({
    name: z.string().optional(),
    prefs: z.object({ tone: z.string().optional(), channels: z.array(z.string()).optional() }).optional(),
    age: z.number().int().min(0).optional(),
  });

  it('merges deeply: objects merge, null deletes, arrays replace', async () => {
    const { memory, threadId, resourceId } = await setup({ schema });
    const tool = await toolOf(memory, { threadId, resourceId });
    expect(tool.mode).toBe('schema');
    expect(tool.description).toMatch(/null deletes/);
    await tool.execute({ memory: { name: 'Sam', prefs: { tone: 'dry', channels: ['mail', 'sms'] } } });
    await tool.execute({ memory: { age: 40, prefs: { channels: ['chat'] } } });
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId }))!)).toEqual({
      name: 'Sam',
      age: 40,
      prefs: { tone: 'dry', channels: ['chat'] },
    });
    const result = await tool.execute({ memory: JSON.stringify({ name: null, prefs: { tone: null } }) });
    expect(result).toMatchObject({ success: true, outcome: 'merged' });
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId }))!)).toEqual({
      age: 40,
      prefs: { channels: ['chat'] },
    });
  });

  it('a merge that fails the schema is VALIDATION and writes nothing', async () => {
    const { memory, resourceId } = await setup({ schema });
    const tool = await toolOf(memory, { resourceId });
    await tool.execute({ memory: { name: 'Sam' } });
    await rejects(tool.execute({ memory: { age: -3 } }), 'VALIDATION');
    await rejects(tool.execute({ memory: 42 }), 'INVALID_ARGUMENT');
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId }))!)).toEqual({ name: 'Sam' });
  });

  it('its memory parameter is a merge patch: nothing required, every field nullable', async () => {
    const { memory } = await setup({ schema: z.object({ name: z.string(), nick: z.string().nullable() }) });
    const tool = await toolOf(memory);
    const param = (tool.inputSchema.properties as Record<string, Record<string, unknown>>).memory!;
    expect(param.required).toBeUndefined();
    const props = param.properties as Record<string, { anyOf: { type: string }[] }>;
    expect(props.name!.anyOf).toEqual([{ type: 'string' }, { type: 'null' }]);
    expect(props.nick!.anyOf.filter((b) => b.type === 'null')).toHaveLength(1);
  });
});

describe('working-memory tool: vnext', () => {
  async function vnext(scope: 'resource' | 'thread' = 'resource') {
    const ctx = await setup({ template: TEMPLATE, version: 'vnext', scope });
    const tool = await toolOf(ctx.memory, { threadId: ctx.threadId, resourceId: ctx.resourceId });
    const stored = () =>
      ctx.memory.getWorkingMemory({ threadId: ctx.threadId, resourceId: ctx.resourceId }) as Promise<
        string | null
      >;
    return { ...ctx, tool, stored };
  }

  it('offers { newMemory, searchString?, updateReason }', async () => {
    const { tool } = await vnext();
    expect(tool.mode).toBe('vnext');
    expect(tool.inputSchema).toMatchObject({
      type: 'object',
      required: ['newMemory', 'updateReason'],
      properties: {
        newMemory: { type: 'string' },
        searchString: { type: 'string' },
        updateReason: {
          enum: ['append-new-memory', 'clarify-existing-memory', 'replace-irrelevant-memory'],
        },
      },
    });
  });

  it('append-new-memory appends, and skips text that is already there', async () => {
    const { tool, stored } = await vnext();
    expect(await tool.execute({ newMemory: '- Name: Sam', updateReason: 'append-new-memory' })).toMatchObject(
      {
        outcome: 'appended',
      },
    );
    await tool.execute({ newMemory: '- City: Berlin', updateReason: 'append-new-memory' });
    expect(await stored()).toBe('- Name: Sam\n- City: Berlin');
    const dup = await tool.execute({
      newMemory: '  -   City:   Berlin \n',
      updateReason: 'append-new-memory',
    });
    expect(dup).toMatchObject({ success: true, outcome: 'duplicate' });
    expect(await stored()).toBe('- Name: Sam\n- City: Berlin');
  });

  it('skips text equal to the template, and empty text', async () => {
    const { tool, stored } = await vnext();
    await tool.execute({ newMemory: 'FACT', updateReason: 'append-new-memory' });
    const template = await tool.execute({ newMemory: `\n${TEMPLATE}  `, updateReason: 'append-new-memory' });
    expect(template.outcome).toBe('template');
    expect((await tool.execute({ newMemory: '  ', updateReason: 'append-new-memory' })).outcome).toBe(
      'empty',
    );
    expect(await stored()).toBe('FACT');
  });

  it('clarify-existing-memory replaces the search string', async () => {
    const { tool, stored } = await vnext('thread');
    await tool.execute({ newMemory: '- Name: Sam\n- City: Berlin', updateReason: 'append-new-memory' });
    const result = await tool.execute({
      newMemory: '- Name: Samantha Jones',
      searchString: '- Name: Sam',
      updateReason: 'clarify-existing-memory',
    });
    expect(result.outcome).toBe('replaced');
    expect(await stored()).toBe('- Name: Samantha Jones\n- City: Berlin');
  });

  it('replace-irrelevant-memory replaces (or deletes) the search string; not found appends', async () => {
    const { tool, stored } = await vnext();
    await tool.execute({ newMemory: '- Likes: tea\n- Mood: tired today', updateReason: 'append-new-memory' });
    await tool.execute({
      newMemory: '- Mood: rested',
      searchString: '- Mood: tired today',
      updateReason: 'replace-irrelevant-memory',
    });
    expect(await stored()).toBe('- Likes: tea\n- Mood: rested');
    await tool.execute({
      newMemory: '',
      searchString: '\n- Mood: rested',
      updateReason: 'replace-irrelevant-memory',
    });
    expect(await stored()).toBe('- Likes: tea');
    const missing = await tool.execute({
      newMemory: '- Pet: cat',
      searchString: 'not in memory',
      updateReason: 'replace-irrelevant-memory',
    });
    expect(missing.outcome).toBe('appended-search-not-found');
    expect(await stored()).toBe('- Likes: tea\n- Pet: cat');
  });

  it('clarify or replace without a search string is an error; bad reasons too', async () => {
    const { tool, stored } = await vnext();
    await rejects(
      tool.execute({ newMemory: 'x', updateReason: 'clarify-existing-memory' }),
      'INVALID_ARGUMENT',
    );
    await rejects(
      tool.execute({ newMemory: 'x', updateReason: 'replace-irrelevant-memory', searchString: ' ' }),
      'INVALID_ARGUMENT',
    );
    await rejects(tool.execute({ newMemory: 'x', updateReason: 'rewrite' }), 'INVALID_ARGUMENT');
    await rejects(tool.execute({ updateReason: 'append-new-memory' }), 'INVALID_ARGUMENT');
    expect(await stored()).toBeNull();
  });

  it('concurrent appends from two threads to one resource all survive', async () => {
    const { memory, resourceId } = await setup({ template: TEMPLATE, version: 'vnext' });
    const a = await memory.createThread({ resourceId });
    const b = await memory.createThread({ resourceId });
    const toolA = await toolOf(memory, { threadId: a.id, resourceId });
    const toolB = await toolOf(memory, { threadId: b.id, resourceId });
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 25; i++) {
      writes.push(toolA.execute({ newMemory: `- fact A${i}`, updateReason: 'append-new-memory' }));
      writes.push(toolB.execute({ newMemory: `- fact B${i}`, updateReason: 'append-new-memory' }));
    }
    await Promise.all(writes);
    const lines = ((await memory.getWorkingMemory({ resourceId })) ?? '').split('\n');
    expect(lines).toHaveLength(50);
    for (let i = 0; i < 25; i++) {
      expect(lines).toContain(`- fact A${i}`);
      expect(lines).toContain(`- fact B${i}`);
    }
  });
});

describe('vnext duplicates: only a whole line counts', () => {
  async function withMemory(stored: string) {
    const ctx = await setup({ template: TEMPLATE, version: 'vnext' });
    await ctx.memory.updateWorkingMemory({ resourceId: ctx.resourceId, workingMemory: stored });
    const tool = await toolOf(ctx.memory, { resourceId: ctx.resourceId });
    const append = (newMemory: string) => tool.execute({ newMemory, updateReason: 'append-new-memory' });
    const stored_ = () => ctx.memory.getWorkingMemory({ resourceId: ctx.resourceId });
    return { ...ctx, tool, append, stored: stored_ };
  }

  const notDuplicates: [string, string][] = [
    ['- Budget: 1500 EUR', '- Budget: 150'],
    ['- Allergic to: penicillin (not anymore)', '- Allergic to: penicillin'],
    ['- Not vegetarian', 'vegetarian'],
    ['- Not vegetarian', '- Vegetarian'],
    ['Name: Samantha', 'Name: Sam'],
    ['- Likes: tea, coffee', 'coffee'],
  ];
  for (const [stored, fact] of notDuplicates) {
    it(`${JSON.stringify(fact)} next to ${JSON.stringify(stored)} is appended, not skipped`, async () => {
      const ctx = await withMemory(stored);
      expect(await ctx.append(fact)).toMatchObject({ success: true, outcome: 'appended' });
      expect(await ctx.stored()).toBe(`${stored}\n${fact}`);
    });
  }

  const duplicates = [
    '- Budget: 1500 EUR',
    'Budget: 1500 EUR',
    '  *   budget:   1500 eur  ',
    '1. BUDGET: 1500 EUR',
    '+ Budget: 1500 EUR\n\n- City: Berlin',
  ];
  for (const fact of duplicates) {
    it(`${JSON.stringify(fact)} is a duplicate of stored lines and is skipped`, async () => {
      const stored = '# Profile\n- Budget: 1500 EUR\n- City: Berlin';
      const ctx = await withMemory(stored);
      expect(await ctx.append(fact)).toMatchObject({ success: true, outcome: 'duplicate' });
      expect(await ctx.stored()).toBe(stored);
    });
  }

  it('text with one new line among known ones is appended whole', async () => {
    const ctx = await withMemory('- Name: Sam');
    expect(await ctx.append('- Name: Sam\n- City: Oslo')).toMatchObject({ outcome: 'appended' });
    expect(await ctx.stored()).toBe('- Name: Sam\n- Name: Sam\n- City: Oslo');
  });

  it('a correction that is a prefix of the old line is applied, not reported as a duplicate', async () => {
    const ctx = await withMemory('- Budget: 1500 EUR\n- City: Berlin');
    const result = await ctx.tool.execute({
      newMemory: '- Budget: 150',
      searchString: '- Budget: 1500 EUR',
      updateReason: 'clarify-existing-memory',
    });
    expect(result).toMatchObject({ success: true, outcome: 'replaced' });
    expect(await ctx.stored()).toBe('- Budget: 150\n- City: Berlin');
  });

  it('normalizeEntry and isDuplicateEntry follow the documented rule', () => {
    expect(normalizeEntry('  -   City:\tBerlin ')).toBe('city: berlin');
    expect(normalizeEntry('2) Item')).toBe('item');
    expect(normalizeEntry('-5 degrees')).toBe('-5 degrees');
    expect(isDuplicateEntry('- a\n- b', 'B')).toBe(true);
    expect(isDuplicateEntry('- ab', 'a')).toBe(false);
    expect(isDuplicateEntry('- a', '  \n ')).toBe(false);
    expect(isDuplicateEntry('', '- a')).toBe(false);
  });
});

/**
 * The store as `Memory` sees it: each call of a method named in `before` runs its hook first,
 * and then the method; every other call goes straight to the store.
 */
function withHooks(
  storage: InMemoryStore,
  before: Record<string, () => Promise<void> | void>,
): InMemoryStore {
  return new Proxy(storage, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const call = (value as (...args: unknown[]) => unknown).bind(target);
      const hook = typeof key === 'string' ? before[key] : undefined;
      if (!hook) return call;
      return async (...args: unknown[]) => {
        await hook();
        return call(...args);
      };
    },
  });
}

describe('working-memory tool: the resource erased while the tool writes', () => {
  const modes = [
    ['template', { template: TEMPLATE }, { memory: '# Profile\n- Name: Sam\n' }],
    ['schema', { schema: z.object({ name: z.string().optional() }) }, { memory: { name: 'Sam' } }],
    [
      'vnext',
      { template: TEMPLATE, version: 'vnext' },
      { newMemory: '- Name: Sam', updateReason: 'append-new-memory' },
    ],
  ] as const;

  it.each(modes)(
    '%s: an erasure between the thread check and the write leaves no document (NOT_FOUND); the next turn writes',
    async (_mode, options, input) => {
      const storage = new InMemoryStore();
      await storage.init();
      const { threadId, resourceId } = ids();
      let erase = true;
      // The tool's first working-memory write runs after deleteResource.
      const eraseFirst = async () => {
        if (erase) await storage.deleteResource({ resourceId });
        erase = false;
      };
      const memory = new Memory({
        storage: withHooks(storage, {
          updateWorkingMemoryAtomically: eraseFirst,
          updateResource: eraseFirst,
        }),
        options: { workingMemory: { enabled: true, ...options } },
      });
      await memory.createThread({ threadId, resourceId });
      const tool = await toolOf(memory, { threadId, resourceId });
      const error = await rejects(tool.execute(input), 'NOT_FOUND');
      expect(error.message).toMatch(/was deleted \(or its resource erased\).*the write was undone/);
      expect((await storage.getResourceById({ resourceId }))?.workingMemory ?? null).toBeNull();
      expect(await storage.getThreadById({ threadId })).toBeNull();
      // The user comes back: a new thread, a new turn, and the tool writes as before.
      await memory.createThread({ threadId: `${threadId}-again`, resourceId });
      const again = await toolOf(memory, { threadId: `${threadId}-again`, resourceId });
      expect((await again.execute(input)).success).toBe(true);
      expect(await memory.getWorkingMemory({ resourceId })).toMatch(/Sam/);
    },
  );

  /**
   * A template-mode `Memory` on a new store seen through the hooks `before` makes of it, a thread
   * created, and a replace naming that thread, which must be refused `NOT_FOUND`.
   */
  async function refusedReplace(
    before: (scene: {
      storage: InMemoryStore;
      threadId: string;
      resourceId: string;
    }) => Record<string, () => Promise<void> | void>,
  ) {
    const storage = new InMemoryStore();
    await storage.init();
    const { threadId, resourceId } = ids();
    const memory = new Memory({
      storage: withHooks(storage, before({ storage, threadId, resourceId })),
      options: { workingMemory: { enabled: true, template: TEMPLATE } },
    });
    await memory.createThread({ threadId, resourceId });
    const error = await rejects(
      memory.updateWorkingMemory({ threadId, resourceId, workingMemory: 'MINE' }),
      'NOT_FOUND',
    );
    return { error, stored: await storage.getResourceById({ resourceId }) };
  }

  it('a document another writer set after the undone write is kept; the call is still NOT_FOUND', async () => {
    let written = false;
    // The thread goes while the write runs; the check after it finds another writer's document.
    const { error, stored } = await refusedReplace(({ storage, threadId, resourceId }) => ({
      updateWorkingMemoryAtomically: async () => {
        if (written) return;
        written = true;
        await storage.deleteThread({ threadId });
      },
      getThreadById: async () => {
        if (written) await storage.updateResource({ resourceId, workingMemory: 'OTHER' });
      },
    }));
    expect(error.message).toMatch(/another write has changed the document since/);
    expect(stored).toMatchObject({ workingMemory: 'OTHER' });
  });

  it('a thread not created yet is not checked: the write is stored (one write, as before)', async () => {
    const storage = new InMemoryStore();
    await storage.init();
    const { threadId, resourceId } = ids();
    const memory = new Memory({ storage, options: { workingMemory: { enabled: true, template: TEMPLATE } } });
    const tool = await toolOf(memory, { threadId, resourceId });
    await tool.execute({ memory: '# Profile\n- Name: Sam\n' });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('# Profile\n- Name: Sam\n');
    expect(await storage.getThreadById({ threadId })).toBeNull();
  });

  it('an erasure that ran after the write and before its check: NOT_FOUND, and nothing is left', async () => {
    let written = false;
    const { error, stored } = await refusedReplace(({ storage, resourceId }) => ({
      updateWorkingMemoryAtomically: () => {
        written = true;
      },
      getThreadById: async () => {
        if (written) await storage.deleteResource({ resourceId });
      },
    }));
    expect(error.message).toMatch(/nothing of it is left/);
    expect(stored).toBeNull();
  });
});
