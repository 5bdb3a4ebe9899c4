import { randomUUID } from 'node:crypto';
import {
  InMemoryStore,
  type JsonValue,
  MemoryError,
  type MemoryStorage,
  type Message,
  type Thread,
} from '@engram/core';
import { sortMessages } from '@engram/core/driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, type TestDatabase } from './env.ts';

const id = (prefix: string) => `${prefix}-${randomUUID()}`;

function thread(resourceId: string, overrides: Partial<Thread> = {}): Thread {
  const at = new Date('2024-05-01T10:00:00.123Z');
  return {
    id: id('t'),
    resourceId,
    title: 'A title',
    metadata: {},
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}

function message(t: Thread, i: number, overrides: Partial<Message> = {}): Message {
  return {
    id: `m-${String(i).padStart(4, '0')}-${t.id}`,
    threadId: t.id,
    resourceId: t.resourceId,
    role: i % 2 ? 'assistant' : 'user',
    content: { format: 2, parts: [{ type: 'text', text: `message ${i}` }] },
    type: 'v2',
    createdAt: new Date(Date.UTC(2024, 0, 1, 0, 0, Math.floor(i / 2), i % 7)),
    ...overrides,
  };
}

describePg('PostgresStore', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  const oracle = new InMemoryStore();

  beforeAll(async () => {
    db = await createDatabase(url);
    store = new PostgresStore({ connectionString: db.url });
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  /** Runs the same call on the store and the oracle and expects equal results. */
  async function both<T>(call: (s: MemoryStorage) => Promise<T>): Promise<T> {
    const [got, want] = await Promise.all([call(store), call(oracle)]);
    expect(got).toEqual(want);
    return got;
  }

  describe('records', () => {
    it('round-trips threads, messages and resources exactly', async () => {
      const r = id('r');
      const t = thread(r, { title: '', metadata: { nested: { a: [1, 2.5, null, 'x'] }, __proto__: 'own' } });
      Object.defineProperty(t.metadata, '__proto__', { value: 'own', enumerable: true });
      await store.saveThread(t);
      const got = await store.getThreadById({ threadId: t.id });
      expect(got).toEqual(t);
      expect(Object.hasOwn(got!.metadata, '__proto__')).toBe(true);

      const contents: JsonValue[] = [
        'plain',
        42,
        -0.5,
        true,
        null,
        [1, 'two'],
        { format: 2, parts: [] },
        { '': { deep: 1e300 } },
      ];
      const messages = contents.map((content, i) => message(t, i, { content }));
      await store.saveMessages(messages);
      const listed = await store.listMessages({ threadId: t.id, perPage: false });
      expect(listed.messages).toEqual(sortMessages(messages));

      const res = await store.updateResource({ resourceId: r, workingMemory: '', metadata: { k: 'v' } });
      expect(res.workingMemory).toBe('');
      expect(await store.getResourceById({ resourceId: r })).toEqual(res);
    });

    it('keeps millisecond precision and dates far from today', async () => {
      const r = id('r');
      const dates = [new Date(1), new Date('1900-02-28T23:59:59.999Z'), new Date('9999-12-31T23:59:59.999Z')];
      const t = thread(r);
      await store.saveThread(t);
      const messages = dates.map((createdAt, i) => message(t, i, { createdAt }));
      await store.saveMessages(messages);
      const { messages: got } = await store.listMessages({ threadId: t.id });
      expect(got.map((m) => m.createdAt.toISOString())).toEqual(
        [...dates].sort((a, b) => a.getTime() - b.getTime()).map((d) => d.toISOString()),
      );
    });

    it('stores the same instant whatever the process and session time zones (LMT offsets with seconds)', async () => {
      const previousTz = process.env.TZ;
      process.env.TZ = 'Europe/Amsterdam';
      const zoned = new URL(db.url);
      zoned.searchParams.set('options', '-c TimeZone=America/St_Johns');
      const s = new PostgresStore({ connectionString: zoned.toString() });
      try {
        const dates = [
          new Date('1850-06-01T12:00:00.123Z'),
          new Date('0001-01-01T00:00:00.000Z'), // the first stored instant (STORED_DATES)
          new Date('9999-12-31T23:59:59.999Z'), // the last
        ];
        const t = thread(id('r'), { createdAt: dates[0]!, updatedAt: dates[1]! });
        await s.saveThread(t);
        expect(await s.getThreadById({ threadId: t.id })).toEqual(t);
        const messages = dates.map((createdAt, i) => message(t, i, { createdAt }));
        await s.saveMessages(messages);
        const range = { start: dates[0], end: dates[0] };
        const got = await s.listMessages({ threadId: t.id, dateRange: range });
        expect(got.messages).toEqual([messages[0]]);
        expect((await store.listMessages({ threadId: t.id, perPage: false })).messages).toEqual(
          sortMessages(messages),
        );
      } finally {
        await s.close();
        if (previousTz === undefined) delete process.env.TZ;
        else process.env.TZ = previousTz;
      }
    });

    it('orders ids by UTF-8 bytes (COLLATE "C")', async () => {
      const r = id('r');
      const t = thread(r);
      await both((s) => s.saveThread(t));
      const at = new Date('2024-01-01T00:00:00.000Z');
      const ids = ['b', 'B', 'a', 'é', 'z', '_', '%', '~', '10', '9', 'ä', '日本', '😀'].map(
        (x) => `${x}-${t.id}`,
      );
      const messages = ids.map((mid, i) => message(t, i, { id: mid, createdAt: at }));
      await both((s) => s.saveMessages(messages));
      await both((s) => s.listMessages({ threadId: t.id, perPage: false }));
      await both((s) => s.listMessages({ threadId: t.id, perPage: 5, page: 1, direction: 'DESC' }));
    });

    it('rejects what PostgreSQL cannot store with INVALID_ARGUMENT and writes nothing', async () => {
      const t = thread(id('r'));
      await store.saveThread(t);
      const bad = message(t, 1, { content: 'nul \u0000 inside' });
      const error = await store.saveMessages([message(t, 0), bad]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MemoryError);
      expect((error as MemoryError).code).toBe('INVALID_ARGUMENT');
      expect((await store.listMessages({ threadId: t.id })).total).toBe(0);
    });
  });

  describe('threads', () => {
    it('lists with filters, order and paging like the oracle', async () => {
      const r = id('r');
      const other = id('r');
      for (let i = 0; i < 12; i++) {
        const t = thread(i % 3 ? r : other, {
          id: `t${i % 4}-${id('x')}`,
          createdAt: new Date(Date.UTC(2024, 0, 1 + (i % 5))),
          updatedAt: new Date(Date.UTC(2024, 1, 1 + (i % 6))),
          metadata: { n: i % 2, tag: i % 3 ? 'a' : { x: [1] } },
        });
        await both((s) => s.saveThread(t));
      }
      await both((s) => s.listThreads({ resourceId: r }));
      await both((s) => s.listThreads({ resourceId: r, perPage: 3, page: 2, direction: 'ASC' }));
      await both((s) => s.listThreads({ resourceId: r, orderBy: 'updatedAt', perPage: 5 }));
      await both((s) => s.listThreads({ resourceId: other, metadata: { tag: { x: [1] } } }));
      await both((s) => s.listThreads({ resourceId: r, metadata: { n: 1, tag: 'a' }, perPage: false }));
      await both((s) => s.listThreads({ resourceId: r, metadata: { missing: null } }));
      await both((s) => s.listThreads({ resourceId: r, perPage: 0 }));
      await both((s) => s.listThreads({ resourceId: r, perPage: 4, page: 9 }));
    });

    it('merges metadata atomically under concurrent updates', async () => {
      const t = thread(id('r'), { metadata: { keep: true } });
      await store.saveThread(t);
      await Promise.all(
        Array.from({ length: 40 }, (_, i) => store.updateThread({ id: t.id, metadata: { [`k${i}`]: i } })),
      );
      const got = await store.getThreadById({ threadId: t.id });
      expect(Object.keys(got!.metadata)).toHaveLength(41);
      expect(got!.title).toBe('A title');
      expect(got!.updatedAt.getTime()).toBeGreaterThan(t.updatedAt.getTime());
    });

    it('updateThread: NOT_FOUND for a missing thread; null values are stored', async () => {
      await expect(store.updateThread({ id: id('nope'), title: 'x' })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      const t = thread(id('r'), { metadata: { a: 1, b: 2 } });
      await both((s) => s.saveThread(t));
      const [got, want] = await Promise.all(
        [store, oracle].map((s) => s.updateThread({ id: t.id, title: '', metadata: { a: null, c: 3 } })),
      );
      expect({ ...got, updatedAt: 0 }).toEqual({ ...want, updatedAt: 0 });
    });

    it('deleteThread removes its messages', async () => {
      const t = thread(id('r'));
      await store.saveThread(t);
      await store.saveMessages([message(t, 0), message(t, 1)]);
      await store.deleteThread({ threadId: t.id });
      expect(await store.getThreadById({ threadId: t.id })).toBeNull();
      expect(await store.listMessagesById({ ids: [message(t, 0).id, message(t, 1).id] })).toEqual([]);
      const rows = await db.query('SELECT count(*)::int AS n FROM engram_messages WHERE thread_id = $1', [
        t.id,
      ]);
      expect(rows[0]).toEqual({ n: 0 });
    });
  });

  describe('messages', () => {
    it('saveMessages is all-or-nothing with NOT_FOUND and resource checks', async () => {
      const r = id('r');
      const t = thread(r);
      await both((s) => s.saveThread(t));
      const good = message(t, 0);
      for (const bad of [
        message(t, 1, { threadId: id('missing') }),
        message(t, 1, { resourceId: id('other') }),
      ]) {
        const errors = await Promise.all(
          [store, oracle].map((s) => s.saveMessages([good, bad]).catch((e) => e)),
        );
        expect(errors.map((e: MemoryError) => e.code)).toEqual([errors[1].code, errors[1].code]);
      }
      await both((s) => s.listMessages({ threadId: t.id }));
      expect((await store.listMessages({ threadId: t.id })).total).toBe(0);
    });

    it('moves a message saved with another thread and bumps both threads', async () => {
      const r = id('r');
      const a = thread(r);
      const b = thread(r);
      await both((s) => s.saveThread(a));
      await both((s) => s.saveThread(b));
      const m = message(a, 0);
      await both((s) => s.saveMessages([m, message(a, 1)]));
      const before = await store.getThreadById({ threadId: a.id });
      await new Promise((resolve) => setTimeout(resolve, 5));
      await both((s) => s.saveMessages([{ ...m, threadId: b.id, content: 'moved' }]));
      await both((s) => s.listMessages({ threadId: a.id }));
      await both((s) => s.listMessages({ threadId: b.id }));
      const after = await store.getThreadById({ threadId: a.id });
      expect(after!.updatedAt.getTime()).toBeGreaterThan(before!.updatedAt.getTime());
    });

    it('pages, ranges and include windows match the oracle', async () => {
      const r = id('r');
      const t = thread(r);
      const u = thread(r);
      await both((s) => s.saveThread(t));
      await both((s) => s.saveThread(u));
      const ms = Array.from({ length: 30 }, (_, i) => message(t, i));
      const others = Array.from({ length: 10 }, (_, i) => message(u, i));
      await both((s) => s.saveMessages([...ms, ...others]));
      const d = (i: number) => ms[i]!.createdAt;
      const cases = [
        {},
        { direction: 'DESC' as const, perPage: 20 },
        { perPage: 7, page: 3 },
        { perPage: 7, page: 4, direction: 'DESC' as const },
        { perPage: false as const, dateRange: { start: d(4), end: d(20) } },
        { dateRange: { start: d(4), end: d(20), startExclusive: true, endExclusive: true } },
        { perPage: 3, include: [{ id: ms[20]!.id, withPreviousMessages: 2, withNextMessages: 3 }] },
        { perPage: 0, include: [{ id: others[5]!.id, withPreviousMessages: 10, withNextMessages: 1 }] },
        {
          perPage: 2,
          direction: 'DESC' as const,
          include: [
            { id: ms[0]!.id, withNextMessages: 4 },
            { id: ms[2]!.id, withPreviousMessages: 5, withNextMessages: 2 },
            { id: 'unknown-id' },
            { id: ms[29]!.id, withPreviousMessages: 1 },
          ],
        },
        { resourceId: id('other'), include: [{ id: ms[3]!.id, withPreviousMessages: 2 }] },
        { resourceId: r, perPage: 5, page: 1, include: [{ id: ms[3]!.id, withPreviousMessages: 2 }] },
        { perPage: 100, page: 1 },
      ];
      for (const args of cases) await both((s) => s.listMessages({ threadId: t.id, ...args }));
    });

    it('updateMessages and deleteMessages match the oracle', async () => {
      const t = thread(id('r'));
      await both((s) => s.saveThread(t));
      const ms = Array.from({ length: 6 }, (_, i) => message(t, i));
      await both((s) => s.saveMessages(ms));
      await both((s) =>
        s.updateMessages([
          { id: ms[0]!.id, content: null },
          { id: ms[1]!.id, role: 'tool', type: 'x' },
          { id: ms[1]!.id, createdAt: new Date(Date.UTC(2030, 0, 1)) },
          { id: 'not-there', content: 'x' },
          { id: ms[2]!.id, content: ['a'] },
        ]),
      );
      await both((s) => s.listMessages({ threadId: t.id }));
      await both((s) => s.deleteMessages([ms[3]!.id, 'not-there', ms[4]!.id]));
      await both((s) => s.listMessagesById({ ids: ms.map((m) => m.id).reverse() }));
    });
  });

  describe('resources and working memory', () => {
    it('updateResource creates, replaces only when given, and merges metadata', async () => {
      const r = id('r');
      const first = await both(async (s) => {
        const got = await s.updateResource({ resourceId: r, metadata: { a: 1 } });
        return { ...got, createdAt: 0, updatedAt: 0 };
      });
      expect(first.workingMemory).toBeNull();
      await both(async (s) => {
        await s.updateResource({ resourceId: r, workingMemory: '# me' });
        const got = await s.updateResource({ resourceId: r, metadata: { b: 2, a: null } });
        return { ...got, createdAt: 0, updatedAt: 0 };
      });
    });

    it('updateWorkingMemoryAtomically serialises writers on separate connections (both scopes)', async () => {
      const r = id('r');
      const t = thread(r);
      await store.saveThread(t);
      const stores = Array.from({ length: 4 }, () => new PostgresStore({ connectionString: db.url }));
      try {
        await Promise.all(
          stores.flatMap((s, w) =>
            Array.from({ length: 15 }, (_, i) => [
              s.updateWorkingMemoryAtomically({
                scope: 'resource',
                resourceId: r,
                update: (cur) => `${cur ?? ''}[${w}.${i}]`,
              }),
              s.updateWorkingMemoryAtomically({
                scope: 'thread',
                threadId: t.id,
                update: (cur) => `${cur ?? ''}[${w}.${i}]`,
              }),
            ]).flat(),
          ),
        );
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
      const resource = await store.getResourceById({ resourceId: r });
      expect(resource!.workingMemory!.match(/\[/g)).toHaveLength(60);
      const got = await store.getThreadById({ threadId: t.id });
      expect((got!.metadata.workingMemory as string).match(/\[/g)).toHaveLength(60);
    });

    it('a throwing update writes nothing, not even a new resource', async () => {
      const r = id('r');
      const boom = new Error('boom');
      await expect(
        store.updateWorkingMemoryAtomically({
          scope: 'resource',
          resourceId: r,
          update: () => {
            throw boom;
          },
        }),
      ).rejects.toBe(boom);
      expect(await store.getResourceById({ resourceId: r })).toBeNull();
      await expect(
        store.updateWorkingMemoryAtomically({ scope: 'thread', threadId: id('nope'), update: () => 'x' }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });

  describe('lifecycle and options', () => {
    it('init and close are idempotent; calls after close fail with CONNECTION', async () => {
      const s = new PostgresStore({ connectionString: db.url });
      await s.init();
      await s.init();
      await s.close();
      await s.close();
      await expect(s.getResourceById({ resourceId: 'x' })).rejects.toMatchObject({ code: 'CONNECTION' });
    });

    it('a dead server gives CONNECTION within the connect timeout', async () => {
      const s = new PostgresStore({
        connectionString: 'postgres://postgres@127.0.0.1:1/postgres',
        connectTimeoutMs: 2000,
      });
      const started = Date.now();
      await expect(s.init()).rejects.toMatchObject({ code: 'CONNECTION', adapter: 'pg' });
      expect(Date.now() - started).toBeLessThan(3000);
      await s.close();
    });

    it('an unroutable host gives CONNECTION after connectTimeoutMs, not a hang', async () => {
      const s = new PostgresStore({
        connectionString: 'postgres://postgres@10.255.255.1:5432/postgres',
        connectTimeoutMs: 800,
      });
      const started = Date.now();
      await expect(s.init()).rejects.toMatchObject({ code: 'CONNECTION' });
      expect(Date.now() - started).toBeLessThan(2500);
      await s.close();
    });

    it('rejects bad options', () => {
      expect(() => new PostgresStore({} as never)).toThrow(MemoryError);
      expect(() => new PostgresStore({ connectionString: db.url, tablePrefix: 'a-b' })).toThrow(
        /tablePrefix/,
      );
      expect(() => new PostgresStore({ connectionString: db.url, schemaName: '' })).toThrow(/schemaName/);
    });
  });
});
