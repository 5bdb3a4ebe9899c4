import type { MemoryStorage, Message } from '@engram/core';
import { expectEqual, expectRejects, idsOf } from '../assert.ts';
import { oneWinnerEach, raceSeparately } from '../concurrency/separate.ts';
import { racerMessage, racerOwner } from '../concurrency/tasks.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { SPACE } from '../vectors.ts';
import { FIRST_WRITE_ROUNDS, racers } from './concurrency.ts';
import { ownershipChecks } from './ownership.ts';

const check = defineArea('isolation');

/** Characters that mean something to SQL LIKE, globs, regexes, JSON, key separators or shells. */
export const HOSTILE_SUFFIXES = [
  ':',
  '*',
  '%',
  '_',
  "'",
  '"',
  '{',
  '}',
  '\\',
  ' ',
  'with space',
  '😀',
  '{ "$gt": \'\' }',
  '.*',
  '?',
  '[a]',
  '/',
  '#',
  '\t',
  'x%_*:\'"{}\\ 🧪',
];

/** `prefix` padded with `fill` to exactly 255 UTF-16 code units (the longest valid id). */
function longId(prefix: string, fill: string): string {
  let id = prefix;
  while (id.length + fill.length <= 255) id += fill;
  return id.padEnd(255, 'z');
}

async function expectResourceSees(
  store: MemoryStorage,
  resourceId: string,
  threadIds: string[],
  what: string,
): Promise<void> {
  const page = await store.listThreads({ resourceId, perPage: false, direction: 'ASC' });
  expectEqual(idsOf(page.threads).sort(), [...threadIds].sort(), `${what}: listThreads({ resourceId })`);
}

/**
 * The records of the store's optional domains keyed by `m`'s long ids: its keyword hit, its
 * vector (in the suite's space), a turn and a thread log, each written and read back.
 */
async function expectDomainsKeyedBy(store: MemoryStorage, m: Message, fill: string): Promise<void> {
  const what = `ids of ${JSON.stringify(fill)}`;
  const { id, threadId, resourceId } = m;
  if (store.keywords) {
    const hits = await store.keywords.search({ query: 'content', topK: 5, resourceId });
    expectEqual(
      hits.map((h) => h.messageId),
      [id],
      `keyword hits, ${what}`,
    );
  }
  if (store.vectors) {
    await store.vectors.claimSpace(SPACE);
    const vector = new Float32Array(SPACE.dimensions);
    vector[0] = 1;
    await store.vectors.upsertVectors(SPACE, [{ messageId: id, hash: `h-${id}`, vector }]);
    const hits = await store.vectors.searchVectors({ space: SPACE, vector, topK: 2, resourceId, threadId });
    expectEqual(
      hits.map((h) => h.messageId),
      [id],
      `vector hits, ${what}`,
    );
  }
  if (store.turns) {
    const row = { id, threadId, resourceId, createdAt: at(2), body: '{}' };
    await store.turns.put(row);
    expectEqual(await store.turns.get(id), row, `turn, ${what}`);
  }
  if (store.observations) {
    const row = {
      key: `thread:${threadId}`,
      resourceId,
      threadId,
      generation: 1,
      version: 1,
      body: '{}',
      updatedAt: at(3),
    };
    expectEqual(await store.observations.swap(null, row), true, `first swap of a thread log, ${what}`);
    expectEqual(await store.observations.head(row.key), row, `thread log, ${what}`);
  }
}

/** Alice's thread with one message, Bob's thread with one message, and a snapshot to compare. */
async function twoTenants(store: MemoryStorage, id: (prefix: string) => string) {
  const alice = thread(id('t-alice'), id('alice'));
  const bob = thread(id('t-bob'), id('bob'));
  await store.saveThread(alice);
  await store.saveThread(bob);
  const aliceMessage = message(id('m-alice'), alice, at(1), { content: { text: 'from alice' } });
  const bobMessage = message(id('m-bob'), bob, at(2), { content: { text: 'from bob' } });
  await store.saveMessages([aliceMessage, bobMessage]);
  const snapshot = async () => ({
    threads: [
      await store.getThreadById({ threadId: alice.id }),
      await store.getThreadById({ threadId: bob.id }),
    ],
    alice: await store.listMessages({ threadId: alice.id, perPage: false }),
    bob: await store.listMessages({ threadId: bob.id, perPage: false }),
  });
  return { alice, bob, aliceMessage, bobMessage, before: await snapshot(), snapshot };
}

