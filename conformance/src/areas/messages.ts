import { capabilitiesOf, type MemoryStorage, type Message, type Thread } from '@engram/core';
import { compareMessages, jsonEqual } from '@engram/core/driver';
import {
  expectDate,
  expectEqual,
  expectMemoryError,
  expectRejects,
  expectTrue,
  idsOf,
  normalize,
  show,
} from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { NEEDS_TRANSACTIONAL, skipCheck } from '../skip.ts';
import type { CheckContext } from '../types.ts';

const check = defineArea('messages');

/** A thread with `count` messages one second apart (`at(1000 * i)`), saved. */
async function seeded(ctx: CheckContext, store: MemoryStorage, count: number, resourceId = ctx.id('r')) {
  const t = thread(ctx.id('t'), resourceId);
  await store.saveThread(t);
  const messages = Array.from({ length: count }, (_, i) =>
    message(`${t.id}-m${String(i).padStart(2, '0')}`, t, at(1_000 * i)),
  );
  if (messages.length) await store.saveMessages(messages);
  return { thread: t, messages };
}

function sorted(messages: Message[], direction: 'ASC' | 'DESC' = 'ASC'): string[] {
  const out = [...messages].sort(compareMessages);
  return idsOf(direction === 'ASC' ? out : out.reverse());
}

async function updatedAt(store: MemoryStorage, t: Thread): Promise<number> {
  const stored = await store.getThreadById({ threadId: t.id });
  expectTrue(stored, `thread ${t.id} is missing`);
  expectDate(stored.updatedAt, 'thread.updatedAt');
  return stored.updatedAt.getTime();
}

