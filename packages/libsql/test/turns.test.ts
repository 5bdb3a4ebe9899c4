import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('libsql: turn records as stored', () => {
  it('keeps the body as a JSON string literal (a NUL round-trips) and pages through the thread index', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const url = `file:${dir}/turns.db`;
    const store = new LibSQLStore({ url });
    cleanups.push(() => store.close());
    await store.init();
    const row = {
      id: 'm1',
      threadId: 't1',
      resourceId: 'r1',
      createdAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)),
      body: '{"a":"before\u0000after \u{10FFFF}"}',
    };
    await store.saveThread({
      id: 't1',
      resourceId: 'r1',
      title: '',
      metadata: {},
      createdAt: row.createdAt,
      updatedAt: row.createdAt,
    });
    await store.turns.put(row);
    expect(await store.turns.get('m1')).toEqual(row);

    const client = createClient({ url });
    cleanups.push(() => client.close());
    const { rows } = await client.execute('SELECT body, typeof(body) AS type, created_at FROM engram_turns');
    expect({ ...rows[0] }).toEqual({
      body: JSON.stringify(row.body),
      type: 'text',
      created_at: row.createdAt.getTime(),
    });
    const plan = await client.execute({
      sql: `EXPLAIN QUERY PLAN SELECT id FROM engram_turns WHERE thread_id = ?
        AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT 10`,
      args: ['t1', 1, 1, 'x'],
    });
    const detail = plan.rows.map((r) => String(r.detail)).join('\n');
    expect(detail).toContain('engram_turns_thread_created_id');
    expect(detail).not.toContain('TEMP B-TREE');
  });
});
