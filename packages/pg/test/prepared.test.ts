import { missingService, service } from '@engram/conformance';
import { normalize } from '@engram/core';
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

/**
 * The plan of the named statement whose text holds `marker`, as the store last ran it in `run`
 * (`EXPLAIN ANALYZE EXECUTE`: the cached plan; the values it was sent, as literals, since EXECUTE
 * takes no bind parameters).
 */
async function cachedPlan(pool: pg.Pool, marker: string, run: () => Promise<unknown>): Promise<string[]> {
  let sent: unknown[] = [];
  const query = pool.query;
  Object.assign(pool, {
    query: (config: { text?: string; values?: unknown[] }, ...rest: unknown[]) => {
      if (config.text?.includes(marker)) sent = config.values ?? [];
      return (query as (...args: unknown[]) => unknown).call(pool, config, ...rest);
    },
  });
  try {
    await run();
  } finally {
    Object.assign(pool, { query });
  }
  const { rows: found } = await pool.query<{ name: string; parameter_types: string }>(
    `SELECT name, parameter_types::text FROM pg_prepared_statements WHERE strpos(statement, $1) > 0`,
    [marker],
  );
  expect(found, `one named statement holds ${marker}`).toHaveLength(1);
  const literal = (value: unknown): string =>
    Array.isArray(value)
      ? `ARRAY[${value.map(literal).join(', ')}]`
      : typeof value === 'number'
        ? String(value)
        : pg.escapeLiteral(String(value));
  const types = (found[0]?.parameter_types ?? '').replace(/^\{|\}$/g, '').split(',');
  const args = types.map((type, i) => `${literal(sent[i])}::${type.replaceAll('"', '')}`).join(', ');
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, COSTS OFF) EXECUTE ${found[0]?.name}(${args})`,
  );
  return rows.map((row) => row['QUERY PLAN']);
}

describePg('PostgresStore named prepared statements', (url) => {
  let db: TestDatabase;
  const pools: pg.Pool[] = [];
  const open = async (at: string, preparedStatements?: boolean, schemaName = 'prep') => {
    db ??= await createDatabase(url);
    const target = new URL(at);
    target.pathname = `/${db.name}`;
    const pool = new pg.Pool({ connectionString: target.toString(), max: 1 });
    // The test database is dropped WITH (FORCE): a client still closing then hears its backend end.
    pool.on('error', () => undefined);
    pools.push(pool);
    const store = new PostgresStore({ pool, schemaName, preparedStatements });
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
    // As recall reads them: of one resource.
    const ofResource = () =>
      store.listMessages({ threadId, resourceId: 'r', direction: 'DESC', perPage: 20 });
    const windowsOfResource = () =>
      store.listMessages({ threadId, resourceId: 'r', perPage: 0, include: [window] });
    // Past PostgreSQL's five custom plans, so the cached statement settles on its generic plan.
    for (let i = 0; i < 8; i++) {
      await newest();
      await store.listMessages({ threadId, perPage: 0, include: [window] });
      await store.listThreads({ resourceId: 'r', perPage: 10 });
      await ofResource();
      await windowsOfResource();
    }
    const statements = await pool.query<{ name: string; statement: string; generic_plans: string }>(
      `SELECT name, statement, generic_plans FROM pg_prepared_statements WHERE name LIKE 'engram\\_%'`,
    );
    const page = statements.rows.find(
      (row) =>
        /ORDER BY created_at DESC, id DESC LIMIT/.test(row.statement) && !row.statement.includes('IS TRUE'),
    );
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
    // Of one resource: the thread's rows through its index (in order, or as a bitmap and the newest
    // sorted out, as the estimates say), the resource a filter; the windows' targets by primary key.
    const page20 = await cachedPlan(pool, 'IS TRUE', ofResource);
    expect(page20.join('\n')).toMatch(/Index Scan (Backward )?(using|on) \w*messages_thread_idx/);
    expect(page20.filter((line) => /Seq Scan|resource_idx/.test(line))).toEqual([]);
    const windows = await cachedPlan(pool, 'OFFSET 0) t WHERE t.resource_id', windowsOfResource);
    expect(windows.join('\n')).toMatch(/Index Scan using \w*messages_pkey on engram_messages/);
    expect(windows.filter((line) => /Seq Scan|resource_idx|Join Filter/.test(line))).toEqual([]);
  });

  it("serve the exact scan's recall statement, whose cached plan reads no more than the thread's and the hits' messages as the resource grows", async () => {
    const { store, pool } = await open(url);
    const space = { id: 'test:prepared', dimensions: 4 };
    await store.vectors.claimSpace(space);
    const at = Date.now();
    const grow = async (threadId: string, count: number) => {
      const stamp = new Date(at);
      await store.saveThread({
        id: threadId,
        resourceId: 'big',
        title: '',
        metadata: {},
        createdAt: stamp,
        updatedAt: stamp,
      });
      const messages = Array.from({ length: count }, (_, i) => ({
        id: randomName('v'),
        threadId,
        resourceId: 'big',
        role: 'user' as const,
        content: `message ${i}`,
        type: 'text',
        createdAt: new Date(at + i),
      }));
      await store.saveMessages(messages);
      const vector = (i: number) => normalize([1, i % 7, (i * 3) % 5, 1]) as Float32Array;
      await store.vectors.upsertVectors(
        space,
        messages.map((m, i) => ({ messageId: m.id, hash: m.id, vector: vector(i) })),
      );
    };
    await grow('current', 30);
    const recall = () =>
      store.vectors.searchWithWindows?.({
        space,
        vector: normalize([1, 2, 3, 4]) as Float32Array,
        topK: 3,
        resourceId: 'big',
        before: 1,
        after: 1,
        history: { threadId: 'current', last: 10 },
      });
    // Past PostgreSQL's five custom plans, so the cached statement settles on its generic plan.
    for (let i = 0; i < 8; i++) expect((await recall())?.history).toHaveLength(10);
    const { rows: statements } = await pool.query<{ generic_plans: string }>(
      `SELECT generic_plans FROM pg_prepared_statements WHERE statement LIKE '%recent AS MATERIALIZED%'`,
    );
    expect(statements, 'the recall statement is a named statement').toHaveLength(1);
    expect(Number(statements[0]?.generic_plans)).toBeGreaterThan(0);
    // The resource grows to 3,030 messages in other threads, with no ANALYZE.
    for (let t = 0; t < 3; t++) await grow(`other-${t}`, 1_000);
    const recent = await store.listMessages({
      threadId: 'current',
      resourceId: 'big',
      direction: 'DESC',
      perPage: 10,
    });
    const plan = await cachedPlan(pool, 'recent AS MATERIALIZED', async () => {
      expect((await recall())?.history).toEqual(recent.messages.map((m) => m.id));
    });
    // The history: the thread's rows through its index, the resource a filter.
    const history = plan.slice(
      plan.findIndex((line) => line.includes('CTE recent')),
      plan.findIndex((line) => line.includes('CTE hits')),
    );
    expect(history.filter((line) => /Index Scan/.test(line))).toEqual([
      expect.stringMatching(/Index Scan (Backward )?(using|on) \w*messages_thread_idx/),
    ]);
    // The hits' messages by primary key, the windows by the thread's index: no message is read
    // by the resource's index, by a scan of the table or to be thrown away by a join.
    expect(plan.filter((line) => /Seq Scan|resource_idx|Join Filter/.test(line))).toEqual([]);
  });

  it('keep one generic plan for the exact vector scans on analysed tables, not a plan per call', async () => {
    // A schema of its own: PostgreSQL keeps the generic plan when it costs no more than planning
    // for the values, so the resources are of one size here (a scope far smaller than the average
    // is planned for its values, as it should be).
    const { store, pool } = await open(url, undefined, 'prep_generic');
    const space = { id: 'test:prepared', dimensions: 4 };
    await store.vectors.claimSpace(space);
    const at = Date.now();
    for (const resourceId of ['generic', 'generic-other']) {
      const threadId = `${resourceId}-0`;
      const stamp = new Date(at);
      await store.saveThread({
        id: threadId,
        resourceId,
        title: '',
        metadata: {},
        createdAt: stamp,
        updatedAt: stamp,
      });
      const messages = Array.from({ length: 1_000 }, (_, i) => ({
        id: `${threadId}-${i}`,
        threadId,
        resourceId,
        role: 'user' as const,
        content: `message ${i}`,
        type: 'text',
        createdAt: new Date(at + i),
      }));
      await store.saveMessages(messages);
      await store.vectors.upsertVectors(
        space,
        messages.map((m, i) => ({
          messageId: m.id,
          hash: m.id,
          vector: normalize([1, i % 7, (i * 3) % 5, 1]) as Float32Array,
        })),
      );
    }
    await pool.query('ANALYZE prep_generic.engram_messages, prep_generic.engram_message_vectors');
    const vector = normalize([1, 2, 3, 4]) as Float32Array;
    for (let i = 0; i < 10; i++) {
      expect(
        await store.vectors.searchVectors({ space, vector, topK: 3, resourceId: 'generic' }),
      ).toHaveLength(3);
      const found = await store.vectors.searchWithWindows?.({
        space,
        vector,
        topK: 3,
        resourceId: 'generic',
        before: 1,
        after: 1,
        history: { threadId: 'generic-0', last: 10 },
      });
      expect(found?.hits).toHaveLength(3);
    }
    const { rows } = await pool.query<{ recall: boolean; generic: number; custom: number }>(
      `SELECT statement LIKE 'WITH recent AS%' AS recall, generic_plans::int AS generic,
        custom_plans::int AS custom
      FROM pg_prepared_statements
      WHERE statement LIKE 'WITH recent AS%' OR statement LIKE 'SELECT h."messageId"%'`,
    );
    expect(rows).toHaveLength(2);
    // Each: a named statement, planned five times for the values, then the generic plan kept.
    for (const recall of [false, true]) {
      const row = rows.find((r) => r.recall === recall);
      expect(row, recall ? 'the recall statement' : 'the exact scan').toBeDefined();
      expect(row?.custom).toBeLessThanOrEqual(5);
      expect(row?.generic).toBeGreaterThanOrEqual(5);
    }
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