/** Nothing crosses resources or threads, whatever the ids look like. */
export const isolationChecks = [
  check('ids that are prefixes of each other (r1/r10) do not see each other', async (ctx) => {
    const store = await ctx.store();
    const base = ctx.id('r');
    const r1 = `${base}1`;
    const r10 = `${base}10`;
    const t1 = thread(`${r1}-t`, r1);
    const t10 = thread(`${r10}-t`, r10);
    const t1b = thread(`${r1}-t0`, r1);
    for (const t of [t1, t10, t1b]) await store.saveThread(t);
    const m1 = message(`${t1.id}-m`, t1, at(1));
    const m10 = message(`${t10.id}-m`, t10, at(1));
    await store.saveMessages([m1, m10]);
    await expectResourceSees(store, r1, [t1.id, t1b.id], 'r1');
    await expectResourceSees(store, r10, [t10.id], 'r10');
    expectEqual(
      await store.getThreadById({ threadId: t10.id, resourceId: r1 }),
      null,
      "r1 reading r10's thread",
    );
    expectEqual(
      await store.getThreadById({ threadId: t1.id, resourceId: r10 }),
      null,
      "r10 reading r1's thread",
    );
    const cross = await store.listMessages({ threadId: t10.id, resourceId: r1, include: [{ id: m10.id }] });
    expectEqual([cross.messages, cross.total], [[], 0], "r1 listing r10's thread");
    const leak = await store.listMessages({
      threadId: t1.id,
      resourceId: r1,
      include: [{ id: m10.id, withPreviousMessages: 1, withNextMessages: 1 }],
    });
    expectEqual(idsOf(leak.messages), [m1.id], "an include window of r10's message seen from r1");
    await store.updateResource({ resourceId: r1, workingMemory: 'one', metadata: { who: 'r1' } });
    await store.updateResource({ resourceId: r10, workingMemory: 'ten', metadata: { who: 'r10' } });
    expectEqual((await store.getResourceById({ resourceId: r1 }))?.workingMemory, 'one', 'r1 working memory');
    expectEqual((await store.getResourceById({ resourceId: r10 }))?.metadata, { who: 'r10' }, 'r10 metadata');
    expectEqual(await store.getResourceById({ resourceId: base }), null, 'the common prefix has no resource');
    await store.deleteThread({ threadId: t1.id });
    expectEqual(await store.listMessagesById({ ids: [m1.id, m10.id] }), [m10], 'deleting r1/t keeps r10/t');
  }),

  check(
    `hostile ids (${HOSTILE_SUFFIXES.length} kinds: : * % _ ' " { } \\ spaces emoji) round-trip and stay apart`,
    async (ctx) => {
      const store = await ctx.store();
      const base = ctx.id('h');
      const plain = `${base}plain`;
      const plainThread = thread(`${plain}-t`, plain);
      await store.saveThread(plainThread);
      await store.saveMessages([message(`${plain}-m`, plainThread, at(1))]);
      await store.updateResource({ resourceId: plain, workingMemory: 'plain' });
      const hostile = HOSTILE_SUFFIXES.map((suffix) => `${base}${suffix}`);
      for (const [i, id] of hostile.entries()) {
        const t = thread(id, id, { title: id, metadata: { [id]: id } });
        await store.saveThread(t);
        expectEqual(await store.getThreadById({ threadId: id }), t, `thread ${JSON.stringify(id)}`);
        const m = message(id, t, at(i), { content: { id } });
        await store.saveMessages([m]);
        expectEqual(
          (await store.listMessages({ threadId: id })).messages,
          [m],
          `messages of ${JSON.stringify(id)}`,
        );
        expectEqual(await store.listMessagesById({ ids: [id] }), [m], `message ${JSON.stringify(id)} by id`);
        await store.updateResource({ resourceId: id, workingMemory: id, metadata: { [id]: i } });
        const resource = await store.getResourceById({ resourceId: id });
        expectEqual(
          [resource?.workingMemory, resource?.metadata],
          [id, { [id]: i }],
          `resource ${JSON.stringify(id)}`,
        );
      }
      for (const id of hostile) {
        await expectResourceSees(store, id, [id], `resource ${JSON.stringify(id)}`);
        const cross = await store.listMessages({ threadId: plainThread.id, resourceId: id });
        expectEqual(cross.total, 0, `resource ${JSON.stringify(id)} listing the plain thread`);
      }
      await expectResourceSees(store, plain, [plainThread.id], 'the plain resource');
      expectEqual(
        (await store.getResourceById({ resourceId: plain }))?.workingMemory,
        'plain',
        'plain resource',
      );
      await store.deleteThread({ threadId: `${base}%` });
      expectEqual(
        (await store.getThreadById({ threadId: plainThread.id }))?.id,
        plainThread.id,
        "deleting '%' kept others",
      );
      expectEqual((await store.listMessages({ threadId: `${base}_` })).total, 1, "deleting '%' kept '_'");
      await store.deleteMessages([`${base}*`]);
      expectEqual(
        (await store.listMessages({ threadId: `${base}:` })).total,
        1,
        "deleting message '*' kept ':'",
      );
    },
  ),

  check(
    "255-character ids (ASCII, emoji, 3-byte characters: up to 765 bytes of UTF-8) round-trip, stay apart from their prefixes, and key the optional domains' records too",
    async (ctx) => {
      const store = await ctx.store();
      const base = ctx.id('long');
      // '中' is 3 bytes of UTF-8 in one UTF-16 code unit: the most bytes a 255-character id takes,
      // several of them in one key (space, resource, thread, message) where a domain indexes them.
      for (const fill of ['a', '😀', '中']) {
        const id = longId(`${base}-`, fill);
        const t = thread(id, id);
        await store.saveThread(t);
        expectEqual(
          await store.getThreadById({ threadId: id, resourceId: id }),
          t,
          `thread of ${id.length} chars`,
        );
        const m = message(id, t, at(1));
        await store.saveMessages([m]);
        await store.updateResource({ resourceId: id, workingMemory: 'long' });
        expectEqual(await store.listMessagesById({ ids: [id] }), [m], `message of ${id.length} chars`);
        expectEqual((await store.getResourceById({ resourceId: id }))?.workingMemory, 'long', 'resource');
        const shorter = id.slice(0, 254);
        expectEqual(
          await store.getThreadById({ threadId: shorter }),
          null,
          'a 254-char prefix is another id',
        );
        await expectResourceSees(store, shorter, [], 'a 254-char prefix');
        await expectDomainsKeyedBy(store, m, fill);
      }
    },
  ),

  check("saveMessages with another resource's message id is CONFLICT and changes nothing", async (ctx) => {
    const store = await ctx.store();
    const { bob, aliceMessage, before, snapshot } = await twoTenants(store, ctx.id);
    const stolen = message(aliceMessage.id, bob, at(3), { content: { text: 'bob took it' } });
    await expectRejects(store.saveMessages([stolen]), ['CONFLICT'], "bob saving alice's message id");
    expectEqual(await snapshot(), before, 'both threads and their messages after the refused save');
    expectEqual(await store.listMessagesById({ ids: [aliceMessage.id] }), [aliceMessage], "alice's message");
  }),

  check(
    "a batch that takes another resource's message id is refused whole (its other messages are not saved; threads are checked first)",
    async (ctx) => {
      const store = await ctx.store();
      const { alice, bob, aliceMessage, bobMessage, before, snapshot } = await twoTenants(store, ctx.id);
      const fresh = message(ctx.id('m-bob-new'), bob, at(4));
      const edited = { ...bobMessage, content: { text: 'bob edited' } };
      const stolen = message(aliceMessage.id, bob, at(5));
      for (const batch of [
        [fresh, edited, stolen],
        [stolen, fresh, edited],
      ]) {
        await expectRejects(
          store.saveMessages(batch),
          ['CONFLICT'],
          `a batch of bob's new message, bob's edit and alice's id (${idsOf(batch).join(', ')})`,
        );
        expectEqual(await snapshot(), before, 'every thread and message after the refused batch');
        expectEqual(await store.listMessagesById({ ids: [fresh.id] }), [], "bob's new message was not saved");
      }
      // Every thread of the batch is checked before any id: a message naming a thread of
      // another resource wins over the stolen id, wherever it stands.
      const intoAlice = message(
        ctx.id('m-bob-in-alice'),
        { id: alice.id, resourceId: bob.resourceId },
        at(6),
      );
      await expectRejects(
        store.saveMessages([stolen, intoAlice]),
        ['INVALID_ARGUMENT'],
        "a batch of alice's id, then a message into alice's thread",
      );
      expectEqual(await snapshot(), before, 'every thread and message after the refused batch');
    },
  ),

  check(
    (init) =>
      `concurrent saveMessages of one new message id by ${racers(init)} resources: exactly one wins, the others get CONFLICT (${FIRST_WRITE_ROUNDS} ids)`,
    async (ctx) => {
      const store = await ctx.store();
      const task = {
        kind: 'save-message',
        messageIds: Array.from({ length: FIRST_WRITE_ROUNDS }, () => ctx.id('race-m')),
        threadPrefix: ctx.id('race-t'),
        resourcePrefix: ctx.id('race-r'),
      } as const;
      const n = racers(ctx.init);
      for (let racer = 0; racer < n; racer++) {
        const owner = racerOwner(task, racer);
        await store.saveThread(thread(owner.id, owner.resourceId));
      }
      const winners = oneWinnerEach(
        ctx,
        'saveMessages races',
        task.messageIds,
        await raceSeparately(ctx, store, task),
      );
      const stored = await store.listMessagesById({ ids: task.messageIds });
      expectEqual(
        task.messageIds.map((id) => stored.find((m) => m.id === id)),
        task.messageIds.map((id, i) => racerMessage(task, id, winners[i]!)),
        'each message as its winner saved it',
      );
      for (let racer = 0; racer < n; racer++) {
        const page = await store.listMessages({ threadId: racerOwner(task, racer).id, perPage: false });
        expectEqual(
          idsOf(page.messages).sort(),
          task.messageIds.filter((_, i) => winners[i] === racer).sort(),
          `the thread of racer p${racer} holds exactly the messages it won`,
        );
      }
    },
  ),

  check('a message moves between threads of its own resource, not to another resource', async (ctx) => {
    const store = await ctx.store();
    const { alice, aliceMessage } = await twoTenants(store, ctx.id);
    const second = thread(ctx.id('t-alice2'), alice.resourceId);
    await store.saveThread(second);
    const moved = { ...aliceMessage, threadId: second.id, content: { text: 'moved' } };
    expectEqual(await store.saveMessages([moved]), [moved], 'saveMessages moving within the resource');
    expectEqual((await store.listMessages({ threadId: alice.id })).total, 0, 'the old thread is empty');
    expectEqual((await store.listMessages({ threadId: second.id })).messages, [moved], 'the new thread');
  }),

  check(
    'updateMessages refuses patches naming threadId or resourceId (INVALID_ARGUMENT, nothing changed)',
    async (ctx) => {
      const store = await ctx.store();
      const { bob, aliceMessage, before, snapshot } = await twoTenants(store, ctx.id);
      for (const extra of [{ threadId: bob.id }, { resourceId: bob.resourceId }]) {
        const patch = { id: aliceMessage.id, content: 'patched', ...extra } as never;
        await expectRejects(
          store.updateMessages([patch]),
          ['INVALID_ARGUMENT'],
          `a patch with ${Object.keys(extra)[0]}`,
        );
      }
      expectEqual(await snapshot(), before, 'both threads and their messages after the refused patches');
    },
  ),

  check(
    'a misspelt scoping key (resourceID, threadID) is refused (INVALID_ARGUMENT), never ignored into a wider read',
    async (ctx) => {
      const store = await ctx.store();
      const { alice, bob, before, snapshot } = await twoTenants(store, ctx.id);
      // Ignored, each of these would read past its filter: every resource's threads, Bob's thread
      // and messages through an unchecked owner, or every thread of a resource.
      const calls: [string, () => Promise<unknown>][] = [
        ['listThreads({ resourceID })', () => store.listThreads({ resourceID: alice.resourceId } as never)],
        [
          'getThreadById({ threadId, resourceID })',
          () => store.getThreadById({ threadId: bob.id, resourceID: alice.resourceId } as never),
        ],
        [
          'listMessages({ threadId, resourceID })',
          () => store.listMessages({ threadId: bob.id, resourceID: alice.resourceId } as never),
        ],
        [
          'listMessages({ include: [{ id, withPreviousMessage }] })',
          () =>
            store.listMessages({
              threadId: alice.id,
              include: [{ id: ctx.id('m-alice'), withPreviousMessage: 5 }],
            } as never),
        ],
        ['deleteThread({ threadID })', () => store.deleteThread({ threadID: bob.id } as never)],
        [
          'updateResource({ resourceId, workingMemory, metaData })',
          () => store.updateResource({ resourceId: bob.resourceId, metaData: { x: 1 } } as never),
        ],
      ];
      if (store.keywords) {
        const keywords = store.keywords;
        calls.push([
          'keywords.search({ …, threadID })',
          () =>
            keywords.search({
              query: 'from',
              topK: 5,
              resourceId: alice.resourceId,
              threadID: alice.id,
            } as never),
        ]);
      }
      for (const [what, call] of calls) await expectRejects(call, ['INVALID_ARGUMENT'], what);
      expectEqual(await snapshot(), before, 'both threads and their messages after the refused calls');
      expectEqual(
        await store.getResourceById({ resourceId: bob.resourceId }),
        null,
        'no resource row written by the refused updateResource',
      );
    },
  ),

  check('thread-scoped working memory and messages stay in their thread', async (ctx) => {
    const store = await ctx.store();
    const r = ctx.id('r');
    const a = thread(ctx.id('t'), r, { metadata: { workingMemory: 'A only' } });
    const b = thread(ctx.id('t'), r);
    await store.saveThread(a);
    await store.saveThread(b);
    await store.saveMessages([message(ctx.id('m'), a, at(1)), message(ctx.id('m'), b, at(1))]);
    await store.updateThread({ id: b.id, metadata: { workingMemory: 'B only' } });
    expectEqual(
      (await store.getThreadById({ threadId: a.id }))?.metadata.workingMemory,
      'A only',
      'thread A',
    );
    expectEqual(
      (await store.getThreadById({ threadId: b.id }))?.metadata.workingMemory,
      'B only',
      'thread B',
    );
    expectEqual((await store.listMessages({ threadId: a.id })).total, 1, 'thread A has its one message');
  }),

  ...ownershipChecks,
];
