import { capabilitiesOf } from '@engram/core';
import { compareIds } from '@engram/core/driver';
import { expectDate, expectEqual, expectRejects, expectTrue } from '../assert.ts';
import { defineArea } from '../define.ts';
import { thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import { HOSTILE_SUFFIXES } from './isolation.ts';

const check = defineArea('resources');

/** Resource reads and updates. */
export const resourcesChecks = [
  check('getResourceById is null when absent', async (ctx) => {
    const store = await ctx.store();
    expectEqual(await store.getResourceById({ resourceId: ctx.id('r') }), null, 'absent resource');
  }),

  check('updateResource creates a missing resource', async (ctx) => {
    const store = await ctx.store();
    const id = ctx.id('r');
    const before = Date.now();
    const created = await store.updateResource({ resourceId: id, metadata: { plan: 'pro' } });
    expectEqual(
      { id: created.id, workingMemory: created.workingMemory, metadata: created.metadata },
      { id, workingMemory: null, metadata: { plan: 'pro' } },
      'the created resource',
    );
    expectDate(created.createdAt, 'createdAt');
    expectDate(created.updatedAt, 'updatedAt');
    expectTrue(created.createdAt.getTime() >= before - 60_000, 'createdAt is about now');
    expectEqual(await store.getResourceById({ resourceId: id }), created, 'a read returns what was created');
    const bare = ctx.id('r');
    const empty = await store.updateResource({ resourceId: bare });
    expectEqual([empty.workingMemory, empty.metadata], [null, {}], 'a resource created with nothing');
  }),

  check('updateResource replaces workingMemory only when given; metadata shallow-merged', async (ctx) => {
    const store = await ctx.store();
    const id = ctx.id('r');
    const first = await store.updateResource({
      resourceId: id,
      workingMemory: '# Notes',
      metadata: { a: 1, nested: { x: 1, y: 2 } },
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await store.updateResource({ resourceId: id, metadata: { b: 2, nested: { z: 3 } } });
    expectEqual(second.workingMemory, '# Notes', 'workingMemory kept when omitted');
    expectEqual(second.metadata, { a: 1, b: 2, nested: { z: 3 } }, 'metadata is shallow-merged');
    expectDate(second.createdAt, 'createdAt is kept', first.createdAt);
    expectTrue(second.updatedAt.getTime() > first.updatedAt.getTime(), 'updateResource must bump updatedAt');
    const third = await store.updateResource({ resourceId: id, workingMemory: null });
    expectEqual([third.workingMemory, third.metadata], [null, second.metadata], 'null clears working memory');
    const fourth = await store.updateResource({ resourceId: id, workingMemory: '' });
    expectEqual(fourth.workingMemory, '', "'' is stored as ''");
    expectEqual(await store.getResourceById({ resourceId: id }), fourth, 'a read returns the last update');
  }),

  check('resource metadata replaced by the same values under other keys is stored', async (ctx) => {
    const store = await ctx.store();
    // Read back through another instance (its own connection) so nothing cached can answer.
    const reader = capabilitiesOf(store).processLocal ? store : await ctx.store();
    const resourceId = ctx.id('r');
    await store.updateResource({
      resourceId,
      workingMemory: 'kept',
      metadata: { flags: { beta: true }, list: [{ a: 'x' }], deep: { a: { b: 2 } }, other: { k: 1 } },
    });
    const merged = await store.updateResource({
      resourceId,
      metadata: { flags: { alpha: true }, list: [{ b: 'x' }], deep: { a: { c: 2 } } },
    });
    const expected = { flags: { alpha: true }, list: [{ b: 'x' }], deep: { a: { c: 2 } }, other: { k: 1 } };
    expectEqual(merged.metadata, expected, 'updateResource() return value');
    const stored = await reader.getResourceById({ resourceId });
    expectEqual([stored?.workingMemory, stored?.metadata], ['kept', expected], 'the stored resource');
  }),

  check(
    'listResourceIds pages every stored resource once, ascending in UTF-8 byte order, hostile ids included [needs listResourceIds]',
    async (ctx) => {
      const store = await ctx.store();
      if (!store.listResourceIds) skipCheck(`${store.name} does not list resources (listResourceIds)`);
      const list = store.listResourceIds.bind(store);
      const base = ctx.id('list');
      // Ids whose byte order differs from UTF-16 order and from any locale's (é vs z, 𝔸 vs ｚ).
      const suffixes = ['z', 'é', 'ｚ', '𝔸', 'A', '0', ...HOSTILE_SUFFIXES];
      const ids = suffixes.map((s) => `${base}${s}`);
      for (const resourceId of ids) await store.updateResource({ resourceId, workingMemory: resourceId });
      // A thread alone does not make a resource record.
      await store.saveThread(thread(`${base}-t`, `${base}-threadonly`));
      const want = [...ids].sort(compareIds);
      // Walk from just before the prefix, in pages of 3, until past it.
      const seen: string[] = [];
      let after: string | undefined = base.slice(0, -1);
      for (;;) {
        const page = await list({ after, limit: 3 });
        const mine = page.filter((id) => id.startsWith(base));
        seen.push(...mine);
        if (page.length < 3 || mine.length < page.length) break;
        after = page[page.length - 1];
      }
      expectEqual(seen, want, 'the resources of this check, in pages of 3');
      await expectRejects(() => list({ limit: 0 }), ['INVALID_ARGUMENT'], 'limit 0');
      await expectRejects(() => list({ after: '' }), ['INVALID_ARGUMENT'], "after ''");
    },
  ),
];
