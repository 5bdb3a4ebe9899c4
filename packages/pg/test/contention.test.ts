import type { Message } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresDriver, PostgresStore, type PostgresTx } from '../src/index.ts';
import { createDatabase, describePg, type TestDatabase } from './env.ts';

/** A small seeded generator, so a failing run can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describePg('writers contending for the same threads and messages', (url) => {
  let db: TestDatabase;
  const stores: PostgresStore[] = [];
  const threads = ['A', 'B', 'C'];
  const at = new Date('2024-06-01T00:00:00.000Z');

  beforeAll(async () => {
    db = await createDatabase(url);
    for (let i = 0; i < 4; i++)
      stores.push(new PostgresStore({ connectionString: db.url, maxConnections: 2 }));
    await stores[0]!.init();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await db?.drop();
  });

  async function deadlocks(): Promise<number> {
    await db.query('SELECT pg_stat_force_next_flush()');
    const rows = await db.query<{ n: number }>(
      'SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return rows[0]!.n;
  }

  // Every writer takes thread locks before message locks, each in one ordered pass (a save's
  // message locks are its insert, in id order, for new and existing rows alike); moving
  // messages, creating the same ids at once, deleting threads and bumping updatedAt from 4
  // stores at once must neither deadlock nor fail with anything but NOT_FOUND (a thread deleted
  // a moment earlier).
  it('mixed writes from 4 stores: no deadlocks, no errors but NOT_FOUND', async () => {
    const thread = (id: string) => ({
      id,
      resourceId: 'r',
      title: '',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    });
    for (const id of threads) await stores[0]!.saveThread(thread(id));
    const before = await deadlocks();
    const errors: string[] = [];
    let done = 0;
    await Promise.all(
      stores.map(async (store, w) => {
        const next = random(1000 + w);
        for (let i = 0; i < 120; i++) {
          const ids = [...new Set(Array.from({ length: 5 }, () => `m${Math.floor(next() * 12)}`))];
          const target = threads[Math.floor(next() * threads.length)]!;
          const op = next();
          try {
            if (op < 0.35) {
              const batch: Message[] = ids.map((id) => ({
                id,
                threadId: target,
                resourceId: 'r',
                role: 'user',
                content: `${w}.${i}`,
                type: 'text',
                createdAt: new Date(at.getTime() + i),
              }));
              await store.saveMessages(batch);
            } else if (op < 0.55) {
              await store.updateMessages(ids.map((id) => ({ id, content: `${w}:${i}` })));
            } else if (op < 0.7) {
              await store.deleteMessages(ids);
            } else if (op < 0.8) {
              await store.deleteThread({ threadId: target });
              await store.saveThread(thread(target));
            } else if (op < 0.9) {
              await store.updateThread({ id: target, metadata: { [`w${w}`]: i } });
            } else {
              await store.updateWorkingMemoryAtomically({
                scope: 'thread',
                threadId: target,
                update: (current) => `${current ?? ''}.`,
              });
            }
            done++;
          } catch (error) {
            const code = (error as { code?: string }).code;
            if (code !== 'NOT_FOUND') errors.push(String(error));
          }
        }
      }),
    );
    expect(errors).toEqual([]);
    expect(done).toBeGreaterThan(400);
    const deadlocked = (await deadlocks()) - before;
    console.log(`pg contention: ${done} operations, ${deadlocked} deadlocks`);
    expect(deadlocked).toBe(0);
    // Every stored message still points at a stored thread of its resource.
    const orphans = await db.query(
      `SELECT m.id FROM engram_messages m LEFT JOIN engram_threads t ON t.id = m.thread_id
        WHERE t.id IS NULL OR t.resource_id <> m.resource_id`,
    );
    expect(orphans).toEqual([]);
    // The kept counts match the rows, through every move, delete and thread deletion.
    const drift = await db.query(
      `SELECT coalesce(c.thread_id, m.thread_id) AS thread_id, c.n, m.n AS actual
         FROM (SELECT thread_id, resource_id, n FROM engram_message_counts WHERE n <> 0) c
         FULL JOIN (SELECT thread_id, resource_id, count(*)::int AS n FROM engram_messages
                    GROUP BY thread_id, resource_id) m
           ON m.thread_id = c.thread_id AND m.resource_id = c.resource_id
        WHERE c.n IS DISTINCT FROM m.n`,
    );
    expect(drift).toEqual([]);
  });
  // The pattern the ordered insert removes: a save holding an existing message while it creates
  // a new id that another save, which did not see the existing one, created first. Saves of
  // overlapping id sets (some existing, some deleted a moment ago) into different threads.
  it('saves creating and moving the same ids from 4 stores: no deadlocks, nothing lost', async () => {
    const names = ['S1', 'S2', 'S3'];
    for (const id of names) {
      await stores[0]!.saveThread({
        id,
        resourceId: 'r',
        title: '',
        metadata: {},
        createdAt: at,
        updatedAt: at,
      });
    }
    const before = await deadlocks();
    const errors: string[] = [];
    let saved = 0;
    await Promise.all(
      stores.map(async (store, w) => {
        const next = random(2000 + w);
        for (let i = 0; i < 100; i++) {
          const ids = [...new Set(Array.from({ length: 4 }, () => `s${Math.floor(next() * 8)}`))];
          try {
            if (next() < 0.2) {
              await store.deleteMessages(ids.slice(0, 2));
              continue;
            }
            const threadId = names[Math.floor(next() * names.length)]!;
            await store.saveMessages(
              ids.map((id) => ({
                id,
                threadId,
                resourceId: 'r',
                role: 'user' as const,
                content: `${w}.${i}`,
                type: 'text',
                createdAt: new Date(at.getTime() + i),
              })),
            );
            saved++;
          } catch (error) {
            errors.push(String(error));
          }
        }
      }),
    );
    expect(errors).toEqual([]);
    expect(saved).toBeGreaterThan(250);
    const deadlocked = (await deadlocks()) - before;
    console.log(`pg contention (saves of the same ids): ${saved} saves, ${deadlocked} deadlocks`);
    expect(deadlocked).toBe(0);
    const counts = await db.query<{ thread_id: string; n: number; actual: number }>(
      `SELECT t.id AS thread_id, coalesce(sum(c.n), 0)::int AS n,
              (SELECT count(*)::int FROM engram_messages m WHERE m.thread_id = t.id) AS actual
         FROM engram_threads t LEFT JOIN engram_message_counts c ON c.thread_id = t.id
        WHERE t.id = ANY($1::text[]) GROUP BY t.id`,
      [names],
    );
    for (const row of counts) expect(row.n).toBe(row.actual);
  });
  // The interleaving behind a deadlock seen once in CI: a save whose messages did not exist when
  // it locked its threads inserts a low id, then meets a higher id another writer saved since;
  // a second save found that higher id existing. If the second one locked the existing row
  // before inserting the low id (two passes), each would wait for the other. One ordered pass
  // over the message rows (the insert) leaves one of them to start over instead.
  it('a save meeting a row saved since it locked its threads waits in id order: no deadlock', async () => {
    const driver = new PostgresDriver({ connectionString: db.url });
    const clients = [new pg.Client(db.url), new pg.Client(db.url)];
    try {
      for (const id of ['D1', 'D2', 'D3']) {
        await stores[0]!.saveThread({
          id,
          resourceId: 'r',
          title: '',
          metadata: {},
          createdAt: at,
          updatedAt: at,
        });
      }
      await Promise.all(clients.map((c) => c.connect()));
      const message = (id: string, threadId: string): Message => ({
        id,
        threadId,
        resourceId: 'r',
        role: 'user',
        content: id,
        type: 'text',
        createdAt: at,
      });
      const before = await deadlocks();
      const [early, late]: PostgresTx[] = clients.map((client) => ({
        client: client as unknown as pg.PoolClient,
        hints: new Set(),
        locked: new Set(),
      }));
      const ids = ['d2', 'd5'];
      await early!.client.query('BEGIN');
      await driver.messages.places(early!, ['D3'], ids); // neither exists yet: D3 only
      await stores[1]!.saveMessages([message('d5', 'D1')]);
      await late!.client.query('BEGIN');
      await driver.messages.places(late!, ['D2'], ids); // d5 exists now, in D1
      const outcome = async (tx: PostgresTx, threadId: string) => {
        try {
          await driver.messages.put(
            tx,
            ids.map((id) => message(id, threadId)),
          );
          await tx.client.query('COMMIT');
          return 'committed';
        } catch (error) {
          await tx.client.query('ROLLBACK');
          return (error as { code?: string }).code === '40P01' ? 'deadlock' : (error as Error).name;
        }
      };
      const first = outcome(early!, 'D3');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const results = await Promise.all([first, outcome(late!, 'D2')]);
      expect(results).not.toContain('deadlock');
      expect(results).toContain('committed');
      expect((await deadlocks()) - before).toBe(0);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => {})));
      await driver.close();
    }
  });

  // The interleaving behind a deadlock seen once in CI: an update whose messages did not exist
  // when it locked their threads (none), saved since into a thread it does not hold. Writing
  // them anyway locked one row and waited for the thread's key lock, which a delete held while
  // waiting for that row; with the delete already committed, it stored the deleted rows again.
  it('an update leaves alone messages saved after its write took its locks: a delete in between holds', async () => {
    await stores[0]!.saveThread({
      id: 'U1',
      resourceId: 'r',
      title: '',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    });
    const updater = new PostgresStore({ connectionString: db.url, maxConnections: 2 });
    const messages = (updater as unknown as { driver: PostgresDriver }).driver.messages;
    const ids = ['u1', 'u2'];
    const { places, byIds } = messages;
    messages.places = async (tx, threadIds, messageIds) => {
      const found = await places(tx, threadIds, messageIds); // neither exists yet: nothing locked
      await stores[1]!.saveMessages(
        ids.map((id) => ({
          id,
          threadId: 'U1',
          resourceId: 'r',
          role: 'user',
          content: id,
          type: 'text',
          createdAt: at,
        })),
      );
      return found;
    };
    // The delete runs between the update's read and its write when the update reads them, else after.
    let deleted = false;
    const remove = async () => {
      await stores[2]!.deleteMessages(ids);
      deleted = true;
    };
    messages.byIds = async (read, tx) => {
      const found = await byIds(read, tx);
      if (tx) await remove();
      return found;
    };
    try {
      const updated = await updater.updateMessages(ids.map((id) => ({ id, content: `${id} edited` })));
      expect(updated).toEqual([]);
      if (!deleted) await remove();
      expect(await stores[0]!.listMessagesById({ ids })).toEqual([]);
      const { total } = await stores[0]!.listMessages({ threadId: 'U1' });
      expect(total).toBe(0);
    } finally {
      await updater.close();
    }
  });
});
