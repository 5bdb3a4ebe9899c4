import type { MemoryStorage, Thread } from '@engram/core';
import { expectEqual, expectRejects, idsOf } from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, thread } from '../fixtures.ts';
import { NEEDS_ATOMIC, requireAtomic } from '../skip.ts';

const check = defineArea('isolation');

/** Resource ids that look like Sam's `r1`: prefixes, separators, wildcards and quotes. */
const LOOK_ALIKES = ['r10', 'r', 'r1:', 'r1*', 'r1%', '%', 'r1_', "r1'", 'r1"', 'r1 '];

/**
 * Sam's thread with three messages and working memory, and one thread per look-alike resource
 * with a message and resource working memory of its own; `snapshot` reads all of it back.
 */
async function samAndLookAlikes(store: MemoryStorage, id: (prefix: string) => string) {
  const base = id('own');
  const sam = thread(`${base}-sam`, `${base}r1`, { metadata: { workingMemory: 'SAM' } });
  await store.saveThread(sam);
  const samMessages = [1, 2, 3].map((n) => message(`${sam.id}-m${n}`, sam, at(n)));
  await store.saveMessages(samMessages);
  await store.updateResource({ resourceId: sam.resourceId, workingMemory: 'SAM' });
  const eves: Thread[] = [];
  for (const [i, suffix] of LOOK_ALIKES.entries()) {
    const eve = thread(`${base}-eve${i}`, `${base}${suffix}`);
    await store.saveThread(eve);
    await store.saveMessages([message(`${eve.id}-m`, eve, at(2))]);
    await store.updateResource({ resourceId: eve.resourceId, workingMemory: `EVE ${i}` });
    eves.push(eve);
  }
  const snapshot = async () => ({
    threads: await Promise.all([sam, ...eves].map((t) => store.getThreadById({ threadId: t.id }))),
    messages: await Promise.all(
      [sam, ...eves].map((t) => store.listMessages({ threadId: t.id, perPage: false })),
    ),
    resources: await Promise.all(
      [sam, ...eves].map(
        async (t) => (await store.getResourceById({ resourceId: t.resourceId }))?.workingMemory,
      ),
    ),
  });
  return { sam, samMessages, eves, snapshot, before: await snapshot() };
}

/**
 * The ownership rule of every store method that takes both a `threadId` and a `resourceId`: a
 * read treats a thread of another resource as absent, a write refuses it with
 * `INVALID_ARGUMENT` and writes nothing. Each is also checked for the owner, so a store that
 * answers "absent" to everyone fails.
 */
export const ownershipChecks = [
  check(
    `every call given both ids treats a thread of another resource as absent (reads) or refuses it (writes, INVALID_ARGUMENT), for ${LOOK_ALIKES.length} look-alike resources of r1 (r10, r, : * % _ quotes, space)`,
    async (ctx) => {
      const store = await ctx.store();
      const { sam, samMessages, eves, snapshot, before } = await samAndLookAlikes(store, ctx.id);
      const [first] = samMessages;
      expectEqual(
        await store.getThreadById({ threadId: sam.id, resourceId: sam.resourceId }),
        before.threads[0],
        'getThreadById of the owner',
      );
      expectEqual(
        idsOf((await store.listMessages({ threadId: sam.id, resourceId: sam.resourceId })).messages),
        idsOf(samMessages),
        'listMessages of the owner',
      );
      for (const eve of eves) {
        const as = `as resource ${JSON.stringify(eve.resourceId)}`;
        const ids = { threadId: sam.id, resourceId: eve.resourceId };
        expectEqual(
          await store.getThreadById(ids),
          null,
          `getThreadById of the other resource's thread ${as}`,
        );
        for (const extra of [
          {},
          { perPage: false as const },
          { direction: 'DESC' as const, perPage: 1 },
          { dateRange: { start: at(0), end: at(10) } },
          { include: [{ id: first!.id, withPreviousMessages: 2, withNextMessages: 2 }] },
          { perPage: 0, include: [{ id: first!.id, withNextMessages: 5 }] },
        ]) {
          const page = await store.listMessages({ ...ids, ...extra });
          expectEqual(
            [page.messages, page.total, page.hasMore],
            [[], 0, false],
            `listMessages of the other resource's thread ${as}, ${JSON.stringify(extra)}`,
          );
        }
        const own = await store.listMessages({
          threadId: eve.id,
          resourceId: eve.resourceId,
          include: [{ id: first!.id, withPreviousMessages: 2, withNextMessages: 2 }],
        });
        expectEqual(
          idsOf(own.messages),
          [`${eve.id}-m`],
          `an include window of the other resource's message ${as}`,
        );
        const intruder = message(`${eve.id}-intruder`, { id: sam.id, resourceId: eve.resourceId }, at(9));
        const fine = message(`${eve.id}-fine`, eve, at(9));
        await expectRejects(
          store.saveMessages([intruder]),
          ['INVALID_ARGUMENT'],
          `saveMessages into the other resource's thread ${as}`,
        );
        await expectRejects(
          store.saveMessages([fine, intruder]),
          ['INVALID_ARGUMENT'],
          `a batch of an own message and one into the other resource's thread ${as}`,
        );
        expectEqual(
          await store.listMessagesById({ ids: [intruder.id, fine.id] }),
          [],
          `messages of the refused batches ${as}`,
        );
      }
      expectEqual(
        await snapshot(),
        before,
        'every thread, message and working memory after the refused calls',
      );
    },
  ),

  check(
    `updateWorkingMemoryAtomically given both ids refuses a thread of another resource (INVALID_ARGUMENT, nothing written), either scope, ${LOOK_ALIKES.length} look-alike resources${NEEDS_ATOMIC}`,
    async (ctx) => {
      const store = await ctx.store();
      const atomic = requireAtomic(store);
      const { sam, eves, snapshot, before } = await samAndLookAlikes(store, ctx.id);
      let ran = 0;
      for (const eve of eves) {
        for (const scope of ['resource', 'thread'] as const) {
          await expectRejects(
            atomic({
              scope,
              threadId: sam.id,
              resourceId: eve.resourceId,
              update: () => {
                ran++;
                return 'HIJACK';
              },
            }),
            ['INVALID_ARGUMENT'],
            `updateWorkingMemoryAtomically (${scope} scope) of the other resource's thread as resource ${JSON.stringify(eve.resourceId)}`,
          );
        }
      }
      expectEqual(ran, 0, 'times the refused updates ran');
      expectEqual(await snapshot(), before, 'every thread and working memory after the refused updates');
      for (const scope of ['resource', 'thread'] as const) {
        expectEqual(
          await atomic({ scope, threadId: sam.id, resourceId: sam.resourceId, update: (v) => `${v} again` }),
          'SAM again',
          `updateWorkingMemoryAtomically (${scope} scope) of the owner`,
        );
      }
    },
  ),
];
