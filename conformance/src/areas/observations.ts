import {
  capabilitiesOf,
  type LanguageModelLike,
  Memory,
  type MemoryStorage,
  type ObservationIssue,
  type ObservationRow,
  type ObservationStore,
} from '@engram/core';
import fc from 'fast-check';
import { ConformanceError, expectEqual, expectRejects, expectTrue } from '../assert.ts';
import { raceProcesses } from '../concurrency/harness.ts';
import { observingMemory, runRacer } from '../concurrency/tasks.ts';
import { defineArea } from '../define.ts';
import { DELETE_RACE_ROUNDS, raceDelete } from '../delete-race.ts';
import { message, thread } from '../fixtures.ts';
import { conformanceModel, expectObservedOrInTail, observedContent, observedIds } from '../observer.ts';
import { assertProperty } from '../property.ts';
import { skipCheck } from '../skip.ts';
import { HOSTILE_SUFFIXES } from './isolation.ts';

const check = defineArea('observations');

/** Name suffix of checks that apply only to stores declaring `observations`. */
export const NEEDS_OBSERVATIONS = ' [needs observations]';

export function observationsOf(store: MemoryStorage): ObservationStore {
  if (!store.observations) skipCheck(`${store.name} declares no observations (no observational memory)`);
  return store.observations;
}

/** Text a log body may hold: every plane of Unicode, control characters, markup, a lone NUL. */
const ODD_TEXT =
  'Dates 📅 2026-12-01 — “quoted” <observations></observations> \u0000 \t\r\n é 中文 \u{10FFFF}';

function row(
  threadId: string,
  resourceId: string,
  generation: number,
  version: number,
  body: string,
): ObservationRow {
  return {
    key: `thread:${threadId}`,
    resourceId,
    threadId,
    generation,
    version,
    body,
    updatedAt: new Date(Date.UTC(2026, 11, 1, 12, 0, 0, version)),
  };
}

/** A row of the resource-scope log of `resourceId`. */
function resourceRow(resourceId: string, generation: number, version: number, body: string): ObservationRow {
  return { ...row('', resourceId, generation, version, body), key: `resource:${resourceId}`, threadId: null };
}

const at = (r: ObservationRow) => ({ generation: r.generation, version: r.version });

/** The suite's Observer, holding its answer until `answer()`; `asked` resolves at the call. */
function heldModel(): { model: LanguageModelLike; asked: Promise<void>; answer: () => void } {
  let called = () => {};
  const asked = new Promise<void>((resolve) => {
    called = resolve;
  });
  let answer = () => {};
  const answering = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const echo = conformanceModel();
  const model: LanguageModelLike = {
    ...echo,
    doGenerate: async (options) => {
      called();
      await answering;
      return echo.doGenerate(options);
    },
  };
  return { model, asked, answer };
}

/** The store, or a skip: the checks racing an erasure need `deleteResource`. */
function erasing(store: MemoryStorage): MemoryStorage {
  if (!store.deleteResource) skipCheck(`${store.name} declares no deleteResource`);
  return store;
}

