import type { ObservationRow } from '@engram/core';
import pg from 'pg';
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

  // A swap starting a generation updates the newest row and inserts the next in one statement.
  // The erasure's DELETE waits for the row the swap updates, then does not see the row the swap
  // inserted (its snapshot predates it): deleting once left the new generation of an erased
  // resource behind.
  it('deleteResource removes a generation that a swap in flight adds to the resource log', async () => {
    const log = store.observations;
    const first: ObservationRow = {
      ...row('t1', 'a'),
      key: 'resource:erased',
      resourceId: 'erased',
      threadId: null,
    };
    expect(await log?.swap(null, first)).toBe(true);
    const swapping = new pg.Client({ connectionString: db.url });
    await swapping.connect();
    try {
      const table = `"${schemaName}".app_observations`;
      await swapping.query('BEGIN');
      await swapping.query(
        `UPDATE ${table} SET version = 2 WHERE key = 'resource:erased' AND generation = 1`,
      );
      await swapping.query(
        `INSERT INTO ${table} (key, generation, resource_id, thread_id, version, body, updated_at)
         VALUES ('resource:erased', 2, 'erased', NULL, 2, '"b"', now())`,
      );
      const erasing = store.deleteResource({ resourceId: 'erased' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await swapping.query('COMMIT');
      expect((await erasing).observations).toBe(1);
      expect(await log?.generations('resource:erased')).toEqual([]);
      expect(await db.query(`SELECT generation FROM ${table} WHERE key = 'resource:erased'`)).toEqual([]);
    } finally {
      await swapping.end();
    }
  });
});
