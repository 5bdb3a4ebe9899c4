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

  it('serve listings, their totals and windows too, with a plan that stays an index scan as the thread grows', async () => {
    const { store, pool } = await open(url);
    await save(store);
    const [thread] = (await store.listThreads({ resourceId: 'r', perPage: 1 })).threads;
    const threadId = (thread as { id: string }).id;
    const newest = () => store.listMessages({ threadId, direction: 'DESC', perPage: 20 });
    const [first] = (await newest()).messages;
    const window = { id: (first as { id: string }).id, withPreviousMessages: 1, withNextMessages: 1 };
    // Past PostgreSQL's five custom plans, so the cached statement settles on its generic plan.
    for (let i = 0; i < 8; i++) {
      await newest();
      await store.listMessages({ threadId, perPage: 0, include: [window] });
      await store.listThreads({ resourceId: 'r', perPage: 10 });
    }
    const statements = await pool.query<{ name: string; statement: string; generic_plans: string }>(
      `SELECT name, statement, generic_plans FROM pg_prepared_statements WHERE name LIKE 'engram\\_%'`,
    );
    const page = statements.rows.find((row) => /ORDER BY created_at DESC, id DESC LIMIT/.test(row.statement));
    expect(page, 'the newest-20 page is a named statement').toBeDefined();
    expect(statements.rows.some((row) => row.statement.includes('LATERAL'))).toBe(true);
    expect(
      statements.rows.some((row) => /engram_threads\b.* ORDER BY created_at DESC/.test(row.statement)),
    ).toBe(true);
    expect(Number(page?.generic_plans)).toBeGreaterThan(0);
    // The thread grows to 3,000 messages with no ANALYZE: the cached plan must still read 20 rows
    // through the thread's index, never scan or sort the table.
    const at = Date.now();
    for (let batch = 0; batch < 3; batch++) {
      await store.saveMessages(
        Array.from({ length: 1_000 }, (_, i) => ({
          id: randomName('g'),
          threadId,
          resourceId: 'r',
          role: 'user' as const,
          content: `grown ${batch} ${i}`,
          type: 'text',
          createdAt: new Date(at + batch * 1_000 + i),
        })),
      );
    }
    // The page's parameters: the thread (for its kept count), the thread, the limit.
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, COSTS OFF) EXECUTE ${page?.name}('${threadId}', '${threadId}', 20)`,
    );
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/Index Scan Backward using \w*messages_thread\w* on engram_messages/);
    expect(plan).not.toMatch(/Seq Scan on engram_messages|Sort/);
    expect((await newest()).total).toBe(3_002);
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
