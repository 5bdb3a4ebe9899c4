import { Memory, type MemoryStorage, type Message, type Thread } from '@engram/core';
import { expectEqual, expectRejects, expectTrue, show } from '../assert.ts';
import { defineArea } from '../define.ts';
import { at, message, partsContent, richMetadata, thread } from '../fixtures.ts';
import { HOSTILE_SUFFIXES } from './isolation.ts';

const check = defineArea('clone');

/** A source thread with working memory, rich metadata and `count` messages (pairs share a `createdAt`). */
async function source(store: MemoryStorage, threadId: string, resourceId: string, count: number) {
  const t = thread(threadId, resourceId, {
    title: 'source title',
    metadata: { ...richMetadata(), workingMemory: '# thread memory' },
  });
  await store.saveThread(t);
  const messages = Array.from({ length: count }, (_, i) =>
    message(`${threadId}-m${i}`, t, at(Math.floor(i / 2)), {
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: i % 3 === 1 ? partsContent(`part ${i} ✓`) : `text ${i}`,
    }),
  );
  if (messages.length) await store.saveMessages(messages);
  return { thread: (await store.getThreadById({ threadId })) as Thread, messages };
}

/** Everything of a message but its id and thread: what a copy must keep. */
function body({ id: _id, threadId: _threadId, ...rest }: Message) {
  return rest;
}

async function all(store: MemoryStorage, threadId: string): Promise<Message[]> {
  return (await store.listMessages({ threadId, perPage: false })).messages;
}

/** `memory.cloneThread`: built from the contract, so it must behave the same on every store. */
export const cloneChecks = [
  check(
    'cloneThread copies messages exactly (order, createdAt, content) with the working memory, and leaves the source untouched',
    async (ctx) => {
      const store = await ctx.store();
      const memory = new Memory({ storage: store });
      const r = ctx.id('r');
      const { thread: src, messages } = await source(store, ctx.id('t'), r, 7);
      const before = await all(store, src.id);
      const newThreadId = ctx.id('clone');
      const result = await memory.cloneThread({ threadId: src.id, resourceId: r, newThreadId });
      const stored = await store.getThreadById({ threadId: newThreadId, resourceId: r });
      expectEqual(stored?.id, newThreadId, 'the clone is stored under newThreadId');
      expectEqual(stored?.title, src.title, 'the clone keeps the title');
      expectEqual(
        stored?.metadata,
        { ...src.metadata, clonedFrom: { threadId: src.id, messageId: messages.at(-1)?.id ?? null } },
        'the clone metadata: the source metadata (working memory included) and clonedFrom',
      );
      const copies = await all(store, newThreadId);
      expectEqual(copies.map(body), before.map(body), 'the copies, in order, without ids');
      expectEqual(
        copies.map((m) => m.id),
        result.clonedMessageIds,
        'clonedMessageIds, in the stored order',
      );
      expectTrue(
        copies.every((m) => !messages.some((s) => s.id === m.id)),
        'every copy has a new id',
      );
      expectEqual(await store.getThreadById({ threadId: src.id }), src, 'the source thread after cloning');
      expectEqual(await all(store, src.id), before, 'the source messages after cloning');
    },
  ),

  check('cloneThread with upToMessageId copies up to and including it', async (ctx) => {
    const store = await ctx.store();
    const memory = new Memory({ storage: store });
    const r = ctx.id('r');
    const { thread: src } = await source(store, ctx.id('t'), r, 6);
    const ordered = await all(store, src.id);
    for (const k of [0, 2, 3, 5]) {
      const upTo = ordered[k] as Message;
      const { thread: clone } = await memory.cloneThread({ threadId: src.id, upToMessageId: upTo.id });
      const copies = await all(store, clone.id);
      expectEqual(copies.map(body), ordered.slice(0, k + 1).map(body), `a clone up to message #${k}`);
      expectEqual(
        clone.metadata.clonedFrom,
        { threadId: src.id, messageId: upTo.id },
        `clonedFrom of the clone up to #${k}`,
      );
    }
  }),

  check('cloneThread keeps hostile ids apart: source, clone id and resource', async (ctx) => {
    const store = await ctx.store();
    const memory = new Memory({ storage: store });
    const base = ctx.id('h');
    for (const suffix of HOSTILE_SUFFIXES) {
      const r = `${base}${suffix}`;
      const { thread: src } = await source(store, `${base}-t${suffix}`, r, 2);
      // A neighbour whose ids are prefixes of these.
      const { thread: near } = await source(store, `${base}-t`, base, 1);
      const newThreadId = `${base}-c${suffix}`;
      await memory.cloneThread({ threadId: src.id, resourceId: r, newThreadId });
      expectEqual((await all(store, newThreadId)).length, 2, `the clone of ${show(src.id)}`);
      expectEqual(
        (await store.getThreadById({ threadId: newThreadId }))?.resourceId,
        r,
        `the clone's resource for ${show(r)}`,
      );
      expectEqual((await all(store, near.id)).length, 1, `the neighbour ${show(near.id)}`);
      await expectRejects(
        () => memory.cloneThread({ threadId: src.id, resourceId: base }),
        ['INVALID_ARGUMENT'],
        `cloning ${show(src.id)} as resource ${show(base)}`,
      );
      await store.deleteThread({ threadId: near.id });
    }
  }),

  check(
    'cloneThread refusals write nothing: unknown thread, upToMessageId of another thread, an existing newThreadId (CONFLICT)',
    async (ctx) => {
      const store = await ctx.store();
      const memory = new Memory({ storage: store });
      const r = ctx.id('r');
      const { thread: src } = await source(store, ctx.id('t'), r, 3);
      const { thread: other } = await source(store, ctx.id('o'), r, 2);
      const listing = async () => (await store.listThreads({ resourceId: r, perPage: false })).threads;
      const before = await listing();
      const otherBefore = await all(store, other.id);
      await expectRejects(
        () => memory.cloneThread({ threadId: ctx.id('missing') }),
        ['NOT_FOUND'],
        'cloning an unknown thread',
      );
      await expectRejects(
        () => memory.cloneThread({ threadId: src.id, upToMessageId: (otherBefore[0] as Message).id }),
        ['INVALID_ARGUMENT'],
        'upToMessageId of another thread',
      );
      await expectRejects(
        () => memory.cloneThread({ threadId: src.id, newThreadId: other.id }),
        ['CONFLICT'],
        'newThreadId of an existing thread',
      );
      await expectRejects(
        () => memory.cloneThread({ threadId: src.id, newThreadId: { $gt: '' } as never }),
        ['INVALID_ARGUMENT'],
        'an operator object as newThreadId',
      );
      expectEqual(await listing(), before, 'the threads of the resource after refused clones');
      expectEqual(await all(store, other.id), otherBefore, 'the thread named as newThreadId');
      expectEqual(await store.getThreadById({ threadId: other.id }), other, 'its record');
    },
  ),
];
