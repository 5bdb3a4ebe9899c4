import {
  capabilitiesOf,
  type JsonObject,
  Memory,
  type MemoryStorage,
  type WorkingMemoryOptions,
} from '@engram/core';
import fc from 'fast-check';
import { ConformanceError, expectEqual, expectRejects, expectTrue, show } from '../assert.ts';
import { defineArea } from '../define.ts';
import { assertProperty } from '../property.ts';
import { patchArbitrary, referenceMerge } from '../reference-merge.ts';
import { FOR_NON_ATOMIC, NEEDS_ATOMIC, requireAtomic, skipCheck } from '../skip.ts';
import type { CheckContext } from '../types.ts';

const check = defineArea('working-memory');

/** Property runs of the merge check (each a few merges on the adapter). */
export const MERGE_RUNS = 15;

/** A JSON Schema for the schema-mode checks. */
const PROFILE_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer', minimum: 0 },
    tags: { type: 'array', items: { type: 'string' } },
    prefs: { type: 'object', properties: { theme: { type: 'string' }, fonts: { type: 'object' } } },
  },
} as const;

function memoryOf(store: MemoryStorage, workingMemory: WorkingMemoryOptions): Memory {
  return new Memory({ storage: store, options: { workingMemory: { enabled: true, ...workingMemory } } });
}

/** Two threads of one resource, saved through a resource-scoped `Memory`. */
async function twoThreads(ctx: CheckContext, memory: Memory) {
  const resourceId = ctx.id('r');
  const a = await memory.createThread({ resourceId, threadId: ctx.id('t'), title: '' });
  const b = await memory.createThread({ resourceId, threadId: ctx.id('t') });
  return { resourceId, a, b };
}

