import type { Message } from '@engram/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
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

  // Every writer takes thread locks before message locks, each in id order; moving messages,
  // deleting threads and bumping updatedAt from 4 stores at once must not fail with anything but
  // NOT_FOUND (a thread deleted a moment earlier). Deadlocks must stay rare: one remaining
  // pattern — several writers creating the same message id at once while another already holds
  // it — can still make PostgreSQL abort one transaction, which the store retries; each costs a
  // deadlock_timeout, so more than 1 in 50 operations fails the test.
  it('mixed writes from 4 stores: deadlocks rare and retried, no errors but NOT_FOUND', async () => {
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
    console.log(`pg contention: ${done} operations, ${deadlocked} deadlocks retried`);
    expect(deadlocked).toBeLessThan(done / 50);
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
});
