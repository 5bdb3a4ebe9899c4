import type { Message, Thread } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, type TestDatabase } from './env.ts';

const APP = 'engram-terminate-test';

describePg('a connection terminated mid-run (direct connection, not PgBouncer)', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  let admin: pg.Client;
  const at = new Date('2024-02-02T02:02:02.002Z');
  const t: Thread = { id: 't1', resourceId: 'r1', title: '', metadata: {}, createdAt: at, updatedAt: at };
  const msg = (id: string): Message => ({
    id,
    threadId: t.id,
    resourceId: t.resourceId,
    role: 'user',
    content: id,
    type: 'text',
    createdAt: at,
  });

  beforeAll(async () => {
    db = await createDatabase(url);
    const appUrl = new URL(db.url);
    appUrl.searchParams.set('application_name', APP);
    store = new PostgresStore({ connectionString: appUrl.toString(), maxConnections: 3 });
    await store.init();
    await store.saveThread(t);
    await store.saveMessages([msg('m-zzz')]);
    admin = new pg.Client({ connectionString: db.url });
    admin.on('error', () => undefined);
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await store?.close();
    await db?.drop();
  });

  /**
   * Terminates every backend of the store and waits until they are gone (pg_terminate_backend
   * only signals them); returns how many there were.
   */
  async function terminateStore(): Promise<number> {
    const rows = await admin.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      [APP],
    );
    const pids = rows.rows.map((r) => r.pid);
    for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    for (let i = 0; i < 200; i++) {
      const left = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pids]);
      if (left.rowCount === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return pids.length;
  }

  /** Waits until one of the store's backends is waiting for a lock. */
  async function waitForBlockedStore(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const rows = await admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [APP],
      );
      if (rows.rowCount) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the store never blocked');
  }

  it('the failing call gives CONNECTION, nothing of its transaction is visible, the next call works', async () => {
    // Hold the row lock of an existing message: the batch below inserts m-aaa… first (id order),
    // then blocks on m-zzz inside the same statement, with uncommitted rows already written.
    await admin.query('BEGIN');
    await admin.query('SELECT id FROM engram_messages WHERE id = $1 FOR UPDATE', ['m-zzz']);
    const batch = [msg('m-aaa'), msg('m-bbb'), { ...msg('m-zzz'), content: 'changed' }];
    const pending = store.saveMessages(batch).then(
      () => undefined,
      (error: unknown) => error,
    );
    await waitForBlockedStore();
    expect(await terminateStore()).toBeGreaterThan(0);
    const error = await pending;
    await admin.query('ROLLBACK');

    expect(error).toMatchObject({ name: 'MemoryError', adapter: 'pg' });
    expect(['CONNECTION', 'STORAGE']).toContain((error as { code: string }).code);

    const visible = await admin.query('SELECT id, content FROM engram_messages ORDER BY id');
    expect(visible.rows).toEqual([{ id: 'm-zzz', content: 'm-zzz' }]);

    // The next call recovers on a fresh connection.
    const page = await store.listMessages({ threadId: t.id });
    expect(page.messages.map((m) => m.id)).toEqual(['m-zzz']);
    await store.saveMessages(batch);
    expect((await store.listMessages({ threadId: t.id })).messages.map((m) => m.content)).toEqual([
      'm-aaa',
      'm-bbb',
      'changed',
    ]);
  });

  it('an atomic working-memory update cut off mid-transaction writes nothing and the store recovers', async () => {
    await store.updateResource({ resourceId: 'r-wm', workingMemory: 'v1' });
    await admin.query('BEGIN');
    await admin.query('SELECT 1 FROM engram_resources WHERE id = $1 FOR UPDATE', ['r-wm']);
    const pending = store
      .updateWorkingMemoryAtomically({ scope: 'resource', resourceId: 'r-wm', update: () => 'v2' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    await waitForBlockedStore();
    await terminateStore();
    const error = await pending;
    await admin.query('ROLLBACK');
    expect(['CONNECTION', 'STORAGE']).toContain((error as { code?: string })?.code);
    expect((await store.getResourceById({ resourceId: 'r-wm' }))?.workingMemory).toBe('v1');
    expect(
      await store.updateWorkingMemoryAtomically({
        scope: 'resource',
        resourceId: 'r-wm',
        update: (v) => `${v}+1`,
      }),
    ).toBe('v1+1');
  });

  it('idle connections terminated between calls: at most one failing call, then recovery', async () => {
    await Promise.all([1, 2, 3].map(() => store.getThreadById({ threadId: t.id })));
    expect(await terminateStore()).toBeGreaterThan(0);
    const first = await store.getThreadById({ threadId: t.id }).then(
      (thread) => thread,
      (error: unknown) => error,
    );
    if (!(first && 'id' in (first as object))) {
      expect(['CONNECTION', 'STORAGE']).toContain((first as { code?: string }).code);
    }
    expect(await store.getThreadById({ threadId: t.id })).toMatchObject({ id: t.id });
  });
});
