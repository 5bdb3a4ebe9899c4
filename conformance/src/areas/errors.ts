import { inspect } from 'node:util';
import { capabilitiesOf, type JsonValue, type MemoryStorage } from '@engram/core';
import { MAX_JSON_DEPTH, MAX_LISTING_COUNT, MAX_TYPE_LENGTH, STORED_DATES } from '@engram/core/driver';
import {
  ConformanceError,
  describeError,
  expectEqual,
  expectMemoryError,
  expectRejects,
  expectTrue,
  idsOf,
  show,
} from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { NEEDS_ATOMIC, requireAtomic } from '../skip.ts';
import type { CheckContext, ConformanceInit } from '../types.ts';

const check = defineArea('errors');

/** Ids that must be rejected with `INVALID_ARGUMENT` before they reach a database. */
export const BAD_IDS: readonly unknown[] = [
  '',
  'x'.repeat(256),
  42,
  null,
  undefined,
  { $gt: '' },
  ['a'],
  { toString: () => 'a' },
];

const noBreak = (init: ConformanceInit) =>
  init.breakConnection ? undefined : 'no breakConnection hook supplied';

const noSecret = (init: ConformanceInit) => (init.withSecret ? undefined : 'no withSecret hook supplied');

/**
 * Every text a logger may print of an error: its message, `String(error)`, its stack, the
 * inspected and JSON forms, and the same of each cause and `AggregateError` member.
 */
function loggedTexts(error: unknown): string[] {
  const texts = [inspect(error, { depth: 10 }), safeJson(error)];
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 10 || seen.has(value)) return;
    seen.add(value);
    texts.push(String(value));
    if (!(value instanceof Error)) return;
    texts.push(value.message, value.stack ?? '', safeJson(value));
    if (value.cause !== undefined) visit(value.cause, depth + 1);
    if (value instanceof AggregateError) for (const member of value.errors) visit(member, depth + 1);
  };
  visit(error, 0);
  return texts;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/** The error `call` rejects (or throws) with; a `ConformanceError` when it succeeds. */
async function failureOf(call: () => unknown, what: string): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new ConformanceError(`${what} succeeded; withSecret must give stores whose every call fails`);
}

/** A store with a thread and a message in it, then broken through `breakConnection`. */
async function brokenStore(ctx: CheckContext) {
  const store = await ctx.store();
  const t = thread(ctx.id('t'), ctx.id('r'));
  await store.saveThread(t);
  const m = message(ctx.id('m'), t, at(1));
  await store.saveMessages([m]);
  await store.updateResource({ resourceId: t.resourceId, workingMemory: 'wm' });
  await ctx.init.breakConnection!(store);
  return { store, thread: t, message: m };
}

/** A read on a broken backend must throw STORAGE or CONNECTION; an empty answer is a lie. */
async function expectReadFails(read: () => Promise<unknown>, what: string): Promise<void> {
  let value: unknown;
  try {
    value = await read();
  } catch (error) {
    expectMemoryError(error, ['STORAGE', 'CONNECTION'], `${what} on a broken backend`);
    return;
  }
  throw new ConformanceError(
    `${what} on a broken backend must throw MemoryError STORAGE/CONNECTION, but it returned ${show(value, 300)}`,
  );
}

/** Numbers no count argument accepts: out of 0..2³¹−1, fractions, non-finite, not numbers. */
const BAD_COUNTS: readonly unknown[] = [
  -1,
  1.5,
  MAX_LISTING_COUNT + 1,
  2 ** 31,
  1e18,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_VALUE,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  '1',
  null,
];

/** Dates no date argument accepts. */
const BAD_DATES: readonly unknown[] = [new Date(Number.NaN), new Date(8.64e15 + 1), '2024-01-01', 0];