/** The observation logs: exact round trip, compare-and-set, generations, the delete cascade. */
export const observationsChecks = [
  check(
    `a log round-trips exactly and the first swap creates generation 1${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      const t = `${r}-t`;
      await store.saveThread(thread(t, r));
      expectEqual(await log.head(`thread:${t}`), null, 'head of a log never written');
      expectEqual(await log.generations(`thread:${t}`), [], 'generations of a log never written');
      const first = row(t, r, 1, 1, ODD_TEXT);
      expectTrue(await log.swap(null, first), 'the first swap of a log wins');
      expectEqual(await log.head(`thread:${t}`), first, 'head after the first swap');
      expectTrue(!(await log.swap(null, first)), 'a second "first" swap loses');
      const resourceRow: ObservationRow = { ...first, key: `resource:${r}`, threadId: null, body: '[]' };
      expectTrue(await log.swap(null, resourceRow), 'the first swap of a resource log wins');
      expectEqual(await log.head(`resource:${r}`), resourceRow, 'head of the resource log');
      expectEqual(await log.head(`thread:${t}`), first, 'the thread log is a separate key');
    },
  ),

  check(`a swap wins only against the newest generation as read${NEEDS_OBSERVATIONS}`, async (ctx) => {
    const store = await ctx.store();
    const log = observationsOf(store);
    const r = ctx.id('r');
    const t = `${r}-t`;
    await store.saveThread(thread(t, r));
    const v1 = row(t, r, 1, 1, 'a');
    await log.swap(null, v1);
    const v2 = row(t, r, 1, 2, 'ab');
    expectTrue(await log.swap(at(v1), v2), 'a swap from the head wins');
    expectTrue(!(await log.swap(at(v1), row(t, r, 1, 2, 'stale'))), 'a swap from a stale version loses');
    expectEqual(await log.head(`thread:${t}`), v2, 'head after a lost swap');
    // a new generation keeps the old one readable and makes swaps from it lose
    const g2 = row(t, r, 2, 3, 'condensed');
    expectTrue(await log.swap(at(v2), g2), 'a swap starting generation 2 wins');
    expectTrue(!(await log.swap(at(v2), row(t, r, 1, 3, 'late'))), 'a swap into the sealed generation loses');
    expectTrue(!(await log.swap(at(v2), row(t, r, 2, 3, 'twin'))), 'a second generation 2 loses');
    const all = await log.generations(`thread:${t}`);
    expectEqual(
      all.map((x) => [x.generation, x.body]),
      [
        [1, 'ab'],
        [2, 'condensed'],
      ],
      'generations after a reflection',
    );
    expectEqual(await log.head(`thread:${t}`), g2, 'the head is the newest generation');
    const g2b = row(t, r, 2, 4, 'condensed+1');
    expectTrue(await log.swap(at(g2), g2b), 'a swap within generation 2 wins');
    expectEqual((await log.generations(`thread:${t}`)).length, 2, 'still two generations');
  }),

  check(
    `a swap writes its whole row: a thread log replaced after the thread moved names the new resource${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      const moved = `${r}-moved`;
      const t = `${r}-t`;
      await store.saveThread(thread(t, r));
      const v1 = row(t, r, 1, 1, 'a');
      await log.swap(null, v1);
      await store.saveThread(thread(t, moved));
      const v2 = row(t, moved, 1, 2, 'ab');
      expectTrue(await log.swap(at(v1), v2), 'a swap from the head after the move wins');
      expectEqual(await log.head(`thread:${t}`), v2, 'the replaced row, owner included');
      const g2 = row(t, moved, 2, 3, 'condensed');
      expectTrue(await log.swap(at(v2), g2), 'a swap starting generation 2 wins');
      expectEqual(
        await log.generations(`thread:${t}`),
        [{ ...v2, version: 3 }, g2],
        'the sealed row keeps its fields but the version; the new one is written whole',
      );
    },
  ),

  check(
    `bad rows and swap options are INVALID_ARGUMENT and write nothing${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      const t = `${r}-t`;
      const good = row(t, r, 1, 1, 'x');
      const bad: [string, () => Promise<unknown>][] = [
        ['a key of no scope', () => log.head(`session:${t}`)],
        ['an empty id', () => log.generations('thread:')],
        ['a thread row naming another thread', () => log.swap(null, { ...good, threadId: `${t}-x` })],
        ['a resource row with a thread', () => log.swap(null, { ...good, key: `resource:${r}` })],
        ['generation 0', () => log.swap(null, { ...good, generation: 0 })],
        ['a first row of version 2', () => log.swap(null, { ...good, version: 2 })],
        ['a version that skips', () => log.swap({ generation: 1, version: 1 }, { ...good, version: 3 })],
        [
          'a generation that skips',
          () => log.swap({ generation: 1, version: 1 }, { ...good, generation: 3, version: 2 }),
        ],
        ['a body that is not text', () => log.swap(null, { ...good, body: { x: 1 } as never })],
        ['a body with an unpaired surrogate', () => log.swap(null, { ...good, body: 'a\ud800b' })],
        ['an invalid date', () => log.swap(null, { ...good, updatedAt: new Date(Number.NaN) })],
        ['options that are no object', () => log.swap(null, good, 'thread' as never)],
        ['an empty thread option', () => log.swap(null, good, { thread: '' })],
        ['a thread option that is no string', () => log.swap(null, good, { thread: 7 as never })],
      ];
      for (const [what, call] of bad) await expectRejects(call, ['INVALID_ARGUMENT'], what);
      expectEqual(await log.head(`thread:${t}`), null, 'nothing written by the refused calls');
    },
  ),

  check(
    `deleting a thread deletes its log in the same write; other logs stay${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      const ids = [`${r}-t`, ...HOSTILE_SUFFIXES.map((s) => `${r}-t${s}`)];
      for (const id of ids) {
        await store.saveThread(thread(id, r));
        await log.swap(null, row(id, r, 1, 1, id));
        await log.swap(at(row(id, r, 1, 1, id)), row(id, r, 2, 2, `${id}/2`));
      }
      const resourceRow: ObservationRow = {
        ...row(ids[0] as string, r, 1, 1, 'r'),
        key: `resource:${r}`,
        threadId: null,
      };
      await log.swap(null, resourceRow);
      await store.deleteThread({ threadId: ids[0] as string });
      expectEqual(await log.generations(`thread:${ids[0]}`), [], 'generations of the deleted thread');
      for (const id of ids.slice(1)) {
        expectEqual(
          (await log.generations(`thread:${id}`)).map((x) => x.body),
          [id, `${id}/2`],
          `the log of thread ${JSON.stringify(id)}, whose id only differs by a suffix`,
        );
      }
      expectEqual(await log.head(`resource:${r}`), resourceRow, 'the resource log');
      // a thread re-created with the same id starts with no log
      await store.saveThread(thread(ids[0] as string, r));
      expectEqual(await log.head(`thread:${ids[0]}`), null, 'a re-created thread has no log');
    },
  ),

  check(
    `a thread log's swap into a thread that does not exist, or was deleted, is NOT_FOUND and leaves no row${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      for (const suffix of ['', ...HOSTILE_SUFFIXES]) {
        const none = `${r}-none${suffix}`;
        await expectRejects(
          () => log.swap(null, row(none, r, 1, 1, 'x')),
          ['NOT_FOUND'],
          `a swap into ${JSON.stringify(none)}`,
        );
        expectEqual(await log.generations(`thread:${none}`), [], `the log of ${JSON.stringify(none)}`);
      }
      const t = `${r}-t`;
      await store.saveThread(thread(t, r));
      const first = row(t, r, 1, 1, 'first');
      expectTrue(await log.swap(null, first), 'the first swap into the saved thread');
      await store.deleteThread({ threadId: t });
      await expectRejects(
        () => log.swap(null, row(t, r, 1, 1, 'late')),
        ['NOT_FOUND'],
        'a swap after deleteThread',
      );
      expectEqual(await log.generations(`thread:${t}`), [], 'the log of the deleted thread');
      await store.saveThread(thread(t, r));
      expectEqual(await log.head(`thread:${t}`), null, 'a re-created thread has no log');
    },
  ),

  ...(
    [
      { scope: 'thread', races: 'swaps racing deleteThread of their thread', gone: 'the deleted thread' },
      {
        scope: 'resource',
        races: 'resource-log swaps racing deleteResource of their resource',
        gone: 'the erased resource',
      },
    ] as const
  ).map(({ scope, races, gone }) =>
    check(
      `${races} (another store instance) leave no log of ${gone} (${DELETE_RACE_ROUNDS} rounds)${NEEDS_OBSERVATIONS}`,
      async (ctx) => {
        const store = await ctx.store();
        const log = observationsOf(store);
        if (scope === 'resource') erasing(store);
        const writer = observationsOf(capabilitiesOf(store).processLocal ? store : await ctx.store());
        const r = ctx.id('r');
        const logRow = (t: string, generation: number, version: number, body: string) =>
          scope === 'thread'
            ? row(t, r, generation, version, body)
            : resourceRow(r, generation, version, body);
        const first = await raceDelete({
          store,
          resourceId: r,
          threadId: () => ctx.id('t'),
          erase: scope === 'resource',
          // a row, then replacements and new generations in turn (the erasure lands among them),
          // each written for the round's thread
          writes: (t) => {
            const rows = Array.from({ length: 40 }, (_, k) =>
              logRow(t, Math.floor(k / 2) + 1, k + 1, `w${k}`),
            );
            return rows.map(
              (next, k) => () =>
                writer.swap(k === 0 ? null : at(rows[k - 1] as ObservationRow), next, { thread: t }),
            );
          },
          left: async (t) =>
            (await log.generations(scope === 'thread' ? `thread:${t}` : `resource:${r}`)).length > 0,
          what: `a ${scope} log`,
        });
        ctx.log(
          `${races} ${DELETE_RACE_ROUNDS} times (${first} swaps returned first): no log outlived the delete`,
        );
      },
    ),
  ),

  check(
    `a resource log's first row written for a thread that is missing, another resource's or deleted is NOT_FOUND and leaves no log; a later row, or one written for no thread, is not checked${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      const key = `resource:${r}`;
      const first = resourceRow(r, 1, 1, 'first');
      const theirs = `${r}-theirs`;
      await store.saveThread(thread(theirs, `${r}x`));
      const gone = `${r}-gone`;
      await store.saveThread(thread(gone, r));
      await store.deleteThread({ threadId: gone });
      for (const t of [...['', ...HOSTILE_SUFFIXES].map((x) => `${r}-none${x}`), theirs, gone]) {
        await expectRejects(
          () => log.swap(null, first, { thread: t }),
          ['NOT_FOUND'],
          `a first row written for thread ${JSON.stringify(t)}`,
        );
        expectEqual(
          await log.generations(key),
          [],
          `the resource log after a first row for ${JSON.stringify(t)}`,
        );
      }
      const t = `${r}-t`;
      await store.saveThread(thread(t, r));
      expectTrue(
        await log.swap(null, first, { thread: t }),
        'a first row written for a thread of the resource',
      );
      await store.deleteThread({ threadId: t });
      const second = resourceRow(r, 1, 2, 'second');
      expectTrue(
        await log.swap(at(first), second, { thread: t }),
        'a later row written for a thread deleted since (the resource keeps its log)',
      );
      expectEqual(await log.head(key), second, 'the resource log after one of its threads was deleted');
      const other = ctx.id('r');
      const alone = resourceRow(other, 1, 1, 'imported');
      expectTrue(await log.swap(null, alone), 'a first row written for no thread (an import, say)');
      expectEqual(await log.head(`resource:${other}`), alone, 'the log written for no thread');
    },
  ),

  check(
    `an observation (resource scope) whose Observer answers after deleteResource of its resource adds nothing of the erased messages: no log when the resource is left unused, nothing in the log of a thread the resource started since; both report NOT_FOUND${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = erasing(await ctx.store());
      const log = observationsOf(store);
      for (const reused of [false, true]) {
        const r = ctx.id('r');
        const key = `resource:${r}`;
        const issues: ObservationIssue[] = [];
        const observing = (model: LanguageModelLike) =>
          new Memory({
            storage: store,
            onObservationIssue: (issue) => {
              issues.push(issue);
            },
            options: {
              observationalMemory: {
                model,
                scope: 'resource',
                observation: { messageTokens: 120, bufferTokens: false },
                timeoutMs: 20_000,
              },
            },
          });
        const turnOf = async (memory: Memory, threadId: string, ids: string[]) => {
          const target = { threadId, resourceId: r };
          await memory.createThread(target);
          await memory.saveMessages({
            messages: ids.map((id) => ({
              id,
              ...target,
              role: 'user' as const,
              content: observedContent(id, 'word '.repeat(80)),
            })),
          });
          return memory.observations?.prepare(target);
        };
        const held = heldModel();
        const erased = [`${r}-m1`, `${r}-m2`];
        const turn = turnOf(observing(held.model), `${r}-t`, erased);
        await Promise.race([
          held.asked,
          turn.then(() => {
            throw new ConformanceError(
              'the turn did not call the Observer (the messages are over messageTokens)',
            );
          }),
        ]);
        await new Memory({ storage: store }).deleteResource({ resourceId: r });
        // the resource in use again: a new thread observed (its log's first row) before the answer
        if (reused) await turnOf(observing(conformanceModel()), `${r}-again`, [`${r}-n1`, `${r}-n2`]);
        held.answer();
        await turn;
        const bodies = (await log.generations(key)).map((row) => row.body);
        if (reused) {
          expectTrue(
            bodies.some((body) => body.includes(`${r}-n1`)),
            'the new thread observed',
          );
          const leaked = erased.filter((id) => bodies.some((body) => body.includes(id)));
          expectEqual(leaked, [], 'erased messages named in the log of the thread started since');
        } else {
          expectEqual(bodies, [], 'the resource log after the erasure');
        }
        const codes = issues.map((issue) => (issue.error as { code?: unknown }).code);
        expectTrue(
          codes.includes('NOT_FOUND'),
          `the observation reports NOT_FOUND (reused: ${reused}; reported: ${JSON.stringify(codes)})`,
        );
      }
    },
  ),

  check(
    (init) =>
      `racing swaps across ${init.processes ?? 4} OS processes: every acknowledged swap survives${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const r = ctx.id('r');
      const t = `${r}-t`;
      await store.saveThread(thread(t, r));
      const n = Math.max(2, ctx.init.processes ?? 4);
      const ops = 6;
      const task = { kind: 'observation-swap', threadId: t, resourceId: r, ops } as const;
      const remote = !capabilitiesOf(store).processLocal && ctx.init.worker;
      const reports = remote
        ? await raceProcesses(ctx.init.worker as URL | string, task, n)
        : await Promise.all(Array.from({ length: n }, (_, racer) => runRacer(store, task, racer)));
      const failures = reports.flatMap((x) => x.failures);
      if (failures.length) throw new ConformanceError(`swaps failed: ${failures.slice(0, 3).join('; ')}`);
      const head = await log.head(`thread:${t}`);
      const entries = head ? (JSON.parse(head.body) as string[]) : [];
      const written = reports.flatMap((x) => x.written);
      ctx.log(
        `${n} ${remote ? 'OS processes' : 'callers in one process'} made ${written.length} swaps; ${entries.length} survived, ${head?.generation} generations`,
      );
      expectEqual([...entries].sort(), [...written].sort(), 'entries in the newest generation');
      expectEqual(head?.version, n * ops, 'version after every swap');
      const all = await log.generations(`thread:${t}`);
      expectEqual(all.length, head?.generation, 'one row per generation');
      expectEqual(
        all.map((x) => x.generation),
        Array.from({ length: all.length }, (_, i) => i + 1),
        'generations numbered without gaps',
      );
      for (let i = 1; i < all.length; i++) {
        const older = JSON.parse(all[i - 1]?.body ?? '[]') as string[];
        const newer = JSON.parse(all[i]?.body ?? '[]') as string[];
        expectTrue(
          older.every((e) => newer.includes(e)),
          `generation ${i + 1} carries every entry of generation ${i}`,
        );
      }
    },
  ),

  check(
    `random turns never lose a message from the agent's view, also one stored without its log update (property test, both scopes)${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      observationsOf(store);
      const op = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.record({
            kind: fc.constant('save' as const),
            words: fc.integer({ min: 1, max: 90 }),
            thread: fc.nat(1),
          }),
        },
        {
          weight: 2,
          arbitrary: fc.record({
            kind: fc.constant('late' as const),
            words: fc.integer({ min: 1, max: 40 }),
            thread: fc.nat(1),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({
            kind: fc.constant('orphan' as const),
            words: fc.integer({ min: 1, max: 40 }),
            thread: fc.nat(1),
          }),
        },
        { weight: 3, arbitrary: fc.record({ kind: fc.constant('turn' as const), thread: fc.nat(1) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('idle' as const), thread: fc.nat(1) }) },
      );
      let run = 0;
      let observed = 0;
      await assertProperty(
        fc.asyncProperty(
          fc.constantFrom('thread' as const, 'resource' as const),
          fc.boolean(),
          fc.array(op, { minLength: 10, maxLength: 50 }),
          async (scope, buffered, ops) => {
            const r = ctx.id(`r${run++}`);
            const memory = observingMemory(store, scope, buffered ? 0.25 : false);
            const threads = [`${r}-a`, `${r}-b`];
            for (const t of threads) await memory.createThread({ threadId: t, resourceId: r });
            let n = 0;
            for (const o of ops) {
              const target = { threadId: threads[o.thread] as string, resourceId: r };
              if (o.kind === 'save' || o.kind === 'late') {
                const id = `${target.threadId}-m${n++}`;
                await memory.saveMessages({
                  messages: [
                    {
                      id,
                      ...target,
                      role: n % 2 ? 'user' : 'assistant',
                      content: observedContent(id, 'word '.repeat(o.words)),
                      // a second apart; a late message is dated before everything saved so far
                      createdAt: new Date(Date.UTC(o.kind === 'late' ? 2000 : 2026, 0, 1, 0, 0, n)),
                    },
                  ],
                });
              } else if (o.kind === 'orphan') {
                // the store's write alone (its saver killed before Memory updated the log), dated
                // just before the thread's cursor: inside the last activation
                const cursor = (await memory.observations?.inspect(target))?.state.threads.get(
                  target.threadId,
                )?.cursor;
                const id = `${target.threadId}-m${n++}`;
                const at = new Date(cursor ? cursor.at - 1 : Date.UTC(2026, 0, 1, 0, 0, n));
                const content = observedContent(id, 'word '.repeat(o.words));
                await store.saveMessages([
                  message(id, { id: target.threadId, resourceId: r }, at, { content }),
                ]);
              } else if (o.kind === 'turn') {
                await memory.observations?.prepare(target);
              } else {
                await memory.observations?.idle();
              }
              await expectObservedOrInTail(memory, target);
            }
            await memory.observations?.idle();
            for (const t of threads) {
              const target = { threadId: t, resourceId: r };
              await expectObservedOrInTail(memory, target);
              const snapshot = await memory.observations?.inspect(target);
              observed += snapshot ? observedIds(snapshot.state).length : 0;
            }
          },
        ),
        { numRuns: 20, seed: 26, timeLimitMs: 300_000 },
      );
      ctx.log(`${run} random runs; ${observed} observations in their logs at the end`);
      expectTrue(observed > 0, 'the random runs observed messages');
    },
  ),

  check(
    `a message stored without its log update (its saver killed in between), dated inside the last activation, stays in the raw tail until it is observed${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      observationsOf(store);
      const r = ctx.id('r');
      const target = { threadId: `${r}-t`, resourceId: r };
      const memory = observingMemory(store, 'thread', false);
      await memory.createThread(target);
      const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));
      const turn = async (first: number) => {
        for (const second of [first, first + 10]) {
          const id = `${r}-m${second}`;
          const content = observedContent(id, 'word '.repeat(80));
          await memory.saveMessages({
            messages: [{ id, ...target, role: 'user', content, createdAt: at(second) }],
          });
        }
        await memory.observations?.prepare(target);
      };
      // the store's write alone, without Memory's update of the log after it
      const orphan = (id: string, second: number) =>
        store.saveMessages([
          message(id, { id: target.threadId, resourceId: r }, at(second), { content: observedContent(id) }),
        ]);
      const tail = async () => (await memory.observations?.inspect(target))?.tail.map((m) => m.id);
      await turn(10);
      expectEqual(await tail(), [], 'the raw tail after the first activation');
      await orphan(`${r}-o15`, 15);
      await expectObservedOrInTail(memory, target);
      expectEqual(await tail(), [`${r}-o15`], 'the raw tail with a message the first activation missed');
      await turn(30);
      await expectObservedOrInTail(memory, target);
      await orphan(`${r}-o35`, 35);
      await expectObservedOrInTail(memory, target);
      expectEqual(await tail(), [`${r}-o35`], 'the raw tail with a message the second activation missed');
      await turn(50);
      await expectObservedOrInTail(memory, target);
      const snapshot = await memory.observations?.inspect(target);
      const observed = snapshot ? observedIds(snapshot.state) : [];
      expectTrue(
        observed.includes(`${r}-o15`) && observed.includes(`${r}-o35`),
        `both missed messages observed by a later turn (observed: ${observed.join(', ')})`,
      );
    },
  ),

  ...(['thread', 'resource'] as const).map((scope) =>
    check(
      (init) =>
        `${init.processes ?? 4} OS processes driving turns at once (${scope} scope): no message lost, none observed twice${NEEDS_OBSERVATIONS}`,
      async (ctx) => {
        const store = await ctx.store();
        observationsOf(store);
        const r = ctx.id('r');
        const threadIds = scope === 'thread' ? [`${r}-t`] : [`${r}-a`, `${r}-b`];
        for (const t of threadIds) await store.saveThread(thread(t, r));
        const n = Math.max(2, ctx.init.processes ?? 4);
        const task = { kind: 'observation-turns', threadIds, resourceId: r, turns: 8, scope } as const;
        const remote = !capabilitiesOf(store).processLocal && ctx.init.worker;
        const reports = remote
          ? await raceProcesses(ctx.init.worker as URL | string, task, n)
          : await Promise.all(Array.from({ length: n }, (_, racer) => runRacer(store, task, racer)));
        const failures = reports.flatMap((x) => x.failures);
        if (failures.length) throw new ConformanceError(`turns failed: ${failures.slice(0, 3).join('; ')}`);
        const memory = observingMemory(store, scope);
        let observed = 0;
        for (const t of threadIds) {
          const target = { threadId: t, resourceId: r };
          await expectObservedOrInTail(memory, target);
          const snapshot = await memory.observations?.inspect(target);
          observed += snapshot ? observedIds(snapshot.state).filter((id) => id.startsWith(t)).length : 0;
        }
        const total = n * 8 * 2;
        ctx.log(
          `${n} ${remote ? 'OS processes' : 'callers in one process'} saved ${total} messages in ${threadIds.length} thread(s); ${observed} observed, the rest in the raw tail`,
        );
        expectTrue(observed > 0, 'the turns observed some messages');
      },
    ),
  ),

  check(
    `a turn naming another resource's thread is INVALID_ARGUMENT and writes no log (both scopes)${NEEDS_OBSERVATIONS}`,
    async (ctx) => {
      const store = await ctx.store();
      const log = observationsOf(store);
      const [mine, theirs] = [ctx.id('r'), ctx.id('r')];
      const t = `${theirs}-t`;
      for (const scope of ['thread', 'resource'] as const) {
        const memory = observingMemory(store, scope, false);
        if (scope === 'thread') await memory.createThread({ threadId: t, resourceId: theirs });
        await memory.saveMessages({
          messages: [
            {
              threadId: t,
              resourceId: theirs,
              role: 'user',
              content: observedContent(`${t}-m`, 'word '.repeat(300)),
            },
          ],
        });
        for (const call of ['prepare', 'inspect'] as const) {
          await expectRejects(
            () =>
              (memory.observations as NonNullable<typeof memory.observations>)[call]({
                threadId: t,
                resourceId: mine,
              }),
            ['INVALID_ARGUMENT'],
            `${call} of another resource's thread (${scope} scope)`,
          );
        }
        expectEqual(
          await log.head(`resource:${mine}`),
          null,
          `no log written for the caller (${scope} scope)`,
        );
        expectEqual(await log.head(`thread:${t}`), null, `no log written for the thread (${scope} scope)`);
      }
    },
  ),
];
