import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('libsql: observation logs as stored', () => {
  it('keeps the body as a JSON string literal: a NUL, which a TEXT read would cut at, round-trips', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const url = `file:${dir}/observations.db`;
    const store = new LibSQLStore({ url });
    cleanups.push(() => store.close());
    await store.init();
    const body = 'before\u0000after \u{10FFFF}';
    const row = {
      key: 'resource:r1',
      resourceId: 'r1',
      threadId: null,
      generation: 1,
      version: 1,
      body,
      updatedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)),
    };
    expect(await store.observations.swap(null, row)).toBe(true);
    expect(await store.observations.head('resource:r1')).toEqual(row);

    const client = createClient({ url });
    cleanups.push(() => client.close());
    const { rows } = await client.execute(
      'SELECT body, typeof(body) AS type, thread_id, updated_at FROM engram_observations',
    );
    expect({ ...rows[0] }).toEqual({
      body: JSON.stringify(body),
      type: 'text',
      thread_id: null,
      updated_at: row.updatedAt.getTime(),
    });
  });
});