/** Fails unless `call` rejects with `INVALID_ARGUMENT` whose message names `field` (and `range`). */
async function expectBound(
  call: () => Promise<unknown>,
  field: string,
  range: string | undefined,
  what: string,
): Promise<void> {
  await expectRejects(call, ['INVALID_ARGUMENT'], what);
  const error = await call().catch((e: unknown) => e);
  const text = error instanceof Error ? error.message : '';
  for (const part of [field, range]) {
    if (part !== undefined && !text.includes(part)) {
      throw new ConformanceError(`${what}: the message must name ${JSON.stringify(part)}, got ${show(text)}`);
    }
  }
}

/** A call with a bad id in one position; `optional` ids accept `undefined`. */
type Call = [string, (store: MemoryStorage, id: never) => Promise<unknown>, optional?: 'optional'];

/** Every call that takes an id, with the bad id in that position. */
const ID_CALLS: Call[] = [
  ['getThreadById({ threadId })', (s, id) => s.getThreadById({ threadId: id })],
  [
    'getThreadById({ resourceId })',
    (s, id) => s.getThreadById({ threadId: 'ok', resourceId: id }),
    'optional',
  ],
  ['saveThread(id)', (s, id) => s.saveThread(thread(id, 'r'))],
  ['saveThread(resourceId)', (s, id) => s.saveThread(thread('ok', id))],
  ['updateThread({ id })', (s, id) => s.updateThread({ id, title: 'x' })],
  ['deleteThread({ threadId })', (s, id) => s.deleteThread({ threadId: id })],
  ['listThreads({ resourceId })', (s, id) => s.listThreads({ resourceId: id }), 'optional'],
  ['listMessages({ threadId })', (s, id) => s.listMessages({ threadId: id })],
  ['listMessages({ resourceId })', (s, id) => s.listMessages({ threadId: 'ok', resourceId: id }), 'optional'],
  ['listMessages({ include: [{ id }] })', (s, id) => s.listMessages({ threadId: 'ok', include: [{ id }] })],
  ['listMessagesById({ ids })', (s, id) => s.listMessagesById({ ids: [id] })],
  ['deleteMessages(ids)', (s, id) => s.deleteMessages([id])],
  ['updateMessages([{ id }])', (s, id) => s.updateMessages([{ id, content: 'x' }])],
  ['getResourceById({ resourceId })', (s, id) => s.getResourceById({ resourceId: id })],
  ['updateResource({ resourceId })', (s, id) => s.updateResource({ resourceId: id, workingMemory: 'x' })],
];

