import { MEMORY_CONFIG_KEY, Memory } from '@engram/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, randomName, type TestDatabase } from './env.ts';

describePg('pg settings, read back with plain SQL', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  const schemaName = randomName('settings');

  beforeAll(async () => {
    db = await createDatabase(url);
    store = new PostgresStore({ connectionString: db.url, schemaName, tablePrefix: 'app_' });
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('stores a setting as a jsonb object (not a string) in <schema>.<prefix>settings, upserted', async () => {
    await store.settings?.put('k', { a: { b: [1, 'x'] } });
    await store.settings?.put('k', { c: true });
    const rows = await db.query<{ key: string; type: string; value: unknown }>(
      `SELECT key, jsonb_typeof(value) AS type, value FROM "${schemaName}".app_settings`,
    );
    expect(rows).toEqual([{ key: 'k', type: 'object', value: { c: true } }]);
  });

  it("a Memory's first write records its configuration there; the same configuration is not written again", async () => {
    const options = {
      workingMemory: { schema: { type: 'object', properties: { city: { type: 'string' } } } },
    };
    const read = () =>
      db.query<{ mode: string; updated_at: Date }>(
        `SELECT value->'workingMemory'->>'mode' AS mode, updated_at FROM "${schemaName}".app_settings WHERE key = $1`,
        [MEMORY_CONFIG_KEY],
      );
    await new Memory({ storage: store, options }).createThread({ resourceId: 'r' });
    const first = await read();
    expect(first.map((r) => r.mode)).toEqual(['schema']);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await new Memory({ storage: store, options }).createThread({ resourceId: 'r' });
    expect(await read()).toEqual(first);
  });
});