/** Working memory through `Memory`: scopes, template and schema modes, merges. */
export const workingMemoryChecks = [
  check('resource scope: shared by the threads of a resource, invisible to others', async (ctx) => {
    const store = await ctx.store();
    const memory = memoryOf(store, { scope: 'resource', template: '# Notes\n' });
    const { resourceId, a, b } = await twoThreads(ctx, memory);
    expectEqual(await memory.getWorkingMemory({ resourceId, threadId: a.id }), null, 'nothing written yet');
    await memory.updateWorkingMemory({ resourceId, threadId: a.id, workingMemory: '# Notes\n- likes tea' });
    expectEqual(
      await memory.getWorkingMemory({ resourceId, threadId: b.id }),
      '# Notes\n- likes tea',
      'another thread of the same resource sees it',
    );
    expectEqual(
      await memory.getWorkingMemory({ resourceId: ctx.id('r') }),
      null,
      'another resource sees nothing',
    );
    await expectRejects(memory.getWorkingMemory({ threadId: a.id }), ['INVALID_ARGUMENT'], 'no resourceId');
    await memory.updateWorkingMemory({ resourceId, workingMemory: '' });
    expectEqual(await memory.getWorkingMemory({ resourceId }), '', "'' round-trips through Memory");
  }),

  check(
    'thread scope: set at createThread/updateThread, invisible to other threads and scopes',
    async (ctx) => {
      const store = await ctx.store();
      const threadMemory = memoryOf(store, { scope: 'thread' });
      const resourceMemory = memoryOf(store, { scope: 'resource' });
      const resourceId = ctx.id('r');
      const a = await threadMemory.createThread({
        resourceId,
        threadId: ctx.id('t'),
        metadata: { workingMemory: 'A' },
      });
      const b = await threadMemory.createThread({ resourceId, threadId: ctx.id('t') });
      expectEqual(
        await threadMemory.getWorkingMemory({ threadId: a.id }),
        'A',
        'initial value from createThread',
      );
      expectEqual(
        await threadMemory.getWorkingMemory({ threadId: b.id }),
        null,
        'another thread sees nothing',
      );
      await threadMemory.updateThread({ id: b.id, metadata: { workingMemory: 'B' } });
      await threadMemory.updateWorkingMemory({ threadId: a.id, workingMemory: 'A2' });
      expectEqual(
        [
          await threadMemory.getWorkingMemory({ threadId: a.id }),
          await threadMemory.getWorkingMemory({ threadId: b.id }),
        ],
        ['A2', 'B'],
        'each thread keeps its own',
      );
      expectEqual(
        await resourceMemory.getWorkingMemory({ resourceId, threadId: a.id }),
        null,
        'resource scope is separate',
      );
      await resourceMemory.updateWorkingMemory({ resourceId, workingMemory: 'R' });
      expectEqual(
        await threadMemory.getWorkingMemory({ threadId: a.id }),
        'A2',
        'thread scope ignores the resource',
      );
      await expectRejects(
        threadMemory.getWorkingMemory({ threadId: ctx.id('t') }),
        ['NOT_FOUND'],
        'a missing thread',
      );
      await expectRejects(threadMemory.getWorkingMemory({ resourceId }), ['INVALID_ARGUMENT'], 'no threadId');
    },
  ),

  check('template mode: the template is reported and updates replace the document', async (ctx) => {
    const store = await ctx.store();
    const template = '# Profile\n- Name:\n- City:\n';
    const memory = memoryOf(store, { template });
    expectEqual(
      await memory.getWorkingMemoryTemplate(),
      { format: 'markdown', content: template },
      'template',
    );
    const fallback = await memoryOf(store, {}).getWorkingMemoryTemplate();
    expectTrue(fallback.format === 'markdown' && fallback.content.length > 0, 'a default template exists');
    const resourceId = ctx.id('r');
    await memory.updateWorkingMemory({
      resourceId,
      workingMemory: '# Profile\n- Name: Ada\n- City: Paris\n',
    });
    await memory.updateWorkingMemory({ resourceId, workingMemory: '# Profile\n- Name: Ada\n' });
    expectEqual(await memory.getWorkingMemory({ resourceId }), '# Profile\n- Name: Ada\n', 'replaced whole');
  }),

  check(
    `schema mode: deep merge, null deletes, arrays replace, VALIDATION writes nothing${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      requireAtomic(store);
      for (const scope of ['resource', 'thread'] as const) {
        const memory = memoryOf(store, { scope, schema: PROFILE_SCHEMA });
        const resourceId = ctx.id('r');
        const t = await memory.createThread({ resourceId, threadId: ctx.id('t') });
        const target = { resourceId, threadId: t.id };
        expectEqual((await memory.getWorkingMemoryTemplate()).format, 'json', `${scope}: template format`);
        await memory.mergeWorkingMemory({
          ...target,
          workingMemory: { name: 'Ada', tags: ['a', 'b'], prefs: { theme: 'dark', fonts: { mono: 'x' } } },
        });
        const merged = await memory.mergeWorkingMemory({
          ...target,
          workingMemory: JSON.stringify({
            tags: ['c'],
            prefs: { fonts: { mono: null, sans: 'y' } },
            age: 36,
          }),
        });
        const expected = {
          name: 'Ada',
          tags: ['c'],
          prefs: { theme: 'dark', fonts: { sans: 'y' } },
          age: 36,
        };
        expectEqual(merged, expected, `${scope}: the merge result`);
        expectEqual(
          JSON.parse((await memory.getWorkingMemory(target)) ?? 'null'),
          expected,
          `${scope}: stored`,
        );
        await expectRejects(
          memory.mergeWorkingMemory({ ...target, workingMemory: { age: -1 } }),
          ['VALIDATION'],
          `${scope}: a merge that breaks the schema`,
        );
        await expectRejects(
          memory.mergeWorkingMemory({ ...target, workingMemory: '[1]' }),
          ['INVALID_ARGUMENT'],
          `${scope}: a patch that is not an object`,
        );
        expectEqual(
          JSON.parse((await memory.getWorkingMemory(target)) ?? 'null'),
          expected,
          `${scope}: unchanged`,
        );
        const cleared = await memory.mergeWorkingMemory({
          ...target,
          workingMemory: { name: null, prefs: null },
        });
        expectEqual(cleared, { tags: ['c'], age: 36 }, `${scope}: null deletes keys`);
      }
    },
  ),

  check(
    'schema mode: thread memory set by createThread/updateThread must pass the schema (VALIDATION, nothing written)',
    async (ctx) => {
      const store = await ctx.store();
      const memory = memoryOf(store, { scope: 'thread', schema: PROFILE_SCHEMA });
      const resourceId = ctx.id('r');
      for (const bad of ['{"age":"old"}', 'hello', '[1]']) {
        const threadId = ctx.id('t');
        await expectRejects(
          memory.createThread({ resourceId, threadId, metadata: { workingMemory: bad } }),
          ['VALIDATION'],
          `createThread with workingMemory ${show(bad)}`,
        );
        expectEqual(await store.getThreadById({ threadId }), null, `no thread was created for ${show(bad)}`);
      }
      const thread = await memory.createThread({
        resourceId,
        threadId: ctx.id('t'),
        metadata: { workingMemory: '{"name":"Ada"}' },
      });
      for (const bad of ['{"age":"old"}', 'hello']) {
        await expectRejects(
          memory.updateThread({ id: thread.id, title: 'changed', metadata: { workingMemory: bad } }),
          ['VALIDATION'],
          `updateThread with workingMemory ${show(bad)}`,
        );
      }
      const stored = await store.getThreadById({ threadId: thread.id });
      expectEqual(stored?.title, '', 'the refused updateThread changed nothing (title)');
      expectEqual(stored?.metadata, { workingMemory: '{"name":"Ada"}' }, 'nor the metadata');
      const merged = await memory.applyWorkingMemoryPatch({ threadId: thread.id, patch: {} });
      expectEqual(merged, { name: 'Ada' }, 'an empty patch still merges afterwards');
      await memory.updateThread({ id: thread.id, metadata: { workingMemory: '{"age":3}' } });
      expectEqual(
        await memory.applyWorkingMemoryPatch({ threadId: thread.id, patch: { name: 'Bo' } }),
        { age: 3, name: 'Bo' },
        'a valid updateThread value is kept and merges',
      );
    },
  ),

  check(`schema mode: mergeWorkingMemory is UNSUPPORTED${FOR_NON_ATOMIC}`, async (ctx) => {
    const store = await ctx.store();
    if (capabilitiesOf(store).atomicWorkingMemory) {
      skipCheck('only for stores without capabilities.atomicWorkingMemory; this store declares it');
    }
    const memory = memoryOf(store, { schema: PROFILE_SCHEMA });
    expectEqual(await memory.supportsAtomicWorkingMemoryMerge(), false, 'supportsAtomicWorkingMemoryMerge()');
    await expectRejects(
      memory.mergeWorkingMemory({ resourceId: ctx.id('r'), workingMemory: { name: 'x' } }),
      ['UNSUPPORTED'],
      'mergeWorkingMemory',
    );
  }),

  check(
    `merges match the reference merge (${MERGE_RUNS} runs of random patches)${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      requireAtomic(store);
      const memory = memoryOf(store, { scope: 'resource', schema: { type: 'object' } });
      await assertProperty(
        fc.asyncProperty(
          fc.oneof(
            fc.constant(null),
            fc.constant('not json'),
            fc.constant('{"a":{"b":1,"n":null},"c":[null]}'),
          ),
          fc.array(patchArbitrary, { minLength: 1, maxLength: 4 }),
          async (initial, patches) => {
            const resourceId = ctx.id('r');
            if (initial !== null) await store.updateResource({ resourceId, workingMemory: initial });
            let expected: string | null = initial;
            for (const [i, patch] of patches.entries()) {
              const want = referenceMerge(expected, patch);
              const got = await memory.mergeWorkingMemory({ resourceId, workingMemory: patch });
              const stored = await memory.getWorkingMemory({ resourceId });
              if (JSON.stringify(sorted(got)) !== JSON.stringify(sorted(want)) || !sameJson(stored, want)) {
                throw new ConformanceError(
                  `merge ${i + 1} of ${patches.length} differs from the reference merge\n` +
                    `  initial: ${show(initial)}\n  patches: ${show(patches.slice(0, i + 1))}\n` +
                    `  reference: ${show(want)}\n  returned:  ${show(got)}\n  stored:    ${show(stored)}`,
                );
              }
              expected = JSON.stringify(want);
            }
          },
        ),
        { numRuns: MERGE_RUNS },
      );
    },
  ),

  check('editWorkingMemory: an atomic read-modify-write; a throwing edit writes nothing', async (ctx) => {
    const store = await ctx.store();
    const memory = memoryOf(store, { scope: 'resource' });
    const resourceId = ctx.id('r');
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        memory.editWorkingMemory({ resourceId, edit: (current: string | null) => `${current ?? ''}[${i}]` }),
      ),
    );
    const value = (await memory.getWorkingMemory({ resourceId })) ?? '';
    const found = Array.from({ length: 10 }, (_, i) => value.includes(`[${i}]`));
    expectTrue(found.every(Boolean), `all 10 concurrent edits must survive, got ${JSON.stringify(value)}`);
    const refusal = new Error('no');
    const error = await memory
      .editWorkingMemory({
        resourceId,
        edit: () => {
          throw refusal;
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expectTrue(error === refusal, "the edit function's error propagates as-is");
    expectEqual(await memory.getWorkingMemory({ resourceId }), value, 'nothing was written');
  }),
];

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

function sameJson(stored: string | null, want: JsonObject): boolean {
  if (stored === null) return false;
  try {
    return JSON.stringify(sorted(JSON.parse(stored))) === JSON.stringify(sorted(want));
  } catch {
    return false;
  }
}