/** Bad input is rejected with the right code and leaves storage unchanged; failures are loud. */
export const errorsChecks = [
  check(
    `bad ids are rejected with INVALID_ARGUMENT (${BAD_IDS.length} kinds × ${ID_CALLS.length} calls)`,
    async (ctx) => {
      const store = await ctx.store();
      for (const [what, call, optional] of ID_CALLS) {
        for (const bad of BAD_IDS) {
          if (bad === undefined && optional) continue;
          await expectRejects(
            () => call(store, bad as never),
            ['INVALID_ARGUMENT'],
            `${what} with id ${show(bad)}`,
          );
        }
      }
    },
  ),

  check('a batch with one bad message saves nothing', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'));
    await store.saveThread(t);
    const good = message(ctx.id('m'), t, at(1));
    const bads = [
      { ...message(ctx.id('m'), t, at(2)), id: { $gt: '' } },
      { ...message(ctx.id('m'), t, at(2)), role: 'robot' },
      { ...message(ctx.id('m'), t, at(2)), createdAt: 'yesterday' },
      { ...message(ctx.id('m'), t, at(2)), content: undefined },
      { ...good },
    ];
    for (const bad of bads) {
      await expectRejects(
        () => store.saveMessages([good, bad as never]),
        ['INVALID_ARGUMENT'],
        `saveMessages with ${show(bad, 200)}`,
      );
    }
    expectEqual((await store.listMessages({ threadId: t.id })).total, 0, 'nothing was saved');
  }),

  check('bad records and options are rejected with INVALID_ARGUMENT and change nothing', async (ctx) => {
    const store = await ctx.store();
    const t = thread(ctx.id('t'), ctx.id('r'), { metadata: { keep: 1 } });
    await store.saveThread(t);
    const cases: [string, () => Promise<unknown>][] = [
      ['saveThread with a string createdAt', () => store.saveThread({ ...t, createdAt: '2024' as never })],
      ['saveThread with metadata an array', () => store.saveThread({ ...t, metadata: [] as never })],
      ['saveThread with title null', () => store.saveThread({ ...t, title: null as never })],
      ['updateThread with metadata a string', () => store.updateThread({ id: t.id, metadata: 'x' as never })],
      [
        'updateThread with metadata holding NaN',
        () => store.updateThread({ id: t.id, metadata: { n: Number.NaN } }),
      ],
      [
        'updateResource with workingMemory 42',
        () => store.updateResource({ resourceId: t.resourceId, workingMemory: 42 as never }),
      ],
      ['listThreads with perPage -1', () => store.listThreads({ resourceId: t.resourceId, perPage: -1 })],
      ['listMessages with page 1.5', () => store.listMessages({ threadId: t.id, page: 1.5 })],
      [
        'listMessages with direction up',
        () => store.listMessages({ threadId: t.id, direction: 'up' as never }),
      ],
      [
        'listMessages with a string date',
        () => store.listMessages({ threadId: t.id, dateRange: { start: 'x' as never } }),
      ],
      [
        'listThreads with a string date',
        () => store.listThreads({ resourceId: t.resourceId, dateRange: { end: 'x' as never } }),
      ],
      [
        'listThreads with an unknown dateRange key',
        () => store.listThreads({ dateRange: { after: at(0) } as never }),
      ],
      [
        "listMessages with startExclusive 'yes'",
        () =>
          store.listMessages({ threadId: t.id, dateRange: { start: at(0), startExclusive: 'yes' as never } }),
      ],
      [
        'listThreads with endExclusive 1',
        () => store.listThreads({ dateRange: { end: at(0), endExclusive: 1 as never } }),
      ],
    ];
    for (const [what, call] of cases) await expectRejects(call, ['INVALID_ARGUMENT'], what);
    expectEqual(await store.getThreadById({ threadId: t.id }), t, 'the thread is unchanged');
    expectEqual(await store.getResourceById({ resourceId: t.resourceId }), null, 'no resource was created');
  }),

  check(
    `numbers out of 0..${MAX_LISTING_COUNT}, fractions, NaN, Infinity, strings and invalid dates are INVALID_ARGUMENT naming the argument`,
    async (ctx) => {
      const store = await ctx.store();
      const t = thread(ctx.id('t'), ctx.id('r'));
      await store.saveThread(t);
      const m = message(ctx.id('m'), t, at(1));
      await store.saveMessages([m]);
      const max = String(MAX_LISTING_COUNT);
      for (const bad of BAD_COUNTS) {
        const n = bad as number;
        const cases: [string, () => Promise<unknown>][] = [
          ['page', () => store.listThreads({ resourceId: t.resourceId, page: n })],
          ['perPage', () => store.listThreads({ resourceId: t.resourceId, perPage: n })],
          ['page', () => store.listMessages({ threadId: t.id, page: n })],
          ['perPage', () => store.listMessages({ threadId: t.id, perPage: n })],
          [
            'withPreviousMessages',
            () => store.listMessages({ threadId: t.id, include: [{ id: m.id, withPreviousMessages: n }] }),
          ],
          [
            'withNextMessages',
            () => store.listMessages({ threadId: t.id, include: [{ id: m.id, withNextMessages: n }] }),
          ],
        ];
        for (const [field, call] of cases) await expectBound(call, field, max, `${field} ${show(bad)}`);
      }
      // The row offset page × perPage has the same bound.
      await expectBound(
        () => store.listMessages({ threadId: t.id, page: 2 ** 30, perPage: 2 }),
        'page',
        max,
        'page 2^30 × perPage 2',
      );
      await expectBound(
        () => store.listThreads({ resourceId: t.resourceId, page: 2, perPage: MAX_LISTING_COUNT }),
        'page',
        max,
        `page 2 × perPage ${max}`,
      );
      for (const bad of BAD_DATES) {
        for (const side of ['start', 'end'] as const) {
          await expectBound(
            () => store.listMessages({ threadId: t.id, dateRange: { [side]: bad as Date } }),
            `dateRange.${side}`,
            undefined,
            `dateRange.${side} ${show(bad)}`,
          );
          await expectBound(
            () => store.listThreads({ resourceId: t.resourceId, dateRange: { [side]: bad as Date } }),
            `dateRange.${side}`,
            undefined,
            `listThreads dateRange.${side} ${show(bad)}`,
          );
        }
      }
      expectEqual((await store.listMessages({ threadId: t.id })).messages, [m], 'the message is unchanged');
    },
  ),

  check(
    `the largest counts (${MAX_LISTING_COUNT}), -0 and the widest dates are valid arguments and work`,
    async (ctx) => {
      const store = await ctx.store();
      const t = thread(ctx.id('t'), ctx.id('r'));
      await store.saveThread(t);
      const ms = [1, 2, 3].map((i) => message(ctx.id(`m${i}`), t, at(i)));
      await store.saveMessages(ms);
      const MAX = MAX_LISTING_COUNT;
      const all = await store.listMessages({ threadId: t.id, perPage: MAX });
      expectEqual([all.messages, all.total, all.hasMore], [ms, 3, false], `listMessages perPage ${MAX}`);
      const last = await store.listMessages({ threadId: t.id, page: MAX, perPage: 1 });
      expectEqual([last.messages, last.total, last.hasMore], [[], 3, false], `listMessages page ${MAX}`);
      const zero = await store.listMessages({ threadId: t.id, page: -0, perPage: 2 });
      expectEqual([zero.messages, zero.page], [ms.slice(0, 2), 0], 'listMessages page -0');
      const windows = await store.listMessages({
        threadId: t.id,
        perPage: 0,
        include: [{ id: ms[1]!.id, withPreviousMessages: MAX, withNextMessages: MAX }],
      });
      expectEqual(windows.messages, ms, `include window of ${MAX} on both sides`);
      const threads = await store.listThreads({ resourceId: t.resourceId, perPage: MAX });
      expectEqual(
        [threads.threads.map((x) => x.id), threads.total],
        [[t.id], 1],
        `listThreads perPage ${MAX}`,
      );
      const beyond = await store.listThreads({ resourceId: t.resourceId, page: MAX, perPage: 1 });
      expectEqual([beyond.threads, beyond.total], [[], 1], `listThreads page ${MAX}`);
      const first = new Date(-8.64e15);
      const lastDate = new Date(8.64e15);
      for (const [range, expected] of [
        [{ start: first, end: lastDate }, ms],
        [{ start: first, end: lastDate, startExclusive: true, endExclusive: true }, ms],
        [{ start: lastDate }, []],
        [{ end: first }, []],
      ] as const) {
        const page = await store.listMessages({ threadId: t.id, dateRange: range });
        expectEqual(page.messages, expected, `dateRange ${show(range)}`);
        const listed = await store.listThreads({ resourceId: t.resourceId, dateRange: range });
        const inRange = expected.length > 0 ? [t.id] : [];
        expectEqual(idsOf(listed.threads), inRange, `listThreads dateRange ${show(range)}`);
      }
    },
  ),

  check(
    `stored dates: ${STORED_DATES.min} and ${STORED_DATES.max} are kept to the millisecond on threads and messages; a millisecond outside is INVALID_ARGUMENT naming the field, and nothing is written`,
    async (ctx) => {
      const store = await ctx.store();
      const first = new Date(STORED_DATES.min);
      const last = new Date(STORED_DATES.max);
      const t = thread(ctx.id('t'), ctx.id('r'), { createdAt: first, updatedAt: last });
      await store.saveThread(t);
      expectEqual(
        await store.getThreadById({ threadId: t.id }),
        t,
        'a thread created in year 1, updated in 9999',
      );
      const ms = [message(ctx.id('m1'), t, last), message(ctx.id('m2'), t, first)];
      await store.saveMessages(ms);
      const listed = async () => (await store.listMessages({ threadId: t.id, perPage: false })).messages;
      expectEqual(await listed(), [ms[1], ms[0]], 'messages of year 1 and 9999, oldest first');
      const before = new Date(first.getTime() - 1);
      const after = new Date(last.getTime() + 1);
      for (const bad of [before, after]) {
        const other = thread(ctx.id('t-bad'), t.resourceId);
        await expectBound(
          () => store.saveThread({ ...other, createdAt: bad }),
          'thread.createdAt',
          STORED_DATES.max,
          `saveThread with createdAt ${bad.toISOString()}`,
        );
        await expectBound(
          () => store.saveThread({ ...t, title: 'changed', updatedAt: bad }),
          'thread.updatedAt',
          STORED_DATES.max,
          `saveThread with updatedAt ${bad.toISOString()}`,
        );
        await expectBound(
          () => store.saveMessages([message(ctx.id('m3'), t, at(3)), message(ctx.id('m4'), t, bad)]),
          'createdAt',
          STORED_DATES.max,
          `saveMessages with a createdAt of ${bad.toISOString()}`,
        );
        await expectBound(
          () => store.updateMessages([{ id: ms[0]!.id, content: 'changed', createdAt: bad }]),
          'createdAt',
          STORED_DATES.max,
          `updateMessages with createdAt ${bad.toISOString()}`,
        );
        expectEqual(await store.getThreadById({ threadId: other.id }), null, 'no thread was created');
      }
      expectEqual(await store.getThreadById({ threadId: t.id }), t, 'the thread is unchanged');
      expectEqual(await listed(), [ms[1], ms[0]], 'the messages are unchanged');
    },
  ),

  check(
    `a message type of ${MAX_TYPE_LENGTH} characters (of 1 to 4 bytes in UTF-8) is kept exactly; one more is INVALID_ARGUMENT naming the field, and nothing is written`,
    async (ctx) => {
      const store = await ctx.store();
      const t = thread(ctx.id('t'), ctx.id('r'));
      await store.saveThread(t);
      const longest = `${'a'.repeat(MAX_TYPE_LENGTH - 4)}é€😀`;
      expectEqual(longest.length, MAX_TYPE_LENGTH, 'the longest type');
      const m = message(ctx.id('m1'), t, at(1), { type: longest });
      await store.saveMessages([m]);
      const listed = async () => (await store.listMessages({ threadId: t.id, perPage: false })).messages;
      expectEqual(await listed(), [m], `a type of ${MAX_TYPE_LENGTH} characters`);
      const tooLong = `${longest}x`;
      await expectBound(
        () =>
          store.saveMessages([
            message(ctx.id('m2'), t, at(2)),
            message(ctx.id('m3'), t, at(3), { type: tooLong }),
          ]),
        'type',
        String(MAX_TYPE_LENGTH),
        `saveMessages with a type of ${tooLong.length} characters`,
      );
      await expectBound(
        () => store.updateMessages([{ id: m.id, content: 'changed', type: tooLong }]),
        'type',
        String(MAX_TYPE_LENGTH),
        `updateMessages with a type of ${tooLong.length} characters`,
      );
      expectEqual(await listed(), [m], 'the messages are unchanged');
    },
  ),

  check(
    `JSON nested ${MAX_JSON_DEPTH} levels deep (arrays in arrays; metadata counting as one) is kept exactly in content and metadata; one level more is INVALID_ARGUMENT naming the field, and nothing is written`,
    async (ctx) => {
      const store = await ctx.store();
      const nested = (levels: number): JsonValue => {
        let value: JsonValue = 'leaf';
        for (let i = 0; i < levels; i++) value = [value, i];
        return value;
      };
      const t = thread(ctx.id('t'), ctx.id('r'), { metadata: { deep: nested(MAX_JSON_DEPTH - 1) } });
      await store.saveThread(t);
      expectEqual(await store.getThreadById({ threadId: t.id }), t, 'thread metadata at the deepest');
      const m = message(ctx.id('m1'), t, at(1), { content: nested(MAX_JSON_DEPTH) });
      await store.saveMessages([m]);
      const listed = async () => (await store.listMessages({ threadId: t.id, perPage: false })).messages;
      expectEqual(await listed(), [m], 'content at the deepest');
      const updated = await store.updateThread({ id: t.id, metadata: { also: nested(MAX_JSON_DEPTH - 1) } });
      expectEqual(
        updated.metadata,
        { ...t.metadata, also: nested(MAX_JSON_DEPTH - 1) },
        'updateThread at the deepest',
      );
      const stored = await store.getThreadById({ threadId: t.id });
      const tooDeep = nested(MAX_JSON_DEPTH + 1);
      const cases: [string, () => Promise<unknown>][] = [
        ['saveMessages', () => store.saveMessages([message(ctx.id('m2'), t, at(2), { content: tooDeep })])],
        ['updateMessages', () => store.updateMessages([{ id: m.id, content: tooDeep }])],
        ['saveThread', () => store.saveThread({ ...t, metadata: { deep: nested(MAX_JSON_DEPTH) } })],
        ['updateThread', () => store.updateThread({ id: t.id, metadata: { deep: nested(MAX_JSON_DEPTH) } })],
        [
          'updateResource',
          () =>
            store.updateResource({ resourceId: t.resourceId, metadata: { deep: nested(MAX_JSON_DEPTH) } }),
        ],
      ];
      for (const [what, call] of cases) {
        await expectBound(call, 'nested too deeply', String(MAX_JSON_DEPTH), `${what} one level deeper`);
      }
      expectEqual(await store.getThreadById({ threadId: t.id }), stored, 'the thread is unchanged');
      expectEqual(await listed(), [m], 'the messages are unchanged');
      expectEqual(await store.getResourceById({ resourceId: t.resourceId }), null, 'no resource was created');
    },
  ),

  check(
    'NOT_FOUND: updateThread, saveMessages and thread-scoped atomic update of a missing thread',
    async (ctx) => {
      const store = await ctx.store();
      const missing = ctx.id('missing');
      await expectRejects(
        store.updateThread({ id: missing, metadata: { a: 1 } }),
        ['NOT_FOUND'],
        'updateThread',
      );
      await expectRejects(
        store.saveMessages([message(ctx.id('m'), { id: missing, resourceId: ctx.id('r') }, at(1))]),
        ['NOT_FOUND'],
        'saveMessages into a missing thread',
      );
      if (capabilitiesOf(store).atomicWorkingMemory && store.updateWorkingMemoryAtomically) {
        await expectRejects(
          store.updateWorkingMemoryAtomically({ scope: 'thread', threadId: missing, update: () => 'x' }),
          ['NOT_FOUND'],
          "updateWorkingMemoryAtomically({ scope: 'thread' }) of a missing thread",
        );
      }
      expectEqual(await store.getThreadById({ threadId: missing }), null, 'nothing was created');
    },
  ),

  check(
    `an error thrown by the update function propagates as-is and writes nothing${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      const atomic = requireAtomic(store);
      const r = ctx.id('r');
      await store.updateResource({ resourceId: r, workingMemory: 'before' });
      const thrown = new Error('refused by the caller');
      let caught: unknown;
      try {
        await atomic({
          scope: 'resource',
          resourceId: r,
          update: () => {
            throw thrown;
          },
        });
      } catch (error) {
        caught = error;
      }
      if (caught !== thrown) {
        throw new ConformanceError(`expected the update function's own error, got ${describeError(caught)}`);
      }
      expectEqual(
        (await store.getResourceById({ resourceId: r }))?.workingMemory,
        'before',
        'nothing was written',
      );
      const fresh = ctx.id('r');
      await atomic({
        scope: 'resource',
        resourceId: fresh,
        update: () => {
          throw thrown;
        },
      }).catch(() => undefined);
      expectEqual(await store.getResourceById({ resourceId: fresh }), null, 'no resource was created');
    },
  ),

  ...(
    [
      ['getThreadById', (s, f) => s.getThreadById({ threadId: f.thread.id })],
      ['listThreads', (s, f) => s.listThreads({ resourceId: f.thread.resourceId })],
      ['listMessages', (s, f) => s.listMessages({ threadId: f.thread.id })],
      ['listMessagesById', (s, f) => s.listMessagesById({ ids: [f.message.id] })],
      ['getResourceById', (s, f) => s.getResourceById({ resourceId: f.thread.resourceId })],
      [
        'updateResource (a write)',
        (s, f) => s.updateResource({ resourceId: f.thread.resourceId, metadata: { a: 1 } }),
      ],
    ] as [string, (s: MemoryStorage, f: Awaited<ReturnType<typeof brokenStore>>) => Promise<unknown>][]
  ).map(([what, call]) =>
    check(
      `${what} on a broken backend throws STORAGE/CONNECTION, never an empty answer`,
      async (ctx) => {
        const fixture = await brokenStore(ctx);
        await expectReadFails(() => call(fixture.store, fixture), what);
      },
      noBreak,
    ),
  ),

  check(
    'a store configured with a password or token never shows it in an error (message, String(error), stack, causes)',
    async (ctx) => {
      const secret = `Engram${ctx.id('secret').replace(/[^A-Za-z0-9]/g, '')}`;
      const cases = Object.entries(ctx.init.withSecret!(secret));
      expectTrue(cases.length > 0, 'withSecret must give at least one store');
      for (const [what, create] of cases) {
        let store: MemoryStorage | undefined;
        const errors: [string, unknown][] = [];
        try {
          store = await create();
        } catch (error) {
          errors.push([`${what}: creating the store`, error]);
        }
        if (store) {
          const s = store;
          const t = thread(ctx.id('t'), ctx.id('r'));
          const calls: [string, () => Promise<unknown>][] = [
            ['init()', () => s.init()],
            ['getThreadById', () => s.getThreadById({ threadId: t.id })],
            ['saveThread', () => s.saveThread(t)],
            ['listMessages', () => s.listMessages({ threadId: t.id })],
          ];
          try {
            for (const [call, run] of calls)
              errors.push([`${what}: ${call}`, await failureOf(run, `${what}: ${call}`)]);
          } finally {
            await s.close().catch(() => undefined);
          }
        }
        for (const [call, error] of errors) {
          expectMemoryError(
            error,
            ['CONNECTION', 'STORAGE', 'MIGRATION', 'INVALID_ARGUMENT', 'UNSUPPORTED'],
            call,
          );
          if (loggedTexts(error).some((text) => text.includes(secret))) {
            throw new ConformanceError(
              `${call}: the error shows the configured secret; errors must redact passwords and tokens\n${inspect(error, { depth: 10 })}`,
            );
          }
        }
      }
    },
    noSecret,
  ),

  check(
    'a failed write names the operation, never the payload (message, String(error), causes)',
    async (ctx) => {
      const { store, thread: t, message: m } = await brokenStore(ctx);
      const secret = `secret-payload-${ctx.id('s')}`;
      const writes: [string, () => Promise<unknown>][] = [
        ['saveMessages', () => store.saveMessages([{ ...m, content: { text: secret } }])],
        ['updateMessages', () => store.updateMessages([{ id: m.id, content: secret }])],
        ['updateResource', () => store.updateResource({ resourceId: t.resourceId, workingMemory: secret })],
        ['updateThread', () => store.updateThread({ id: t.id, metadata: { note: secret } })],
        ['saveThread', () => store.saveThread({ ...t, title: secret })],
      ];
      for (const [what, call] of writes) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expectMemoryError(error, ['STORAGE', 'CONNECTION'], `${what} on a broken backend`);
        const logged = [
          (error as Error).message,
          String(error),
          inspect(error, { depth: 10 }),
          JSON.stringify(error),
        ];
        if (logged.some((text) => text?.includes(secret))) {
          throw new ConformanceError(
            `${what} on a broken backend: the error carries the payload it was given; errors name the operation and ids only\n${inspect(error, { depth: 10 })}`,
          );
        }
      }
    },
    noBreak,
  ),
];
