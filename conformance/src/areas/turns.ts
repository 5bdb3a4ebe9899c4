import {
  capabilitiesOf,
  type MemoryStorage,
  type TurnCursor,
  type TurnRow,
  type TurnStore,
} from '@engram/core';
import { expectEqual, expectRejects, expectTrue } from '../assert.ts';
import { defineArea } from '../define.ts';
import { DELETE_RACE_ROUNDS, raceDelete } from '../delete-race.ts';
import { at, message, thread } from '../fixtures.ts';
import { skipCheck } from '../skip.ts';
import { HOSTILE_SUFFIXES } from './isolation.ts';

const check = defineArea('turns');

/** Name suffix of checks that apply only to stores declaring `turns`. */
export const NEEDS_TURNS = ' [needs turns]';

export function turnsOf(store: MemoryStorage): TurnStore {
  if (!store.turns) skipCheck(`${store.name} declares no turns (no turn records)`);
  return store.turns;
}

/** A body of every plane of Unicode, control characters and a lone NUL, as JSON text. */
const ODD_BODY = JSON.stringify({ text: 'turn 📅 — “q” \u0000 \t\r\n é 中文 \u{10FFFF} \\ \'"', n: [1, 2] });

function turn(
  id: string,
  threadId: string,
  resourceId: string,
  ms: number,
  body = `{"id":${JSON.stringify(id)}}`,
): TurnRow {
  return { id, threadId, resourceId, createdAt: at(ms), body };
}

const cursorOf = (row: TurnRow): TurnCursor => ({ createdAt: row.createdAt, id: row.id });

/** The puts of one round of the race against `deleteThread`. */
const PUTS = Array.from({ length: 20 }, (_, k) => k);

/** Saves the thread of each row that is not stored yet (of the row's resource): rows go into threads. */
async function threadsFor(store: MemoryStorage, ...rows: TurnRow[]): Promise<void> {
  for (const { threadId, resourceId } of rows) {
    if (!(await store.getThreadById({ threadId }))) await store.saveThread(thread(threadId, resourceId));
  }
}

/** Every row of a thread, walked a page of `size` at a time. */
async function walk(turns: TurnStore, threadId: string, size: number): Promise<TurnRow[]> {
  const all: TurnRow[] = [];
  let before: TurnCursor | null = null;
  for (;;) {
    const page = await turns.list(threadId, size, before);
    all.push(...page);
    const last = page.at(-1);
    if (page.length < size || !last) return all;
    before = cursorOf(last);
  }
}

