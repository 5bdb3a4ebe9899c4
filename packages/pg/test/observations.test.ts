import type { ObservationRow } from '@engram/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, randomName, type TestDatabase } from './env.ts';

describePg('pg observation logs, read back with plain SQL', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  const schemaName = randomName('obs');
  const at = new Date('2026-12-01T12:00:00.123Z');
  const row = (threadId: string, body: string): ObservationRow => ({
    key: `thread:${threadId}`,
    resourceId: 'r',
    threadId,
    generation: 1,
    version: 1,
    body,
    updatedAt: at,
  });

  beforeAll(async () => {
    db = await createDatabase(url);
    store = new PostgresStore({ connectionString: db.url, schemaName, tablePrefix: 'app_' });
    await store.init();
    // A thread log is kept only with its thread.
    for (const id of ['t1', 't2'])
      await store.saveThread({ id, resourceId: 'r', title: '', metadata: {}, createdAt: at, updatedAt: at });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('keeps the body as a JSON string literal in <schema>.<prefix>observations', async () => {
    const body = 'nul \u0000, "quoted", 📅';
    expect(await store.observations?.swap(null, row('t1', body))).toBe(true);
    const [stored] = await db.query<{ body: string; updated_at: Date; thread_id: string }>(
      `SELECT body, updated_at, thread_id FROM "${schemaName}".app_observations WHERE key = 'thread:t1'`,
    );
    expect(stored).toEqual({ body: JSON.stringify(body), updated_at: at, thread_id: 't1' });
    expect((await store.observations?.head('thread:t1'))?.body).toBe(body);
  });

  it('round-trips a body of 4,000,000 characters', async () => {
    const body = `${'é📅\u0000x'.repeat(800_000)}`;
    expect(body.length).toBe(4_000_000);
    expect(await store.observations?.swap(null, row('t2', body))).toBe(true);
    expect((await store.observations?.head('thread:t2'))?.body === body).toBe(true);
  });
});
