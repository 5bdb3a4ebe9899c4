import type { Thread } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, sentText, type TestDatabase } from './env.ts';

const at = new Date('2024-03-03T00:00:00.000Z');
const thread = (id: string): Thread => ({
  id,
  resourceId: 'r',
  title: id,
  metadata: {},
  createdAt: at,
  updatedAt: at,
});

describePg('a one-statement save that another writer overtakes', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  let other: pg.Client;
  let pool: pg.Pool;
  const sent: string[] = [];

  beforeAll(async () => {
    db = await createDatabase(url);
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
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
    store = new PostgresStore({ pool });
    await store.init();
    other = new pg.Client({ connectionString: db.url });
    await other.connect();
  });
  afterAll(async () => {
    await other?.end();
    await store?.close();
    await pool?.end();
    await db?.drop();
  });

  // The save reads where its message is (thread A), then waits for A's lock, held by a writer
  // that moves the message to B. Its statement must write nothing and the save run again as a
  // transaction that locks B too: the message ends in C and every kept count is right.
  it('writes nothing, then saves in a transaction that locks the thread the message moved to', async () => {
    for (const id of ['A', 'B', 'C']) await store.saveThread(thread(id));
    const m = {
      id: 'm',
      threadId: 'A',
      resourceId: 'r',
      role: 'user' as const,
      content: 'x',
      type: 'text',
      createdAt: at,
    };
    await store.saveMessages([m]);
    await other.query('BEGIN');
    await other.query(`SELECT id FROM engram_threads WHERE id IN ('A', 'B') ORDER BY id FOR UPDATE`);
    await other.query(`UPDATE engram_messages SET thread_id = 'B' WHERE id = 'm'`);
    await other.query(`UPDATE engram_message_counts SET n = n - 1 WHERE thread_id = 'A'`);
    await other.query(`INSERT INTO engram_message_counts (thread_id, resource_id, n) VALUES ('B', 'r', 1)`);
    sent.length = 0;
    const saving = store.saveMessages([{ ...m, threadId: 'C', content: 'moved' }]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await other.query('COMMIT');
    await saving;
    expect(sent.slice(0, 2)).toEqual(['WITH', 'BEGIN']);
    const [row] = (await other.query(`SELECT thread_id, content FROM engram_messages WHERE id = 'm'`)).rows;
    expect(row).toEqual({ thread_id: 'C', content: 'moved' });
    const counts = await other.query<{ thread_id: string; n: number }>(
      'SELECT thread_id, n FROM engram_message_counts WHERE n <> 0 ORDER BY thread_id',
    );
    expect(counts.rows).toEqual([{ thread_id: 'C', n: 1 }]);
  });
});
