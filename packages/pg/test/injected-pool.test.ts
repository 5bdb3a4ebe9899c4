import { MemoryError } from '@engram/core';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { describePg, randomName } from './env.ts';

describePg('PostgresStore with an injected pool recognised by shape', (url) => {
  const schemaName = randomName('engram_shape');
  const real = new pg.Pool({ connectionString: url, max: 2 });

  afterAll(async () => {
    await real.query(`DROP SCHEMA IF EXISTS ${schemaName} CASCADE`);
    await real.end();
  });

  it('accepts a pool from another copy of pg (same methods, other class) and works against the server', async () => {
    // What a second copy of `pg` in the tree hands over: not an instance of this copy's Pool.
    const foreign = {
      connect: () => real.connect(),
      query: (text: string, values?: unknown[]) => real.query(text, values),
    };
    expect(foreign instanceof pg.Pool).toBe(false);
    const store = new PostgresStore({ pool: foreign as unknown as pg.Pool, schemaName });
    const at = new Date();
    const thread = {
      id: randomName('t'),
      resourceId: randomName('r'),
      title: 'A',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    };
    await store.saveThread(thread);
    const message = {
      id: randomName('m'),
      threadId: thread.id,
      resourceId: thread.resourceId,
      role: 'user' as const,
      content: { format: 2 as const, parts: [{ type: 'text' as const, text: 'hi' }] },
      type: 'v2',
      createdAt: at,
    };
    await store.saveMessages([message]);
    expect((await store.listMessages({ threadId: thread.id })).messages.map((m) => m.id)).toEqual([
      message.id,
    ]);
    await store.close();
    // close() leaves an injected pool open for its owner.
    const rows = await real.query(`SELECT count(*)::int AS n FROM ${schemaName}.engram_threads`);
    expect(rows.rows[0].n).toBe(1);
  });

  it.each([
    ['a connection string', 'postgres://localhost/x', 'got string'],
    ['a pg.Client-like object without query', { connect: () => undefined }, 'lacks query()'],
    ['pool options instead of a pool', { connectionString: 'postgres://x' }, 'lacks connect(), query()'],
  ])('refuses %s as pool, naming what is missing', (_name, pool, text) => {
    const create = () => new PostgresStore({ pool: pool as unknown as pg.Pool });
    expect(create).toThrow(MemoryError);
    expect(create).toThrow('pg: pool must be a pg.Pool');
    expect(create).toThrow(text);
    expect(() => create()).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
