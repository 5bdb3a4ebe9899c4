import type { ListMessagesArgs, MemoryStorage, Message, Thread } from '@engram/core';
import { InMemoryStore } from '@engram/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstashStore } from '../src/index.ts';
import { runPrefix, upstashSkip, upstashUrl } from './env.ts';
import { dropPrefix, testClient } from './stores.ts';

const title = upstashSkip
  ? `UpstashStore vs InMemoryStore (skipped: ${upstashSkip})`
  : 'UpstashStore vs InMemoryStore';
const prefix = runPrefix('differential');
const at = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms);

/** Threads without `updatedAt`, which each store stamps with its own clock. */
const comparable = (value: unknown): unknown =>
  value === undefined
    ? '<undefined>'
    : JSON.parse(JSON.stringify(value, (key, v) => (key === 'updatedAt' ? undefined : v)));

describe.skipIf(upstashSkip)(title, () => {
  const stores: MemoryStorage[] = [];

  beforeAll(async () => {
    if (!upstashUrl) throw new Error('ENGRAM_UPSTASH_URL must be set: upstash is listed in ENGRAM_REQUIRE');
    const upstash = new UpstashStore({ client: testClient(), prefix });
    await upstash.init();
    stores.push(upstash, new InMemoryStore());
  });

  afterAll(async () => {
    if (upstashUrl) await dropPrefix(prefix);
  });

  /** Runs `op` on both stores and expects the same answer (or the same error code). */
  async function same<T>(op: (s: MemoryStorage) => Promise<T>): Promise<T> {
    const [got, want] = await Promise.all(
      stores.map((s) => op(s).then(comparable, (e: { code?: string }) => ({ error: e.code ?? String(e) }))),
    );
    expect(got).toEqual(want);
    return got as T;
  }

  it('answers like the reference through moves, re-owned threads, ties, ranges and windows', async () => {
    const thread = (id: string, resourceId: string, metadata = {}): Thread => ({
      id,
      resourceId,
      title: id,
      metadata,
      createdAt: at(id.length),
      updatedAt: at(0),
    });
    const msg = (id: string, t: Thread, ms: number, resourceId = t.resourceId): Message => ({
      id,
      threadId: t.id,
      resourceId,
      role: 'assistant',
      content: { format: 2, parts: [{ type: 'text', text: id }] },
      type: 'v2',
      createdAt: at(ms),
    });
    const a = thread('A', 'r1', { kind: 'x', tags: ['t'] });
    const b = thread('B:b', 'r1', { kind: 'y' });
    const c = thread('C*{c}', 'r10', { kind: 'x', tags: [] });
    for (const t of [a, b, c]) await same((s) => s.saveThread(t));
    // Ties on createdAt order by the ids' UTF-8 bytes.
    const ids = ['m-B', 'm-b', 'm-é', 'm-10', 'm-9', 'm-1', 'm:x', 'm*', 'm%', 'm-Z'];
    await same((s) => s.saveMessages(ids.map((id, i) => msg(id, a, Math.floor(i / 3) * 10))));
    await same((s) => s.saveMessages([msg('c-1', c, 5), msg('c-2', c, 15)]));
    await same((s) => s.saveMessages([msg('bad', a, 1, 'r10')]));
    await same((s) => s.saveMessages([msg('new', a, 1), msg('lost', { ...a, id: 'nope' }, 1)]));
    // Move one message, re-own thread A, then add messages under its new resource.
    await same((s) => s.saveMessages([msg('m-é', b, 12)]));
    await same((s) => s.saveThread({ ...a, resourceId: 'r10' }));
    await same((s) => s.saveMessages([msg('late-1', { ...a, resourceId: 'r10' }, 20)]));
    await same((s) => s.saveMessages([msg('late-0', { ...a, resourceId: 'r10' }, 20)]));
    await same((s) =>
      s.updateMessages([{ id: 'm-9', createdAt: at(40) }, { id: 'm-9', content: 'again' }, { id: 'x' }]),
    );
    await same((s) => s.deleteMessages(['m*', 'unknown']));

    const queries: ListMessagesArgs[] = [
      { threadId: 'A' },
      { threadId: 'A', perPage: false, direction: 'DESC' },
      { threadId: 'A', resourceId: 'r1' },
      { threadId: 'A', resourceId: 'r10', direction: 'DESC' },
      { threadId: 'A', resourceId: 'r1 ' },
      ...[0, 1, 2, 3, 4].map((page) => ({ threadId: 'A', perPage: 3, page, direction: 'DESC' as const })),
      { threadId: 'A', dateRange: { start: at(10), end: at(20) } },
      { threadId: 'A', dateRange: { start: at(10), end: at(20), startExclusive: true, endExclusive: true } },
      { threadId: 'A', dateRange: { start: at(10) }, perPage: 2, page: 1, direction: 'DESC' },
      { threadId: 'A', dateRange: { end: at(10) }, perPage: 0 },
      { threadId: 'A', dateRange: { start: at(30), end: at(0) } },
      { threadId: 'A', perPage: 0, include: [{ id: 'm-10', withPreviousMessages: 2, withNextMessages: 1 }] },
      { threadId: 'A', perPage: 2, include: [{ id: 'm-é', withPreviousMessages: 5, withNextMessages: 5 }] },
      {
        threadId: 'B:b',
        resourceId: 'r10',
        include: [{ id: 'late-0', withPreviousMessages: 1, withNextMessages: 9 }],
      },
      { threadId: 'B:b', resourceId: 'r1', include: [{ id: 'late-0', withNextMessages: 9 }, { id: 'm-B' }] },
      { threadId: 'C*{c}', include: [{ id: 'c-2', withPreviousMessages: 9 }, { id: 'missing' }] },
      { threadId: 'nope' },
    ];
    for (const query of queries) await same((s) => s.listMessages(query));
    await same((s) => s.listMessagesById({ ids: ['m-9', 'late-1', 'c-1', 'm*', 'm-B', 'nope'] }));

    for (const resourceId of ['r1', 'r10', 'r']) {
      await same((s) => s.listThreads({ resourceId, direction: 'ASC' }));
      await same((s) => s.listThreads({ resourceId, metadata: { kind: 'x' } }));
      await same((s) => s.listThreads({ resourceId, metadata: { tags: [] }, perPage: 1 }));
      await same((s) => s.listThreads({ resourceId, perPage: 1, page: 1 }));
    }
    await same((s) => s.listThreads({ metadata: { kind: 'x', tags: ['t'] } }));
    await same((s) => s.listThreads({ perPage: 2, page: 1 }));

    await same((s) => s.updateThread({ id: 'B:b', title: '', metadata: { kind: null, n: 1 } }));
    await same((s) => s.getThreadById({ threadId: 'B:b', resourceId: 'r1' }));
    await same((s) => s.getThreadById({ threadId: 'B:b', resourceId: 'r10' }));
    await same((s) => s.updateThread({ id: 'nope', title: 'x' }));
    await same((s) =>
      s.updateWorkingMemoryAtomically!({ scope: 'thread', threadId: 'A', update: (v) => `${v}+1` }),
    );
    await same((s) =>
      s.updateWorkingMemoryAtomically!({ scope: 'thread', threadId: 'A', update: () => null }),
    );
    await same((s) => s.getThreadById({ threadId: 'A' }));
    await same((s) => s.deleteThread({ threadId: 'A' }));
    await same((s) => s.listMessagesById({ ids: ids.concat('late-0', 'late-1', 'new') }));
    await same((s) => s.listMessages({ threadId: 'B:b', include: [{ id: 'm-B' }] }));
    await same((s) => s.listThreads({ direction: 'ASC' }));
  });
});
