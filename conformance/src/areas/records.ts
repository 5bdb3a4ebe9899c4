import type { Message, Resource, Thread } from '@engram/core';
import { expectDate, expectEqual, expectTrue } from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, partsContent, richMetadata, thread } from '../fixtures.ts';

const check = defineArea('records');

function expectThread(actual: Thread | null, expected: Thread, what: string): void {
  expectTrue(actual, `${what}: thread ${expected.id} not found`);
  expectDate(actual.createdAt, `${what}: thread.createdAt`, expected.createdAt);
  expectDate(actual.updatedAt, `${what}: thread.updatedAt`, expected.updatedAt);
  expectEqual(actual.title, expected.title, `${what}: thread.title`);
  expectEqual(actual, expected, what);
}

function expectMessage(actual: Message | undefined, expected: Message, what: string): void {
  expectTrue(actual, `${what}: message ${expected.id} not found`);
  expectDate(actual.createdAt, `${what}: message.createdAt`, expected.createdAt);
  expectEqual(actual, expected, what);
}

function expectResourceDates(resource: Resource, what: string): void {
  expectDate(resource.createdAt, `${what}: resource.createdAt`);
  expectDate(resource.updatedAt, `${what}: resource.updatedAt`);
}

/** Records round-trip exactly. */
export const recordsChecks = [
  check("thread round-trips: '' title, metadata JSON, Dates with milliseconds", async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'), {
      title: '',
      metadata: richMetadata(),
      createdAt: new Date('2023-04-05T06:07:08.009Z'),
      updatedAt: new Date('2023-04-05T06:07:08.987Z'),
    });
    expectThread(await store.saveThread(t), t, 'saveThread() return value');
    expectThread(await store.getThreadById({ threadId: t.id }), t, 'getThreadById()');
    const listed = await store.listThreads({ resourceId: t.resourceId });
    expectThread(listed.threads[0] ?? null, t, 'listThreads()');
  }),

  check("thread-scoped working memory '' round-trips as ''", async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'), { metadata: { workingMemory: '' } });
    await store.saveThread(t);
    const got = await store.getThreadById({ threadId: t.id });
    expectEqual(got?.metadata.workingMemory, '', 'metadata.workingMemory after saveThread');
    await store.updateThread({ id: t.id, title: '', metadata: { workingMemory: '' } });
    const updated = await store.getThreadById({ threadId: t.id });
    expectEqual(updated?.title, '', "title after updateThread({ title: '' })");
    expectEqual(updated?.metadata.workingMemory, '', 'metadata.workingMemory after updateThread');
  }),

  check('message content round-trips deep-equal: strings, parts shape, any JSON', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    const contents = [
      'plain text',
      '',
      partsContent('héllo wörld 👋🏽 — 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 中文, עברית'),
      ['a', 1, null, { b: [] }],
      { nested: { 'key with spaces': 'v', quote: '"\'`', slash: '\\/' } },
      42.5,
      null,
      true,
    ];
    const messages = contents.map((content, i) =>
      message(ctx.id(`m${i}`), t, at(i * 1_000 + 1), {
        content,
        role: (['user', 'assistant', 'system', 'tool'] as const)[i % 4],
        type: i % 2 ? 'v2' : 'text',
      }),
    );
    const saved = await store.saveMessages(messages);
    expectEqual(saved, messages, 'saveMessages() return value');
    const page = await store.listMessages({ threadId: t.id });
    messages.forEach((m, i) => {
      expectMessage(page.messages[i], m, `listMessages() message ${i}`);
    });
    const byId = await store.listMessagesById({ ids: messages.map((m) => m.id) });
    messages.forEach((m, i) => {
      expectMessage(byId[i], m, `listMessagesById() message ${i}`);
    });
  }),

  check(
    'numbers come back as JSON carries them (metadata and content): -0 as 0; 1e308, 5e-324 and 2^53 − 1 exactly',
    async (ctx) => {
      const store = await ctx.store();
      const numbers = {
        zero: -0,
        huge: 1e308,
        tiny: 5e-324,
        safe: Number.MAX_SAFE_INTEGER,
        nested: [-0, { zero: -0 }],
      };
      const t = thread(ctx.id('t'), ctx.id('r'), { metadata: numbers });
      await store.saveThread(t);
      const m = message(ctx.id('m'), t, at(1), { content: numbers });
      await store.saveMessages([m]);
      const read = {
        'getThreadById() metadata': (await store.getThreadById({ threadId: t.id }))?.metadata,
        'listMessagesById() content': (await store.listMessagesById({ ids: [m.id] }))[0]?.content,
      };
      for (const [what, value] of Object.entries(read)) {
        const got = value as typeof numbers | undefined;
        expectEqual(got, { ...numbers, zero: 0, nested: [0, { zero: 0 }] }, what);
        for (const [path, zero] of [
          ['zero', got?.zero],
          ['nested[0]', got?.nested[0]],
          ['nested[1].zero', (got?.nested[1] as { zero: number } | undefined)?.zero],
        ] as const) {
          expectTrue(
            Object.is(zero, 0),
            `${what}: ${path} must be 0, as JSON text has no -0 (got ${Object.is(zero, -0) ? '-0' : String(zero)})`,
          );
        }
      }
    },
  ),

  check('message createdAt keeps milliseconds and comes back as a Date', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    const dates = [
      new Date('2024-02-29T23:59:59.999Z'),
      new Date('1999-12-31T23:59:59.001Z'),
      new Date('2038-01-19T03:14:08.500Z'),
    ];
    const messages = dates.map((d, i) => message(ctx.id(`m${i}`), t, d));
    await store.saveMessages(messages);
    const listed = await store.listMessagesById({ ids: messages.map((m) => m.id) });
    const sorted = [...messages].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    sorted.forEach((m, i) => {
      expectDate(listed[i]?.createdAt, `message ${i} createdAt`, m.createdAt);
    });
  }),

  check("resource working memory round-trips: '', null, unicode Markdown", async (ctx) => {
    const store = await ctx.store();
    const id = ctx.id('r');
    const created = await store.updateResource({ resourceId: id, workingMemory: '' });
    expectEqual(created.workingMemory, '', "updateResource({ workingMemory: '' }) return value");
    expectResourceDates(created, 'updateResource()');
    const got = await store.getResourceById({ resourceId: id });
    expectTrue(got, 'resource not found after updateResource()');
    expectEqual(got.workingMemory, '', "workingMemory '' after a read");
    expectResourceDates(got, 'getResourceById()');

    const markdown = '# User\n- Name: Zoë Ω\n- Likes: 🍣, "quotes", back\\slash\n\n| a | b |\n|---|---|\n';
    await store.updateResource({ resourceId: id, workingMemory: markdown });
    expectEqual((await store.getResourceById({ resourceId: id }))?.workingMemory, markdown, 'Markdown');

    await store.updateResource({ resourceId: id, workingMemory: null });
    expectEqual((await store.getResourceById({ resourceId: id }))?.workingMemory, null, 'null clears it');

    const other = ctx.id('r');
    const fresh = await store.updateResource({ resourceId: other, metadata: richMetadata() });
    expectEqual(fresh.workingMemory, null, 'a resource created without workingMemory has null');
    expectEqual(
      (await store.getResourceById({ resourceId: other }))?.metadata,
      richMetadata(),
      'resource metadata JSON round-trip',
    );
  }),
];
