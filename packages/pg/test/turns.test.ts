import type { TurnRow } from '@engram/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, randomName, type TestDatabase } from './env.ts';

describePg('pg turn records, read back with plain SQL', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  const schemaName = randomName('turns');
  const row = (id: string, ms: number, body = '{}'): TurnRow => ({
    id,
    threadId: 't1',
    resourceId: 'r',
    createdAt: new Date(Date.UTC(2026, 11, 1, 12, 0, 0, ms)),
    body,
  });

  beforeAll(async () => {
    db = await createDatabase(url);
    store = new PostgresStore({ connectionString: db.url, schemaName, tablePrefix: 'app_' });
    await store.init();
    const at = new Date(0);
    // The threads the rows go into: t0–t19 (t1 among them).
    for (let i = 0; i < 20; i++)
      await store.saveThread({
        id: `t${i}`,
        resourceId: 'r',
        title: '',
        metadata: {},
        createdAt: at,
        updatedAt: at,
      });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('keeps the body as a JSON string literal in <schema>.<prefix>turns, created_at as ms', async () => {
    const turn = row('m1', 123, '{"text":"nul \\u0000 \u0000, \\"quoted\\", 📅"}');
    await store.turns?.put(turn);
    const [stored] = await db.query<{ body: string; created_at: string }>(
      `SELECT body, created_at FROM "${schemaName}".app_turns WHERE id = 'm1'`,
    );
    expect(stored).toEqual({ body: JSON.stringify(turn.body), created_at: String(turn.createdAt.getTime()) });
    expect(await store.turns?.get('m1')).toEqual(turn);
  });

  it('pages a thread from the (thread_id, created_at, id) index, without a sort', async () => {
    for (let i = 0; i < 2_000; i++)
      await store.turns?.put({ ...row(`p${i}`, i % 500), threadId: `t${i % 20}` });
    await db.query(`ANALYZE "${schemaName}".app_turns`);
    const plan = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM "${schemaName}".app_turns WHERE thread_id = 't3'
        AND (created_at, id) < (1, 'x') ORDER BY created_at DESC, id DESC LIMIT 10`,
    );
    const text = JSON.stringify(plan);
    expect(text).toContain('app_turns_thread_created_id_idx');
    expect(text).not.toContain('Sort');
  });
});
