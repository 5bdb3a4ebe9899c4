import { afterEach, describe, expect, it, vi } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import { OracleStore } from '../src/index.ts';
import { fakePool, oracledb } from './fixtures.ts';

describe('the Oracle adapter descriptor', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('names the adapter, its package, its scheme and its service; row locks are never broken', () => {
    expect(descriptor).toMatchObject({ name: 'oracle', package: '@engram/oracle', schemes: ['oracle:'] });
    expect(descriptor.service.envVar).toBe('ENGRAM_ORACLE_URL');
    expect(descriptor.leaseMs()).toBe(0);
  });

  it('opens an OracleStore for an oracle:// URL with the shared options and its own, connecting only when used', async () => {
    const fake = fakePool();
    const createPool = vi.spyOn(oracledb, 'createPool').mockResolvedValue(fake.pool);
    const store = await descriptor.open('oracle://app%40x:s3cret@db.example:1521/FREEPDB1', {
      prefix: 'insp_',
      maxConnections: 3,
      connectTimeoutMs: 2_500,
      jsonType: 'clob',
    });
    expect(store).toBeInstanceOf(OracleStore);
    expect(store.name).toBe('oracle');
    expect(createPool).not.toHaveBeenCalled();
    await store.listThreads({ resourceId: 'r1' });
    expect(createPool.mock.calls[0]?.[0]).toMatchObject({
      user: 'app@x',
      password: 's3cret',
      connectString: 'db.example:1521/FREEPDB1',
      poolMin: 0,
      poolMax: 3,
      connectTimeout: 2.5,
      transportConnectTimeout: 2.5,
      queueTimeout: 30_000,
    });
    const ddl = fake.sent.map((s) => s.sql).join('\n');
    expect(ddl).toContain('CREATE TABLE insp_threads (');
    expect(ddl).toContain('CHECK (metadata IS JSON)');
    expect(fake.sent.at(-1)?.sql).toMatch(/FROM insp_threads t WHERE t\.resource_id = :resource_id/);
    await store.close();
    // Without the shared options, the store's own defaults (and its own `tablePrefix`).
    const plain = await descriptor.open('oracle://u:p@h/S', { tablePrefix: 'own_' });
    await plain.getThreadById({ threadId: 't1' });
    expect(createPool.mock.calls[1]?.[0]).toMatchObject({ poolMax: 8, connectTimeout: 10 });
    expect(fake.sent.at(-1)?.sql).toMatch(/FROM own_threads t WHERE t\.id = :thread_id$/);
    await plain.close();
  });

  it('refuses a URL that is not oracle:// and bad options with INVALID_ARGUMENT', async () => {
    await expect(descriptor.open('postgres://u:p@h/db')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(descriptor.open('oracle://u:p@h/S', { prefix: 'bad-prefix' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('refuses to provision without ENGRAM_ORACLE_URL', async () => {
    await expect(descriptor.service.provision('x', {})).rejects.toThrow(/ENGRAM_ORACLE_URL/);
  });

  it('provisions a table prefix of its own, and drops its tables (children first) on its own pool', async () => {
    const fake = fakePool();
    const createPool = vi.spyOn(oracledb, 'createPool').mockResolvedValue(fake.pool);
    const url = 'oracle://engram:engram@127.0.0.1:1521/FREEPDB1';
    const provisioned = await descriptor.service.provision('descriptor test!', { ENGRAM_ORACLE_URL: url });
    expect(provisioned.url).toBe(url);
    const prefix = String(provisioned.options.prefix);
    expect(prefix).toMatch(/^edescriptorte_[0-9a-f]{8}_$/);
    const other = await descriptor.service.provision('descriptor test!', { ENGRAM_ORACLE_URL: url });
    expect(other.options.prefix).not.toBe(prefix);
    expect(createPool).not.toHaveBeenCalled();
    await provisioned.drop();
    expect(createPool.mock.calls[0]?.[0]).toMatchObject({
      user: 'engram',
      connectString: '127.0.0.1:1521/FREEPDB1',
    });
    expect(fake.sent.map((s) => s.sql)).toEqual(
      [
        'backfills',
        'settings',
        'turns',
        'observations',
        'message_term_counts',
        'message_terms',
        'message_vectors',
        'vector_space',
        'messages',
        'threads',
        'resources',
        'migrations',
      ].map((table) => `DROP TABLE ${prefix}${table} PURGE`),
    );
    expect(fake.events).toEqual(['release', 'pool closed']);
  });
});

describe('OracleStore options', () => {
  it("a misspelt option is INVALID_ARGUMENT naming the one meant; tools' options of other adapters are left out", async () => {
    const credentials = { user: 'u', password: 'p', connectString: 'db:1521/FREEPDB1' };
    expect(() => new OracleStore({ ...credentials, tableprefix: 'tenant_a_' } as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('did you mean tablePrefix?'),
      }),
    );
    const store = await descriptor.open('oracle://u:p@db:1521/FREEPDB1', { synchronous: 'normal' });
    expect(store).toBeInstanceOf(OracleStore);
    await store.close();
  });
});