/** The turn records: exact round trip, order and paging, isolation, the delete cascade, bad arguments. */
export const turnsChecks = [
  check(`a row round-trips exactly (NUL, emoji, 100k characters, ms dates)${NEEDS_TURNS}`, async (ctx) => {
    const store = await ctx.store();
    const turns = turnsOf(store);
    const r = ctx.id('r');
    const t = `${r}-t`;
    expectEqual(await turns.get(`${r}-none`), null, 'get of an id never written');
    expectEqual(await turns.list(t, 10), [], 'list of a thread with no rows');
    const rows = [
      turn(`${r}-odd`, t, r, 1, ODD_BODY),
      turn(`${r}-long`, t, r, 2, JSON.stringify('é😀\u0000x'.repeat(20_000))),
      { ...turn(`${r}-ms`, t, r, 0, '""'), createdAt: new Date(Date.UTC(2026, 11, 3, 4, 5, 6, 789)) },
    ];
    expectTrue((rows[1]?.body.length ?? 0) >= 100_000, 'the long body has 100k characters');
    await threadsFor(store, ...rows);
    for (const row of rows) await turns.put(row);
    for (const row of rows) expectEqual(await turns.get(row.id), row, `get of ${row.id}`);
    expectEqual(await turns.list(t, 10), [rows[2], rows[1], rows[0]], 'list of the thread');
  }),

  check(`put of an existing id replaces the row, in whichever thread it names${NEEDS_TURNS}`, async (ctx) => {
    const store = await ctx.store();
    const turns = turnsOf(store);
    const r = ctx.id('r');
    const first = turn(`${r}-m`, `${r}-t`, r, 1, '{"v":1}');
    await threadsFor(store, first, { ...first, threadId: `${r}-t2` });
    await turns.put(first);
    const second = { ...first, createdAt: at(5), body: '{"v":2}' };
    await turns.put(second);
    expectEqual(await turns.get(first.id), second, 'the row after the second put');
    expectEqual(await turns.list(first.threadId, 10), [second], 'one row listed');
    const moved = { ...second, threadId: `${r}-t2`, body: '{"v":3}' };
    await turns.put(moved);
    expectEqual(await turns.list(first.threadId, 10), [], 'the first thread after the row moved');
    expectEqual(await turns.list(moved.threadId, 10), [moved], 'the thread the row moved to');
  }),

  check(
    `put of an id another resource holds is INVALID_ARGUMENT and leaves that row${NEEDS_TURNS}`,
    async (ctx) => {
      const store = await ctx.store();
      const turns = turnsOf(store);
      const r = ctx.id('r');
      for (const suffix of ['', ...HOSTILE_SUFFIXES]) {
        const owner = `${r}${suffix}`;
        const held = turn(`${owner}-m`, `${owner}-t`, owner, 1, '{"v":1}');
        await threadsFor(store, held);
        await turns.put(held);
        for (const other of [`${owner}x`, `x${owner}`, `${owner}😀`]) {
          const taking = { ...held, threadId: `${other}-t`, resourceId: other, body: '{"v":2}' };
          await threadsFor(store, taking);
          await expectRejects(
            () => turns.put(taking),
            ['INVALID_ARGUMENT'],
            `put of ${JSON.stringify(held.id)} under resource ${JSON.stringify(other)}`,
          );
        }
        expectEqual(
          await turns.get(held.id),
          held,
          `the row of ${JSON.stringify(owner)} after the refused puts`,
        );
        expectEqual(await turns.list(held.threadId, 10), [held], `the thread of ${JSON.stringify(owner)}`);
      }
    },
  ),

  check(
    `list is newest first, ties broken by id descending; paging walks every row once${NEEDS_TURNS}`,
    async (ctx) => {
      const store = await ctx.store();
      const turns = turnsOf(store);
      const r = ctx.id('r');
      const t = `${r}-t`;
      // ids that sort differently as text and as numbers, four rows per instant
      const rows = Array.from({ length: 23 }, (_, i) =>
        turn(`${r}-${String.fromCharCode(97 + (i % 4))}${i}`, t, r, Math.floor(i / 4)),
      );
      await threadsFor(store, ...rows);
      for (const row of [...rows].reverse()) await turns.put(row);
      const expected = [...rows].sort(
        (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1),
      );
      expectEqual(await turns.list(t, 1000), expected, 'the whole thread in one page');
      for (const size of [1, 3, 4, 7]) {
        expectEqual(await walk(turns, t, size), expected, `the thread walked ${size} at a time`);
      }
      const mid = expected[9] as TurnRow;
      expectEqual(await turns.list(t, 2, cursorOf(mid)), expected.slice(10, 12), 'the page after a row');
      expectEqual(
        await turns.list(t, 5, { createdAt: at(100), id: r }),
        expected.slice(0, 5),
        'a cursor newer than every row',
      );
      expectEqual(
        await turns.list(t, 5, { createdAt: at(-1), id: 'z' }),
        [],
        'a cursor older than every row',
      );
    },
  ),

  check(`another thread's rows are never listed (hostile ids)${NEEDS_TURNS}`, async (ctx) => {
    const store = await ctx.store();
    const turns = turnsOf(store);
    const r = ctx.id('r');
    const base = `${r}-t`;
    // ids that are prefixes of each other, LIKE and glob patterns, quotes, unicode, `__proto__`
    const ids = [
      base,
      `${base}x`,
      base.slice(0, -1),
      `__proto__${r}`,
      ...HOSTILE_SUFFIXES.map((s) => `${base}${s}`),
    ];
    for (const [i, t] of ids.entries()) {
      await threadsFor(store, turn(`${t}-m`, t, r, i));
      await turns.put(turn(`${t}-m`, t, r, i));
    }
    for (const t of ids) {
      expectEqual(
        (await turns.list(t, 100)).map((x) => x.id),
        [`${t}-m`],
        `rows of thread ${JSON.stringify(t)}`,
      );
    }
    expectEqual(await turns.list(`${base}.`, 100), [], 'a thread with no rows whose id extends the others');
    const proto = await turns.list('__proto__', 100);
    expectTrue(
      proto.every((x) => x.threadId === '__proto__'),
      `list of thread "__proto__" returned another thread's rows: ${proto.map((x) => x.threadId).join(', ')}`,
    );
    expectEqual(await turns.get('__proto__'), null, 'get of id "__proto__"');
  }),

  check(
    `deleting a thread removes its rows, not another thread's; deleting a message removes its row${NEEDS_TURNS}`,
    async (ctx) => {
      const store = await ctx.store();
      const turns = turnsOf(store);
      const r = ctx.id('r');
      const threads = [`${r}-t`, `${r}-t2`, `${r}-t%`].map((id) => thread(id, r));
      for (const th of threads) {
        await store.saveThread(th);
        await store.saveMessages([message(`${th.id}-m1`, th, at(1)), message(`${th.id}-m2`, th, at(2))]);
        await turns.put(turn(`${th.id}-m1`, th.id, r, 1));
        await turns.put(turn(`${th.id}-m2`, th.id, r, 2));
      }
      const [gone, kept, other] = threads as [(typeof threads)[0], (typeof threads)[0], (typeof threads)[0]];
      await store.deleteThread({ threadId: gone.id });
      expectEqual(await turns.list(gone.id, 10), [], 'rows of the deleted thread');
      expectEqual(await turns.get(`${gone.id}-m1`), null, 'a row of the deleted thread by id');
      expectEqual((await turns.list(kept.id, 10)).length, 2, 'rows of the thread whose id extends it');
      await store.deleteMessages([`${kept.id}-m2`]);
      expectEqual(await turns.get(`${kept.id}-m2`), null, 'the row of the deleted message');
      expectEqual(
        (await turns.list(kept.id, 10)).map((x) => x.id),
        [`${kept.id}-m1`],
        'the other row of its thread',
      );
      expectEqual((await turns.list(other.id, 10)).length, 2, 'rows of a third thread');
    },
  ),

  check(`deleteResource removes the resource's rows, not another resource's${NEEDS_TURNS}`, async (ctx) => {
    const store = await ctx.store();
    const turns = turnsOf(store);
    if (!store.deleteResource) skipCheck(`${store.name} has no deleteResource`);
    const [r, s] = [ctx.id('r'), ctx.id('r')];
    for (const owner of [r, s]) {
      for (const id of [`${owner}-a`, `${owner}-b`]) {
        const th = thread(id, owner);
        await store.saveThread(th);
        await store.saveMessages([message(`${id}-m`, th, at(1))]);
        await turns.put(turn(`${id}-m`, id, owner, 1));
      }
    }
    const removed = await store.deleteResource({ resourceId: r });
    expectEqual(removed.turns, 2, 'turns counted by deleteResource');
    for (const id of [`${r}-a`, `${r}-b`]) {
      expectEqual(await turns.list(id, 10), [], `rows of ${id}`);
      expectEqual(await turns.get(`${id}-m`), null, `the row ${id}-m by id`);
    }
    for (const id of [`${s}-a`, `${s}-b`]) expectEqual((await turns.list(id, 10)).length, 1, `rows of ${id}`);
    // The thread is gone: a row for it now (an agent call that ends after the erasure) is refused,
    // so nothing of the resource is left that the erasure did not reach.
    await expectRejects(
      () => turns.put(turn(`${r}-a-late`, `${r}-a`, r, 2)),
      ['NOT_FOUND'],
      'a put after the erasure',
    );
    expectEqual(await turns.get(`${r}-a-late`), null, 'the refused row');
  }),

  check(
    `put into a thread that does not exist is NOT_FOUND, into another resource's thread INVALID_ARGUMENT; neither stores anything${NEEDS_TURNS}`,
    async (ctx) => {
      const store = await ctx.store();
      const turns = turnsOf(store);
      const [r, s] = [ctx.id('r'), ctx.id('r')];
      const theirs = thread(`${s}-t`, s);
      await store.saveThread(theirs);
      await expectRejects(
        () => turns.put(turn(`${r}-m1`, `${r}-none`, r, 1)),
        ['NOT_FOUND'],
        'a thread never saved',
      );
      for (const suffix of ['', ...HOSTILE_SUFFIXES]) {
        await expectRejects(
          () => turns.put(turn(`${r}-m2${suffix}`, theirs.id, `${r}${suffix}`, 1)),
          ['INVALID_ARGUMENT'],
          `a row of resource ${JSON.stringify(`${r}${suffix}`)} in a thread of another`,
        );
        expectEqual(await turns.get(`${r}-m2${suffix}`), null, 'the row refused for another resource');
      }
      expectEqual(await turns.get(`${r}-m1`), null, 'the row refused for a missing thread');
      expectEqual(await turns.list(theirs.id, 10), [], "the other resource's thread");
      const gone = thread(`${r}-gone`, r);
      await store.saveThread(gone);
      await turns.put(turn(`${r}-m3`, gone.id, r, 1));
      await store.deleteThread({ threadId: gone.id });
      await expectRejects(() => turns.put(turn(`${r}-m4`, gone.id, r, 2)), ['NOT_FOUND'], 'a deleted thread');
      expectEqual(
        [await turns.get(`${r}-m3`), await turns.get(`${r}-m4`)],
        [null, null],
        'rows of the deleted thread',
      );
    },
  ),

  check(
    `put racing deleteThread of its thread (another store instance) leaves no row of the deleted thread (${DELETE_RACE_ROUNDS} rounds)${NEEDS_TURNS}`,
    async (ctx) => {
      const store = await ctx.store();
      const turns = turnsOf(store);
      const writer = turnsOf(capabilitiesOf(store).processLocal ? store : await ctx.store());
      const r = ctx.id('r');
      const first = await raceDelete({
        store,
        resourceId: r,
        threadId: () => ctx.id('t'),
        // enough puts that the delete lands among them, not only before or after
        writes: (t) =>
          PUTS.map((k) => async () => {
            await writer.put(turn(`${t}-m${k}`, t, r, k));
            return true;
          }),
        left: async (t) =>
          (await Promise.all(PUTS.map((k) => turns.get(`${t}-m${k}`)))).some((row) => row !== null),
        what: 'turn rows',
      });
      ctx.log(
        `puts raced deleteThread ${DELETE_RACE_ROUNDS} times (${first} puts returned first): no row outlived its thread`,
      );
    },
  ),

  check(`bad arguments are INVALID_ARGUMENT and store nothing${NEEDS_TURNS}`, async (ctx) => {
    const store = await ctx.store();
    const turns = turnsOf(store);
    const r = ctx.id('r');
    const t = `${r}-t`;
    const good = turn(`${r}-m`, t, r, 1);
    const bad: [string, () => Promise<unknown>][] = [
      ['limit 0', () => turns.list(t, 0)],
      ['limit 1001', () => turns.list(t, 1001)],
      ['limit 1.5', () => turns.list(t, 1.5)],
      ['a cursor without a date', () => turns.list(t, 5, { id: 'x' } as never)],
      ['a cursor with an invalid date', () => turns.list(t, 5, { createdAt: new Date(Number.NaN), id: 'x' })],
      ['a cursor with an empty id', () => turns.list(t, 5, { createdAt: at(0), id: '' })],
      ['a cursor that is a string', () => turns.list(t, 5, 'x' as never)],
      ['an empty thread id', () => turns.list('', 5)],
      ['an empty id', () => turns.get('')],
      ['a body that is not text', () => turns.put({ ...good, body: { x: 1 } as never })],
      ['a body over 1,000,000 characters', () => turns.put({ ...good, body: 'x'.repeat(1_000_001) })],
      ['a body with an unpaired surrogate', () => turns.put({ ...good, body: 'a\ud800b' })],
      ['an invalid date', () => turns.put({ ...good, createdAt: new Date(Number.NaN) })],
      ['a missing resource id', () => turns.put({ ...good, resourceId: undefined as never })],
      ['a row that is not an object', () => turns.put(null as never)],
    ];
    for (const [what, call] of bad) await expectRejects(call, ['INVALID_ARGUMENT'], what);
    expectEqual(await turns.get(good.id), null, 'nothing stored by the refused calls');
    expectEqual(await turns.list(t, 10), [], 'nothing listed after the refused calls');
  }),

  check(`two stores on one database see each other's rows${NEEDS_TURNS}`, async (ctx) => {
    const a = await ctx.store();
    if (capabilitiesOf(a).processLocal)
      skipCheck(`${a.name} is processLocal: each instance has its own data`);
    const b = await ctx.store();
    const r = ctx.id('r');
    const row = turn(`${r}-m`, `${r}-t`, r, 1, ODD_BODY);
    await threadsFor(a, row);
    await turnsOf(a).put(row);
    expectEqual(await turnsOf(b).get(row.id), row, 'the row through the second store');
    const replaced = { ...row, body: '{}' };
    await turnsOf(b).put(replaced);
    expectEqual(
      await turnsOf(a).list(row.threadId, 10),
      [replaced],
      'the replaced row through the first store',
    );
  }),
];
