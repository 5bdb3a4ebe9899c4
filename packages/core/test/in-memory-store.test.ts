import { describe, expect, it } from 'vitest';
import { InMemoryStore, isMemoryError, type Message, type Thread } from '../src/index.ts';
import { caught } from './support.ts';

function thread(id: string, resourceId: string, extra: Partial<Thread> = {}): Thread {
  const at = new Date('2024-01-01T00:00:00.000Z');
  return { id, resourceId, title: '', metadata: {}, createdAt: at, updatedAt: at, ...extra };
}

function message(id: string, threadId: string, resourceId: string, ms: number): Message {
  return {
    id,
    threadId,
    resourceId,
    role: 'user',
    content: { format: 2, parts: [{ type: 'text', text: id }] },
    type: 'v2',
    createdAt: new Date(ms),
  };
}

async function store() {
  const s = new InMemoryStore();
  await s.init();
  return s;
}

describe('InMemoryStore: the contract semantics Memory relies on', () => {
  it('declares atomic working-memory updates and is process-local', () => {
    const s = new InMemoryStore();
    expect(s.capabilities.atomicWorkingMemory).toBe(true);
    expect(typeof s.updateWorkingMemoryAtomically).toBe('function');
    expect(s.capabilities.processLocal).toBe(true);
  });

  it('init and close are idempotent', async () => {
    const s = await store();
    await s.init();
    await s.close();
    await s.close();
  });

  it('getThreadById: null when absent, null for another resource', async () => {
    const s = await store();
    await s.saveThread(thread('t', 'r1'));
    expect(await s.getThreadById({ threadId: 'missing' })).toBeNull();
    expect(await s.getThreadById({ threadId: 't', resourceId: 'r10' })).toBeNull();
    expect((await s.getThreadById({ threadId: 't', resourceId: 'r1' }))?.id).toBe('t');
  });

  it('returns copies: mutating a returned record changes nothing stored', async () => {
    const s = await store();
    const saved = await s.saveThread(thread('t', 'r', { metadata: { a: { b: 1 } } }));
    (saved.metadata.a as { b: number }).b = 2;
    const read = await s.getThreadById({ threadId: 't' });
    (read!.metadata.a as { b: number }).b = 3;
    expect((await s.getThreadById({ threadId: 't' }))?.metadata).toStrictEqual({ a: { b: 1 } });
  });

  it("title '' and workingMemory '' round-trip as ''", async () => {
    const s = await store();
    expect((await s.saveThread(thread('t', 'r'))).title).toBe('');
    await s.updateResource({ resourceId: 'r', workingMemory: '' });
    expect((await s.getResourceById({ resourceId: 'r' }))?.workingMemory).toBe('');
  });

  it('updateThread shallow-merges metadata, keeps the title when omitted, bumps updatedAt', async () => {
    const s = await store();
    await s.saveThread(thread('t', 'r', { title: 'T', metadata: { a: 1, nested: { x: 1 } } }));
    const updated = await s.updateThread({ id: 't', metadata: { nested: { y: 2 }, b: 2 } });
    expect(updated.title).toBe('T');
    expect(updated.metadata).toStrictEqual({ a: 1, nested: { y: 2 }, b: 2 });
    expect(updated.updatedAt.getTime()).toBeGreaterThan(updated.createdAt.getTime());
    expect(isMemoryError(await caught(() => s.updateThread({ id: 'missing' })), 'NOT_FOUND')).toBe(true);
  });

  it('metadata keys named __proto__ stay data', async () => {
    const s = await store();
    await s.saveThread(thread('t', 'r'));
    const updated = await s.updateThread({
      id: 't',
      metadata: JSON.parse('{"__proto__":{"polluted":true}}'),
    });
    expect(Object.getPrototypeOf(updated.metadata)).toBe(Object.prototype);
    expect(Object.hasOwn(updated.metadata, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const resource = await s.updateResource({
      resourceId: 'r',
      metadata: JSON.parse('{"constructor":{"prototype":{"polluted":true}}}'),
    });
    expect(Object.hasOwn(resource.metadata, 'constructor')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('updateResource creates the resource, replaces workingMemory only when given, merges metadata', async () => {
    const s = await store();
    expect(await s.getResourceById({ resourceId: 'r' })).toBeNull();
    const created = await s.updateResource({ resourceId: 'r', metadata: { a: 1 } });
    expect(created.workingMemory).toBeNull();
    await s.updateResource({ resourceId: 'r', workingMemory: 'wm' });
    const kept = await s.updateResource({ resourceId: 'r', metadata: { b: 2 } });
    expect(kept).toMatchObject({ workingMemory: 'wm', metadata: { a: 1, b: 2 } });
    expect((await s.updateResource({ resourceId: 'r', workingMemory: null })).workingMemory).toBeNull();
  });

  describe('updateWorkingMemoryAtomically', () => {
    it('resource scope creates a missing resource and passes null first', async () => {
      const s = await store();
      const seen: (string | null)[] = [];
      const result = await s.updateWorkingMemoryAtomically({
        scope: 'resource',
        resourceId: 'r',
        update: (current) => {
          seen.push(current);
          return 'v1';
        },
      });
      expect(result).toBe('v1');
      expect(seen).toStrictEqual([null]);
      expect((await s.getResourceById({ resourceId: 'r' }))?.workingMemory).toBe('v1');
    });

    it('thread scope stores at metadata.workingMemory and needs the thread', async () => {
      const s = await store();
      await s.saveThread(thread('t', 'r', { metadata: { keep: true } }));
      await s.updateWorkingMemoryAtomically({ scope: 'thread', threadId: 't', update: () => 'tm' });
      expect((await s.getThreadById({ threadId: 't' }))?.metadata).toStrictEqual({
        keep: true,
        workingMemory: 'tm',
      });
      const error = await caught(() =>
        s.updateWorkingMemoryAtomically({ scope: 'thread', threadId: 'nope', update: () => 'x' }),
      );
      expect(isMemoryError(error, 'NOT_FOUND')).toBe(true);
    });

    it('an update that throws writes nothing, and its error propagates unchanged', async () => {
      const s = await store();
      await s.updateResource({ resourceId: 'r', workingMemory: 'before' });
      const boom = new RangeError('boom');
      const error = await caught(() =>
        s.updateWorkingMemoryAtomically({
          scope: 'resource',
          resourceId: 'r',
          update: () => {
            throw boom;
          },
        }),
      );
      expect(error).toBe(boom);
      expect((await s.getResourceById({ resourceId: 'r' }))?.workingMemory).toBe('before');
      const fresh = await caught(() =>
        s.updateWorkingMemoryAtomically({
          scope: 'resource',
          resourceId: 'new',
          update: () => {
            throw boom;
          },
        }),
      );
      expect(fresh).toBe(boom);
      expect(await s.getResourceById({ resourceId: 'new' })).toBeNull();
    });

    it('an update returning a non-string is INVALID_ARGUMENT and writes nothing', async () => {
      const s = await store();
      const error = await caught(() =>
        s.updateWorkingMemoryAtomically({
          scope: 'resource',
          resourceId: 'r',
          update: () => 3 as unknown as string,
        }),
      );
      expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
      expect(await s.getResourceById({ resourceId: 'r' })).toBeNull();
    });

    it('needs the id of its scope and a known scope', async () => {
      const s = await store();
      for (const args of [
        { scope: 'resource', threadId: 't' },
        { scope: 'thread', resourceId: 'r' },
        { scope: 'global', resourceId: 'r' },
      ]) {
        const error = await caught(() =>
          s.updateWorkingMemoryAtomically({ ...(args as { scope: 'resource' }), update: () => 'x' }),
        );
        expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
      }
    });

    it('concurrent updates of one resource never lose a write', async () => {
      const s = await store();
      await Promise.all(
        Array.from({ length: 100 }, () =>
          s.updateWorkingMemoryAtomically({
            scope: 'resource',
            resourceId: 'r',
            update: (c) => String(Number(c ?? 0) + 1),
          }),
        ),
      );
      expect((await s.getResourceById({ resourceId: 'r' }))?.workingMemory).toBe('100');
    });
  });

  it('rejects bad ids with INVALID_ARGUMENT before touching data', async () => {
    const s = await store();
    for (const bad of ['', 'x'.repeat(256), { $gt: '' }, 7, null]) {
      const id = bad as unknown as string;
      for (const call of [
        () => s.getThreadById({ threadId: id }),
        () => s.getResourceById({ resourceId: id }),
        () => s.updateResource({ resourceId: id, workingMemory: 'x' }),
        () => s.listMessages({ threadId: id }),
        () => s.deleteMessages([id]),
      ]) {
        expect(isMemoryError(await caught(call), 'INVALID_ARGUMENT')).toBe(true);
      }
    }
    expect('x'.repeat(255)).toHaveLength(255);
    expect((await s.updateResource({ resourceId: 'x'.repeat(255) })).id).toHaveLength(255);
  });

  describe('messages', () => {
    async function seeded() {
      const s = await store();
      await s.saveThread(thread('t', 'r'));
      await s.saveThread(thread('u', 'r'));
      await s.saveThread(thread('x', 'other'));
      await s.saveMessages([1, 2, 3, 4, 5].map((n) => message(`m${n}`, 't', 'r', n * 1000)));
      return s;
    }

    it('saveMessages needs existing threads and matching resources, all-or-nothing', async () => {
      const s = await seeded();
      const notFound = await caught(() =>
        s.saveMessages([message('n1', 't', 'r', 1), message('n2', 'missing', 'r', 2)]),
      );
      expect(isMemoryError(notFound, 'NOT_FOUND')).toBe(true);
      const mismatch = await caught(() =>
        s.saveMessages([message('n3', 't', 'r', 1), message('n4', 'x', 'r', 2)]),
      );
      expect(isMemoryError(mismatch, 'INVALID_ARGUMENT')).toBe(true);
      expect(await s.listMessagesById({ ids: ['n1', 'n2', 'n3', 'n4'] })).toStrictEqual([]);
    });

    it('content round-trips deep-equal', async () => {
      const s = await seeded();
      const [m] = await s.listMessagesById({ ids: ['m1'] });
      expect(m).toStrictEqual(message('m1', 't', 'r', 1000));
    });

    it('listMessages DESC with perPage gives the newest page (what recall uses)', async () => {
      const s = await seeded();
      const page = await s.listMessages({ threadId: 't', perPage: 2, direction: 'DESC' });
      expect(page.messages.map((m) => m.id)).toStrictEqual(['m5', 'm4']);
      expect(page).toMatchObject({ total: 5, page: 0, perPage: 2, hasMore: true });
      const all = await s.listMessages({ threadId: 't', perPage: false });
      expect(all.messages.map((m) => m.id)).toStrictEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
      expect(all.hasMore).toBe(false);
      expect((await s.listMessages({ threadId: 't', resourceId: 'other' })).messages).toStrictEqual([]);
    });

    it('orders ties by id, in UTF-8 byte order', async () => {
      const s = await store();
      await s.saveThread(thread('t', 'r'));
      await s.saveMessages(['b', 'a', 'é', 'Z'].map((id) => message(id, 't', 'r', 1)));
      expect((await s.listMessages({ threadId: 't' })).messages.map((m) => m.id)).toStrictEqual([
        'Z',
        'a',
        'b',
        'é',
      ]);
    });

    it('a message saved again with another threadId moves, and both threads are touched', async () => {
      const s = await seeded();
      const before = (await s.getThreadById({ threadId: 'u' }))!.updatedAt;
      await s.saveMessages([message('m1', 'u', 'r', 1000)]);
      expect((await s.listMessages({ threadId: 't' })).messages.map((m) => m.id)).not.toContain('m1');
      expect((await s.listMessages({ threadId: 'u' })).messages.map((m) => m.id)).toStrictEqual(['m1']);
      expect((await s.getThreadById({ threadId: 'u' }))!.updatedAt.getTime()).toBeGreaterThan(
        before.getTime(),
      );
    });

    it('deleteThread removes its messages only', async () => {
      const s = await seeded();
      await s.saveMessages([message('u1', 'u', 'r', 1)]);
      await s.deleteThread({ threadId: 't' });
      expect(await s.listMessagesById({ ids: ['m1', 'm2', 'u1'] })).toHaveLength(1);
      await s.deleteThread({ threadId: 't' });
    });
  });

  it('listThreads: createdAt DESC by default with ties by id, filters AND-ed', async () => {
    const s = await store();
    await s.saveThread(thread('a', 'r', { metadata: { tag: 'x' } }));
    await s.saveThread(thread('b', 'r', { metadata: { tag: 'x' } }));
    await s.saveThread(thread('c', 'r', { createdAt: new Date('2025-01-01'), metadata: { tag: 'y' } }));
    await s.saveThread(thread('d', 'r2', { metadata: { tag: 'x' } }));
    const page = await s.listThreads({ resourceId: 'r' });
    expect(page.threads.map((t) => t.id)).toStrictEqual(['c', 'b', 'a']);
    expect(page).toMatchObject({ total: 3, perPage: 100, hasMore: false });
    const tagged = await s.listThreads({ resourceId: 'r', metadata: { tag: 'x' }, direction: 'ASC' });
    expect(tagged.threads.map((t) => t.id)).toStrictEqual(['a', 'b']);
  });
});
