import {
  InMemoryStore,
  type ListMessagesArgs,
  type MemoryStorage,
  type Message,
  type Thread,
} from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, randomName, sentText, type TestDatabase } from './env.ts';

const at = new Date('2024-02-02T00:00:00.000Z');

function thread(id: string, resourceId: string): Thread {
  return { id, resourceId, title: id, metadata: {}, createdAt: at, updatedAt: at };
}

function message(id: string, t: Thread, i: number): Message {
  return {
    id,
    threadId: t.id,
    resourceId: t.resourceId,
    role: 'user',
    content: `message ${i}`,
    type: 'text',
    createdAt: new Date(at.getTime() + i * 1000),
  };
}

describePg('kept message counts', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  const oracle = new InMemoryStore();
  const run = randomName('c');
  const [a, b, c] = ['a', 'b', 'c'].map((name) => thread(`${run}-${name}`, `${run}-r1`)) as [
    Thread,
    Thread,
    Thread,
  ];
  const ids = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => `${run}-m${String(from + i).padStart(3, '0')}`);

  beforeAll(async () => {
    db = await createDatabase(url);
    store = new PostgresStore({ connectionString: db.url });
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  async function both(call: (s: MemoryStorage) => Promise<unknown>): Promise<void> {
    await call(store);
    await call(oracle);
  }

  /** Totals of full pages (the ones a kept count answers) match the oracle's. */
  async function expectTotals(threadId: string, expected: number): Promise<void> {
    const queries: ListMessagesArgs[] = [
      { threadId, perPage: 5 },
      { threadId, perPage: 5, page: 1, direction: 'ASC' },
      { threadId, perPage: 5, resourceId: `${run}-r1` },
      { threadId, perPage: 5, resourceId: `${run}-r2` },
      { threadId, perPage: 5, resourceId: `${run}-nobody` },
      { threadId, perPage: 5, dateRange: { start: new Date(at.getTime() + 10_000) } },
    ];
    for (const query of queries) {
      const [got, want] = [await store.listMessages(query), await oracle.listMessages(query)];
      expect({ query, total: got.total, ids: got.messages.map((m) => m.id) }).toEqual({
        query,
        total: want.total,
        ids: want.messages.map((m) => m.id),
      });
    }
    expect((await store.listMessages({ threadId, perPage: 5 })).total).toBe(expected);
  }

  /** The counts table agrees with a `count(*)` of the messages, pair by pair. */
  async function expectNoDrift(): Promise<void> {
    const drift = await db.query(
      `SELECT coalesce(c.thread_id, m.thread_id) AS thread_id, c.n, m.n AS actual
         FROM (SELECT thread_id, resource_id, n FROM engram_message_counts WHERE n <> 0) c
         FULL JOIN (SELECT thread_id, resource_id, count(*)::int AS n FROM engram_messages
                    GROUP BY thread_id, resource_id) m
           ON m.thread_id = c.thread_id AND m.resource_id = c.resource_id
        WHERE c.n IS DISTINCT FROM m.n`,
    );
    expect(drift).toEqual([]);
  }

  it('totals stay right through saves, overwrites, moves, deletes and deleteThread', async () => {
    for (const t of [a, b, c]) await both((s) => s.saveThread(t));
    await both((s) => s.saveMessages(ids(0, 30).map((id, i) => message(id, a, i))));
    await expectTotals(a.id, 30);
    await expectTotals(b.id, 0);

    // Saved again into the same thread: overwritten, not counted twice.
    await both((s) => s.saveMessages(ids(0, 10).map((id, i) => message(id, a, i + 100))));
    await expectTotals(a.id, 30);

    // Moved: 8 from a to b, in one batch with 4 new ones for b.
    await both((s) => s.saveMessages([...ids(20, 28), ...ids(30, 34)].map((id, i) => message(id, b, i))));
    await expectTotals(a.id, 22);
    await expectTotals(b.id, 12);

    // A failed batch (one thread missing) changes nothing.
    const missing = thread(`${run}-missing`, `${run}-r1`);
    await expect(
      store.saveMessages([message(ids(0, 1)[0]!, c, 1), message(`${run}-x`, missing, 2)]),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expectTotals(a.id, 22);
    await expectTotals(c.id, 0);

    // The thread changes hands: its messages keep their resource, and the filtered totals say so.
    await both((s) => s.saveThread({ ...a, resourceId: `${run}-r2` }));
    await expectTotals(a.id, 22);
    await both((s) =>
      s.saveMessages(ids(40, 46).map((id, i) => message(id, { ...a, resourceId: `${run}-r2` }, i))),
    );
    await expectTotals(a.id, 28);

    // Deleted: from both threads at once, with an unknown id among them.
    await both((s) => s.deleteMessages([...ids(0, 3), ids(20, 21)[0]!, ids(41, 42)[0]!, `${run}-unknown`]));
    await expectTotals(a.id, 24);
    await expectTotals(b.id, 11);
    await expectNoDrift();

    // deleteThread takes the thread's counts with it; a thread saved again under the id starts at 0.
    await both((s) => s.deleteThread({ threadId: b.id }));
    await both((s) => s.saveThread(b));
    await expectTotals(b.id, 0);
    await both((s) => s.saveMessages(ids(50, 57).map((id, i) => message(id, b, i))));
    await expectTotals(b.id, 7);
    await expectTotals(a.id, 24);
    await expectNoDrift();
    const rows = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM engram_message_counts WHERE thread_id = $1',
      [b.id],
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('saveMessages sends 1 statement, whether the messages are new or exist already', async () => {
    const sent: string[] = [];
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // The test database is dropped WITH (FORCE): a client still closing then hears its backend end.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          sent.push(sentText(args[0]).trim().split(/\s+/)[0]!);
          return query(...args);
        },
      });
    });
    const recorded = new PostgresStore({ pool });
    const t = thread(`${run}-rt`, `${run}-r1`);
    try {
      await recorded.init();
      await recorded.saveThread(t);
      sent.length = 0;
      await recorded.saveMessages(ids(100, 120).map((id, i) => message(id, t, i)));
      expect(sent).toEqual(['WITH']);
      sent.length = 0;
      await recorded.saveMessages(ids(110, 130).map((id, i) => message(id, t, i + 50)));
      expect(sent).toEqual(['WITH']);
      expect((await recorded.listMessages({ threadId: t.id, perPage: 10 })).total).toBe(30);
    } finally {
      await recorded.close();
      await pool.end();
    }
  });
});
