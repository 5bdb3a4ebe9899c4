import { describe, expect, it } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import { PostgresStore } from '../src/index.ts';
import { describePg } from './env.ts';

describe('the pg descriptor', () => {
  it('names the adapter, its package and its URL schemes; row locks never break', () => {
    expect(descriptor).toMatchObject({
      name: 'pg',
      package: '@engram/pg',
      schemes: ['postgres:', 'postgresql:'],
    });
    expect(descriptor.leaseMs()).toBe(0);
    expect(descriptor.service.envVar).toBe('ENGRAM_PG_URL');
  });

  it('opens a PostgresStore with the options given, refusing bad ones as the store does', async () => {
    const store = await descriptor.open('postgres://127.0.0.1:9/app', {
      schemaName: 'tools',
      tablePrefix: 't_',
    });
    expect(store).toBeInstanceOf(PostgresStore);
    expect(store).toMatchObject({ name: 'pg', schemaName: 'tools', tablePrefix: 't_' });
    await store.close();
    await expect(descriptor.open('postgres://127.0.0.1:9/app', { maxConnections: 0 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('refuses to provision without ENGRAM_PG_URL', async () => {
    await expect(descriptor.service.provision('x', {})).rejects.toThrow('ENGRAM_PG_URL is not set');
  });
});

describePg('the pg descriptor on the server', (url) => {
  it('provisions a fresh schema that a store opened through it writes to, and drops it', async () => {
    const provisioned = await descriptor.service.provision('descriptor', { ENGRAM_PG_URL: url });
    const store = await descriptor.open(provisioned.url, provisioned.options);
    try {
      await store.updateResource({ resourceId: 'r', workingMemory: 'hello' });
      expect((await store.getResourceById({ resourceId: 'r' }))?.workingMemory).toBe('hello');
      const other = await descriptor.service.provision('descriptor', { ENGRAM_PG_URL: url });
      expect(other.options.schemaName).not.toBe(provisioned.options.schemaName);
      const fresh = await descriptor.open(other.url, other.options);
      expect(await fresh.getResourceById({ resourceId: 'r' })).toBeNull();
      await fresh.close();
      await other.drop();
    } finally {
      await store.close();
      await provisioned.drop();
    }
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [
        provisioned.options.schemaName,
      ]);
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  });
});

describe('PostgresStore options', () => {
  it("a misspelt option is INVALID_ARGUMENT naming the one meant; tools' options of other adapters are left out", async () => {
    const url = 'postgres://127.0.0.1:9/app';
    for (const [options, meant] of [
      [{ schemaname: 'tenant_a' }, 'schemaName'],
      [{ tablePrefx: 't_' }, 'tablePrefix'],
      [{ vectors: { hnsw: { efsearch: 40 } } }, 'vectors.hnsw.efSearch'],
      [{ vectors: { backnd: 'real[]' } }, 'vectors.backend'],
    ] as const) {
      expect(() => new PostgresStore({ connectionString: url, ...options } as never)).toThrow(
        expect.objectContaining({
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining(`did you mean ${meant}?`),
        }),
      );
    }
    const store = await descriptor.open(url, { schemaName: 'tools', synchronous: 'normal', leaseMs: 5 });
    expect(store).toMatchObject({ schemaName: 'tools' });
    await store.close();
  });
});
