import { missingService, service } from '@engram/conformance';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, randomName, type TestDatabase } from './env.ts';

const PGBOUNCER = service('pgbouncer', 'ENGRAM_PGBOUNCER_URL', 'start it with scripts/pgbouncer.sh');

/** A save of two messages into a new thread through `store`. */
async function save(store: PostgresStore): Promise<void> {
  const at = new Date();
  const thread = await store.saveThread({
    id: randomName('t'),
    resourceId: 'r',
    title: '',
    metadata: {},
    createdAt: at,
    updatedAt: at,
  });
  await store.saveMessages(
    ['a', 'b'].map((text) => ({
      id: randomName('m'),
      threadId: thread.id,
      resourceId: 'r',
      role: 'user' as const,
      content: { format: 2 as const, parts: [{ type: 'text' as const, text }] },
      type: 'v2',
      createdAt: at,
    })),
  );
}

/** The store's named statements on the one connection of `pool` (prepared statements are per session). */
async function named(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'engram\\_%'`,
  );
  return rows[0]?.n ?? 0;
}

describePg('PostgresStore named prepared statements', (url) => {
  let db: TestDatabase;
  const pools: pg.Pool[] = [];
  const open = async (at: string, preparedStatements?: boolean) => {
    db ??= await createDatabase(url);
    const target = new URL(at);
    target.pathname = `/${db.name}`;
    const pool = new pg.Pool({ connectionString: target.toString(), max: 1 });
    // The test database is dropped WITH (FORCE): a client still closing then hears its backend end.
    pool.on('error', () => undefined);
    pools.push(pool);
    const store = new PostgresStore({ pool, schemaName: 'prep', preparedStatements });
    await store.init();
    return { store, pool };
  };
  afterAll(async () => {
    for (const pool of pools) await pool.end();
    await db?.drop();
  });

  it('are used on a direct connection by default, and the save then runs from them', async () => {
    const { store, pool } = await open(url);
    expect(store.preparedStatements).toBe(true);
    await save(store);
    await save(store);
    expect(await named(pool)).toBeGreaterThanOrEqual(2);
  });

  it('are never sent with preparedStatements: false', async () => {
    const { store, pool } = await open(url, false);
    expect(store.preparedStatements).toBe(false);
    await save(store);
    expect(await named(pool)).toBe(0);
  });

  it('refuses a preparedStatements that is not a boolean', () => {
    expect(() => new PostgresStore({ connectionString: url, preparedStatements: 'yes' as never })).toThrow(
      'pg: preparedStatements must be a boolean',
    );
  });

  describe.skipIf(PGBOUNCER.skipReason !== undefined)(
    `through PgBouncer${PGBOUNCER.skipReason ? ` (skipped: ${PGBOUNCER.skipReason})` : ''}`,
    () => {
      it('are not used by default (the server sees the pooler, not this socket) and saves work', async () => {
        if (!PGBOUNCER.url) throw new Error(missingService(PGBOUNCER));
        const { store } = await open(PGBOUNCER.url);
        expect(store.preparedStatements).toBe(false);
        await save(store);
        await save(store);
      });
    },
  );
});
