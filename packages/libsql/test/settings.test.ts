import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const { dir, cleanup } = tempDir('engram-libsql-settings-');
afterAll(cleanup);

it('stores a setting as JSON object text in engram_settings, upserted', async () => {
  const url = `file:${dir}/settings.db`;
  const store = new LibSQLStore({ url });
  await store.settings?.put('k', { a: { b: [1, 'x'] } });
  await store.settings?.put('k', { c: true });
  await store.close();
  const raw = createClient({ url });
  try {
    const { rows } = await raw.execute('SELECT key, json_type(value) AS type, value FROM engram_settings');
    expect(rows.map((r) => ({ ...r }))).toEqual([{ key: 'k', type: 'object', value: '{"c":true}' }]);
  } finally {
    raw.close();
  }
});