/** Message storage, ordering, paging, ranges and include windows. */
export const messagesChecks = [
  check('ordered by (createdAt, id), equal createdAt broken by id, both directions', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    const same = at(500);
    // '～' (U+FF5E) before '😀' in UTF-8 bytes, after it in UTF-16 code units (JavaScript's `<`).
    const messages = ['b', 'a', 'C', 'é', '_', 'ab', '😀', '～'].map((s, i) =>
      message(`${t.id}-${s}`, t, i === 5 ? at(100) : same),
    );
    await store.saveMessages(messages);
    expectEqual(
      idsOf((await store.listMessages({ threadId: t.id })).messages),
      sorted(messages),
      'ASC order',
    );
    expectEqual(
      idsOf((await store.listMessages({ threadId: t.id, direction: 'DESC' })).messages),
      sorted(messages, 'DESC'),
      'DESC order',
    );
    expectEqual(
      idsOf(await store.listMessagesById({ ids: idsOf(messages).reverse() })),
      sorted(messages),
      'listMessagesById order',
    );
  }),

  check('pagination: page, perPage, total, hasMore; default perPage 40', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 45);
    const all = sorted(messages);
    const first = await store.listMessages({ threadId: t.id });
    expectEqual(idsOf(first.messages), all.slice(0, 40), 'default page');
    expectEqual(
      [first.total, first.page, first.perPage, first.hasMore],
      [45, 0, 40, true],
      'default paging fields',
    );
    const second = await store.listMessages({ threadId: t.id, page: 1 });
    expectEqual(idsOf(second.messages), all.slice(40), 'second default page');
    expectEqual(second.hasMore, false, 'hasMore on the last page');
    const desc = await store.listMessages({ threadId: t.id, perPage: 10, page: 1, direction: 'DESC' });
    expectEqual(idsOf(desc.messages), [...all].reverse().slice(10, 20), 'DESC page 1 of 10');
    const beyond = await store.listMessages({ threadId: t.id, perPage: 10, page: 7 });
    expectEqual([idsOf(beyond.messages), beyond.total, beyond.hasMore], [[], 45, false], 'past the end');
  }),

  check('perPage false returns every message; perPage 0 returns none (only windows)', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 45);
    const all = await store.listMessages({ threadId: t.id, perPage: false });
    expectEqual(idsOf(all.messages), sorted(messages), 'perPage false');
    expectEqual([all.total, all.perPage, all.hasMore], [45, false, false], 'perPage false paging fields');
    const none = await store.listMessages({ threadId: t.id, perPage: 0 });
    expectEqual(idsOf(none.messages), [], 'perPage 0 without include');
    expectEqual([none.total, none.perPage], [45, 0], 'perPage 0 total');
    const target = messages[20]!;
    const windows = await store.listMessages({
      threadId: t.id,
      perPage: 0,
      include: [{ id: target.id, withPreviousMessages: 2, withNextMessages: 1 }],
    });
    expectEqual(
      idsOf(windows.messages),
      idsOf(messages.slice(18, 22)),
      'perPage 0 with include: only the window',
    );
  }),

  check('date ranges: inclusive by default, exclusive bounds, open ends', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 6);
    const ids = async (dateRange: Parameters<MemoryStorage['listMessages']>[0]['dateRange']) => {
      const page = await store.listMessages({ threadId: t.id, dateRange });
      expectEqual(page.total, page.messages.length, 'total counts the rows in the range');
      return idsOf(page.messages);
    };
    const m = idsOf(messages);
    expectEqual(await ids({ start: at(1_000), end: at(3_000) }), m.slice(1, 4), 'inclusive [1s, 3s]');
    expectEqual(
      await ids({ start: at(1_000), end: at(3_000), startExclusive: true }),
      m.slice(2, 4),
      'startExclusive',
    );
    expectEqual(
      await ids({ start: at(1_000), end: at(3_000), endExclusive: true }),
      m.slice(1, 3),
      'endExclusive',
    );
    expectEqual(
      await ids({ start: at(1_000), end: at(3_000), startExclusive: true, endExclusive: true }),
      m.slice(2, 3),
      'both exclusive',
    );
    expectEqual(await ids({ start: at(4_000) }), m.slice(4), 'only start');
    expectEqual(await ids({ end: at(1_000) }), m.slice(0, 2), 'only end');
    expectEqual(await ids({ end: at(1_000), endExclusive: true }), m.slice(0, 1), 'only end, exclusive');
    expectEqual(await ids({ start: at(1_001), end: at(1_999) }), [], 'a range between two messages');
    expectEqual(await ids({ start: at(999), end: at(1_001) }), m.slice(1, 2), 'millisecond bounds');
  }),

  check('include windows: previous/next of the target, de-duplicated with the page, sorted', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 10);
    const m = idsOf(messages);
    const page = await store.listMessages({
      threadId: t.id,
      perPage: 2,
      include: [
        { id: m[5]!, withPreviousMessages: 1, withNextMessages: 1 },
        { id: m[1]!, withNextMessages: 1 },
        { id: m[9]! },
        { id: ctx.id('unknown'), withPreviousMessages: 3 },
      ],
    });
    expectEqual(idsOf(page.messages), [m[0], m[1], m[2], m[4], m[5], m[6], m[9]], 'page 0..1 + windows, ASC');
    expectEqual(page.total, 10, 'total counts the page rows only, not the windows');
    const desc = await store.listMessages({
      threadId: t.id,
      perPage: 1,
      direction: 'DESC',
      include: [{ id: m[0]!, withNextMessages: 2 }],
    });
    expectEqual(idsOf(desc.messages), [m[9], m[2], m[1], m[0]], 'windows merged into a DESC page');
    const edge = await store.listMessages({
      threadId: t.id,
      perPage: 0,
      include: [
        { id: m[0]!, withPreviousMessages: 5, withNextMessages: 0 },
        { id: m[9]!, withNextMessages: 5 },
      ],
    });
    expectEqual(idsOf(edge.messages), [m[0], m[9]], 'windows stop at the ends of the thread');
  }),

  check("include windows come from the target's own thread", async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const a = await seeded(ctx, store, 4, r);
    const b = await seeded(ctx, store, 4, r);
    const page = await store.listMessages({
      threadId: a.thread.id,
      perPage: 1,
      include: [{ id: b.messages[2]!.id, withPreviousMessages: 1, withNextMessages: 1 }],
    });
    const expected = [a.messages[0]!, ...b.messages.slice(1, 4)];
    expectEqual(idsOf(page.messages), sorted(expected), "page of A + window around B's message in B");
  }),

  check(
    'include windows of several threads come in one listing, even of a thread that does not exist',
    async (ctx) => {
      const store = await ctx.store();
      const r = ctx.id('r');
      const a = await seeded(ctx, store, 4, r);
      const b = await seeded(ctx, store, 4, r);
      const include = [
        { id: a.messages[1]!.id, withPreviousMessages: 1 },
        { id: b.messages[2]!.id, withNextMessages: 1 },
      ];
      const expected = sorted([a.messages[0]!, a.messages[1]!, b.messages[2]!, b.messages[3]!]);
      const fromA = await store.listMessages({ threadId: a.thread.id, resourceId: r, perPage: 0, include });
      expectEqual(idsOf(fromA.messages), expected, "listed from A: A's window and B's");
      const fromNone = await store.listMessages({
        threadId: ctx.id('gone'),
        resourceId: r,
        perPage: 0,
        include,
      });
      expectEqual(
        idsOf(fromNone.messages),
        expected,
        'listed from a thread that does not exist: both windows',
      );
    },
  ),

  check('include windows are restricted to resourceId', async (ctx) => {
    const store = await ctx.store();
    const mine = await seeded(ctx, store, 3);
    const theirs = await seeded(ctx, store, 5);
    const page = await store.listMessages({
      threadId: mine.thread.id,
      resourceId: mine.thread.resourceId,
      perPage: false,
      include: [{ id: theirs.messages[2]!.id, withPreviousMessages: 2, withNextMessages: 2 }],
    });
    expectEqual(
      idsOf(page.messages),
      idsOf(mine.messages),
      "a window around another resource's message must add nothing",
    );
    const own = await store.listMessages({
      threadId: theirs.thread.id,
      resourceId: mine.thread.resourceId,
      include: [{ id: theirs.messages[1]!.id, withNextMessages: 1 }],
    });
    expectEqual([idsOf(own.messages), own.total], [[], 0], "another resource's thread reads empty");
  }),

  check('saveMessages upserts by id', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 2);
    const changed = { ...messages[0]!, content: { edited: true }, role: 'assistant' as const, type: 'v2' };
    await store.saveMessages([changed]);
    const page = await store.listMessages({ threadId: t.id });
    expectEqual(page.messages, [changed, messages[1]], 'the message is replaced, not duplicated');
    expectEqual(page.total, 2, 'total');
  }),

  check('a message saved again with another threadId moves; both threads are bumped', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const old = new Date('2020-01-01T00:00:00.000Z');
    const from = thread(ctx.id('t'), r, { updatedAt: old });
    const to = thread(ctx.id('t'), r, { updatedAt: old });
    await store.saveThread(from);
    await store.saveThread(to);
    const m = message(ctx.id('m'), from, at(1));
    const stays = message(ctx.id('m'), from, at(2));
    await store.saveMessages([m, stays]);
    await store.saveThread({ ...from, updatedAt: old });
    const moved = { ...m, threadId: to.id };
    await store.saveMessages([moved]);
    expectEqual((await store.listMessages({ threadId: from.id })).messages, [stays], 'the old thread');
    expectEqual((await store.listMessages({ threadId: to.id })).messages, [moved], 'the new thread');
    expectEqual(await store.listMessagesById({ ids: [m.id] }), [moved], 'one copy by id');
    expectTrue((await updatedAt(store, from)) > old.getTime(), 'the old thread updatedAt must be bumped');
    expectTrue((await updatedAt(store, to)) > old.getTime(), 'the new thread updatedAt must be bumped');
  }),

  check('saveMessages and deleteMessages bump the thread updatedAt', async (ctx) => {
    const store = await ctx.store();
    const old = new Date('2020-01-01T00:00:00.000Z');
    const t = thread(ctx.id('t'), ctx.id('r'), { createdAt: old, updatedAt: old });
    await store.saveThread(t);
    const m = message(ctx.id('m'), t, at(1));
    await store.saveMessages([m]);
    expectTrue((await updatedAt(store, t)) > old.getTime(), 'saveMessages must bump updatedAt');
    await store.saveThread(t);
    await store.deleteMessages([m.id, ctx.id('unknown')]);
    expectTrue((await updatedAt(store, t)) > old.getTime(), 'deleteMessages must bump updatedAt');
    expectEqual(await store.listMessagesById({ ids: [m.id] }), [], 'the message is deleted');
    const stored = await store.getThreadById({ threadId: t.id });
    expectDate(stored?.createdAt, 'createdAt is unchanged', old);
  }),

  check(
    `saveMessages is all-or-nothing: a batch failing at a missing thread, or naming another resource, writes nothing${NEEDS_TRANSACTIONAL}`,
    async (ctx) => {
      const store = await ctx.store();
      if (!capabilitiesOf(store).transactionalBatches) {
        skipCheck(
          'checks capabilities.transactionalBatches: true; this store declares false (its weaker promise is checked instead)',
        );
      }
      const t = thread(ctx.id('t'), ctx.id('r'));
      await store.saveThread(t);
      const good = message(ctx.id('m'), t, at(1));
      const orphan = message(ctx.id('m'), { id: ctx.id('missing'), resourceId: t.resourceId }, at(2));
      await expectRejects(
        store.saveMessages([good, orphan]),
        ['NOT_FOUND'],
        'saveMessages with a missing thread',
      );
      expectEqual(await store.listMessagesById({ ids: [good.id, orphan.id] }), [], 'nothing was saved');
      const foreign = message(ctx.id('m'), { id: t.id, resourceId: ctx.id('other') }, at(3));
      await expectRejects(
        store.saveMessages([good, foreign]),
        ['INVALID_ARGUMENT'],
        "saveMessages with a resourceId other than the thread's",
      );
      expectEqual(await store.listMessagesById({ ids: [good.id, foreign.id] }), [], 'nothing was saved');
      expectEqual((await store.listMessages({ threadId: t.id })).total, 0, 'the thread is still empty');
    },
  ),

  check(
    'a batch that failed at a missing thread leaves only exact messages, and saving it again completes it (every store; the whole promise of transactionalBatches: false)',
    async (ctx) => {
      const store = await ctx.store();
      const r = ctx.id('r');
      const first = thread(ctx.id('t'), r);
      const late = thread(ctx.id('t-late'), r);
      await store.saveThread(first);
      const existing = message(ctx.id('m'), first, at(0), { content: { text: 'before' } });
      await store.saveMessages([existing]);
      const batch = [
        { ...existing, content: { text: 'edited by the batch' } },
        message(ctx.id('m'), first, at(1), { content: { text: 'one' } }),
        message(ctx.id('m'), late, at(2), { content: { text: 'into the late thread' } }),
        message(ctx.id('m'), first, at(3), { content: { text: 'three' } }),
      ];
      await expectRejects(
        store.saveMessages(batch),
        ['NOT_FOUND'],
        'a batch with a thread that does not exist yet',
      );
      const given = new Map<string, Message>([
        [existing.id, existing],
        ...batch.map((m) => [m.id, m] as const),
      ]);
      const alternatives = new Map<string, Message[]>([[existing.id, [existing, batch[0] as Message]]]);
      for (const left of await store.listMessagesById({ ids: idsOf(batch) })) {
        const allowed = alternatives.get(left.id) ?? [given.get(left.id) as Message];
        expectTrue(
          allowed.some((m) => jsonEqual(normalize(m), normalize(left))),
          `message ${left.id} left by the failed batch must be as it was or exactly as given, got ${show(left)}`,
        );
        expectTrue(
          left.threadId === first.id,
          `message ${left.id} left by the failed batch is in its own thread`,
        );
      }
      await store.saveThread(late);
      expectEqual(await store.saveMessages(batch), batch, 'the batch saved again');
      expectEqual(
        (await store.listMessages({ threadId: first.id, perPage: false })).messages,
        batch.filter((m) => m.threadId === first.id),
        'the first thread holds the batch, each message once',
      );
      expectEqual(
        (await store.listMessages({ threadId: late.id, perPage: false })).messages,
        batch.filter((m) => m.threadId === late.id),
        'the late thread holds its message',
      );
    },
  ),

  check('listMessagesById returns the found ones in (createdAt, id) order', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const a = await seeded(ctx, store, 3, r);
    const b = await seeded(ctx, store, 2, r);
    const ids = [
      b.messages[1]!.id,
      ctx.id('unknown'),
      a.messages[2]!.id,
      a.messages[0]!.id,
      b.messages[0]!.id,
    ];
    const found = await store.listMessagesById({ ids });
    expectEqual(
      idsOf(found),
      sorted([b.messages[1]!, a.messages[2]!, a.messages[0]!, b.messages[0]!]),
      'found messages across threads, ordered',
    );
  }),

  check('updateMessages: partial update by id, unknown ids ignored', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 3);
    const [m0, m1, m2] = messages as [Message, Message, Message];
    const result = await store.updateMessages([
      { id: m0.id, content: { parts: ['new'] } },
      { id: m1.id, role: 'assistant', type: 'v2', createdAt: at(9_000) },
      { id: ctx.id('unknown'), content: 'ignored' },
    ]);
    const e0 = { ...m0, content: { parts: ['new'] } };
    const e1 = { ...m1, role: 'assistant' as const, type: 'v2', createdAt: at(9_000) };
    expectEqual(result, [e0, e1], 'updateMessages() returns the updated messages, ordered');
    expectEqual(
      (await store.listMessages({ threadId: t.id })).messages,
      [e0, m2, e1],
      'stored and re-ordered',
    );
    await store.updateMessages([{ id: m2.id, content: null }]);
    expectEqual((await store.listMessagesById({ ids: [m2.id] }))[0]?.content, null, 'content set to null');
  }),

  check(
    'content replaced by the same values under other keys is stored (saveMessages, updateMessages)',
    async (ctx) => {
      const store = await ctx.store();
      // Read back through another instance (its own connection) so nothing cached can answer.
      const reader = capabilitiesOf(store).processLocal ? store : await ctx.store();
      const { messages } = await seeded(ctx, store, 3);
      const [m0, m1, m2] = messages as [Message, Message, Message];
      await store.saveMessages([
        { ...m0, content: { name: 'Ada' } },
        { ...m1, content: [{ type: 'text', text: 'hi' }] },
        { ...m2, content: { parts: { a: { b: 1 } } } },
      ]);
      const resaved: Message[] = [
        { ...m0, content: { nick: 'Ada' } },
        { ...m1, content: [{ kind: 'text', body: 'hi' }] },
        { ...m2, content: { parts: { a: { c: 1 } } } },
      ];
      expectEqual(await store.saveMessages(resaved), resaved, 'saveMessages() return value');
      expectEqual(await reader.listMessagesById({ ids: idsOf(messages) }), resaved, 'messages saved again');

      const patched: Message[] = [
        { ...m0, content: { name: 'Ada' } },
        { ...m1, content: [{ type: 'text', text: 'hi' }] },
        { ...m2, content: { parts: { a: { b: 1 } } } },
      ];
      const result = await store.updateMessages(patched.map((m) => ({ id: m.id, content: m.content })));
      expectEqual(result, patched, 'updateMessages() return value');
      expectEqual(
        await reader.listMessagesById({ ids: idsOf(messages) }),
        patched,
        'messages after updateMessages',
      );
    },
  ),

  check('listMessages filters by resourceId and reads empty for an unknown thread', async (ctx) => {
    const store = await ctx.store();
    const { thread: t, messages } = await seeded(ctx, store, 3);
    const own = await store.listMessages({ threadId: t.id, resourceId: t.resourceId });
    expectEqual(idsOf(own.messages), idsOf(messages), 'own resource');
    const none = await store.listMessages({ threadId: ctx.id('t') });
    expectEqual([none.messages, none.total, none.hasMore], [[], 0, false], 'an unknown thread');
  }),

  check(
    'a NUL character in content, metadata or a title is stored exactly, or refused with INVALID_ARGUMENT writing nothing',
    async (ctx) => {
      const store = await ctx.store();
      const nul = 'before \u0000 after';
      const outcomes: string[] = [];
      /** Runs `write`; refused, `stored` must read nothing, else exactly `expected`. */
      const stores = async (
        what: string,
        write: () => Promise<unknown>,
        stored: () => Promise<unknown>,
        expected: unknown,
      ) => {
        let refused = false;
        try {
          await write();
        } catch (error) {
          expectMemoryError(error, ['INVALID_ARGUMENT'], what);
          refused = true;
        }
        expectEqual(normalize(await stored()), normalize(refused ? null : expected), `${what}: read back`);
        outcomes.push(`${what} ${refused ? 'refused' : 'stored'}`);
      };
      const t = thread(ctx.id('t'), ctx.id('r'));
      await store.saveThread(t);
      const titled = { ...thread(ctx.id('titled'), ctx.id('r')), title: nul };
      await stores(
        'a title',
        () => store.saveThread(titled),
        async () => (await store.getThreadById({ threadId: titled.id }))?.title ?? null,
        nul,
      );
      const plain = message(`${t.id}-plain`, t, at(0));
      const odd = message(`${t.id}-odd`, t, at(1), { content: { text: nul, [nul]: [nul] } });
      // The batch holds a plain message too: refused, neither is saved (atomic batches).
      const batch = capabilitiesOf(store).transactionalBatches ? [plain, odd] : [odd];
      await stores(
        'content',
        () => store.saveMessages(batch),
        async () => {
          const found = await store.listMessagesById({ ids: batch.map((m) => m.id) });
          return found.length === 0 ? null : found;
        },
        batch,
      );
      const metadata = { note: nul };
      const resourceId = ctx.id('meta');
      await stores(
        'resource metadata',
        () => store.updateResource({ resourceId, metadata }),
        async () => (await store.getResourceById({ resourceId }))?.metadata ?? null,
        metadata,
      );
      ctx.log(outcomes.join(', '));
    },
  ),
];
