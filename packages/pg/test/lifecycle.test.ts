import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LATEST_VERSION, PostgresStore } from '../src/index.ts';
import { MIGRATIONS, migrate } from '../src/migrations.ts';
import * as sql from '../src/sql.ts';
import {
  createDatabase,
  describePg,
  randomName,
  runInProcesses,
  schemaAt,
  type TestDatabase,
  TSX,
  threadNow,
} from './env.ts';
import { objectsIn } from './objects.ts';

const INIT_ONCE = fileURLToPath(new URL('./fixtures/init-once.ts', import.meta.url));
const STOP_BACKFILL = fileURLToPath(new URL('./fixtures/stop-backfill.ts', import.meta.url));

/** Runs `init()` in `count` separate OS processes that all start at the same moment. */
function initInProcesses(url: string, schema: string | undefined, count: number): Promise<string[]> {
  return runInProcesses(INIT_ONCE, count, () => ({
    ENGRAM_PG_TEST_URL: url,
    ENGRAM_PG_TEST_SCHEMA: schema ?? '',
  }));
}

describePg('lifecycle: migrations and init', (url) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createDatabase(url);
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function versionRows(schema: string): Promise<{ id: number; version: number }[]> {
    return db.query(`SELECT id, version FROM ${sql.quoteIdent(schema)}.engram_schema_version`);
  }

  it('init() from 4 processes at once on an empty database succeeds everywhere, one version row', async () => {
    expect(await objectsIn(db, 'public', 'engram_')).toEqual([]);
    expect(await initInProcesses(db.url, undefined, 4)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(await versionRows('public')).toEqual([{ id: 1, version: LATEST_VERSION }]);
  });

  it('init() from 4 processes at once creates a missing schema once', async () => {
    const schema = randomName('race');
    expect(await initInProcesses(db.url, schema, 4)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(await versionRows(schema)).toEqual([{ id: 1, version: LATEST_VERSION }]);
    const tables = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'engram\\_%'`,
      [schema],
    );
    // threads, messages, resources, message_counts, schema_version, message_vectors, vector_space,
    // observations, message_terms, settings, turns, backfills, message_terms_stats
    expect(tables[0]!.n).toBe(13);
  });

  it('init() upgrades a schema at migration 1 in place, keeping its rows', async () => {
    const schema = randomName('upgrade');
    const names = sql.names(schema, 'engram_');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect(await migrate(client, names, 1)).toBe(1);
      const at = new Date('2023-03-03T03:03:03.333Z');
      await client.query(`INSERT INTO ${names.threads} VALUES ('t1', 'r1', 'old', '{"a":1}', $1, $1)`, [at]);
      await client.query(
        `INSERT INTO ${names.messages} VALUES ('m1', 't1', 'r1', 'user', '"hello"', 'text', $1)`,
        [at],
      );
      await client.query(`INSERT INTO ${names.resources} VALUES ('r1', 'remember', '{}', $1, $1)`, [at]);
    } finally {
      await client.end();
    }
    expect(await versionRows(schema)).toEqual([{ id: 1, version: 1 }]);
    const before = await objectsIn(db, schema, 'engram_');
    expect(before).not.toContain('relation i engram_threads_resource_created_idx');

    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await store.init();
      await store.init();
      expect(await versionRows(schema)).toEqual([{ id: 1, version: LATEST_VERSION }]);
      expect(await objectsIn(db, schema, 'engram_')).toContain(
        'relation i engram_threads_resource_created_idx',
      );
      expect(await store.getThreadById({ threadId: 't1' })).toMatchObject({
        title: 'old',
        metadata: { a: 1 },
      });
      expect((await store.listMessages({ threadId: 't1' })).messages).toMatchObject([
        { id: 'm1', content: 'hello' },
      ]);
      expect(await store.getResourceById({ resourceId: 'r1' })).toMatchObject({ workingMemory: 'remember' });
    } finally {
      await store.close();
    }
  });

  const keywordVersion = MIGRATIONS.findIndex((m) => m.description.startsWith('keyword index')) + 1;
  const MESSAGES = 1_201;
  const messageId = (i: number) => `m${String(i).padStart(4, '0')}`;

  /**
   * A schema at the version before the keyword index, holding `MESSAGES` messages of `rk`
   * (`m0001`…, each with its own word `w<i>`, `m0700` also "quokka"); then migrated to `target`.
   */
  async function oldSchema(target = keywordVersion - 1): Promise<string> {
    const at = new Date('2024-01-02T00:00:00.000Z');
    return schemaAt(db.url, 'kwfill', keywordVersion - 1, async (client, names) => {
      await client.query(
        `INSERT INTO ${names.threads} (id, resource_id, title, metadata, created_at, updated_at)
          VALUES ('tk', 'rk', 'Old', '{}', $1, $1)`,
        [at],
      );
      await client.query(
        `INSERT INTO ${names.messages} (id, thread_id, resource_id, role, content, type, created_at)
          SELECT 'm' || lpad(i::text, 4, '0'), 'tk', 'rk', 'user',
                 to_jsonb('note w' || i || CASE WHEN i = 700 THEN ' the quokka smiled' ELSE '' END), 'v2',
                 $1::timestamptz + i * interval '1 second'
          FROM generate_series(1, $2::int) AS i`,
        [at, MESSAGES],
      );
      expect(await migrate(client, names, target)).toBe(target);
    });
  }

  /**
   * Each message is found by its own word, and nothing else is. Searched 50 at a time: all at once,
   * 1,201 searches queue on the pool past its connect timeout when the machine is busy.
   */
  async function expectEveryMessageFound(store: PostgresStore): Promise<void> {
    const found: string[][] = [];
    for (let from = 1; from <= MESSAGES; from += 50) {
      const words = Array.from({ length: Math.min(50, MESSAGES - from + 1) }, (_, i) => `w${from + i}`);
      const batch = await Promise.all(
        words.map((query) => store.keywords!.search({ query, topK: 5, resourceId: 'rk' })),
      );
      found.push(...batch.map((hits) => hits.map((h) => h.messageId)));
    }
    expect(found).toEqual(Array.from({ length: MESSAGES }, (_, n) => [messageId(n + 1)]));
  }

  /** The documents the keyword statistics hold, beside a count of the keyword index's rows. */
  const documents = async (schema: string) =>
    (
      await db.query(
        `SELECT (SELECT sum(documents)::int FROM ${sql.quoteIdent(schema)}.engram_message_terms_stats) AS kept,
          (SELECT count(*)::int FROM ${sql.quoteIdent(schema)}.engram_message_terms) AS counted`,
      )
    )[0];

  /** The pending backfills (backdoor). */
  const backfills = (schema: string) =>
    db.query(`SELECT name, last_id FROM ${sql.names(schema, 'engram_').backfills}`);

  /** A store of `schema` whose backfill reports go to `reports`. */
  const reporting = (schema: string, reports: unknown[]) =>
    new PostgresStore({
      connectionString: db.url,
      schemaName: schema,
      onBackfillProgress: (progress) => reports.push(progress),
    });

  it('init() backfills the keyword index of older messages, reporting progress per batch of 500', async () => {
    const schema = await oldSchema();
    const reports: unknown[] = [];
    const store = new PostgresStore({
      connectionString: db.url,
      schemaName: schema,
      onBackfillProgress: (progress) => {
        reports.push(progress);
        throw new Error('a listener that throws does not stop the upgrade');
      },
    });
    try {
      await store.init();
      expect(reports).toEqual([
        { backfill: 'keyword index', done: 500, total: 1_201 },
        { backfill: 'keyword index', done: 1_000, total: 1_201 },
        { backfill: 'keyword index', done: 1_201, total: 1_201 },
      ]);
      const hits = await store.keywords!.search({ query: 'quokka', topK: 5, resourceId: 'rk' });
      expect(hits.map((h) => h.messageId)).toEqual(['m0700']);
    } finally {
      await store.close();
    }
    expect(await backfills(schema)).toEqual([]);
    expect(() => new PostgresStore({ connectionString: db.url, onBackfillProgress: 1 as never })).toThrow(
      /onBackfillProgress must be a function/,
    );
  });

  it('init() resumes a keyword backfill stopped half-way (process killed), indexing only the messages left', async () => {
    const schema = await oldSchema();
    const child = spawn(process.execPath, ['--import', TSX, '--conditions=source', STOP_BACKFILL], {
      env: { ...process.env, ENGRAM_PG_TEST_URL: db.url, ENGRAM_PG_TEST_SCHEMA: schema },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('stopped 500\n')) resolve();
      });
      child.once('exit', () => reject(new Error(`the backfill was not stopped: ${out}`)));
    });
    child.kill('SIGKILL');
    await exited;
    // The schema is upgraded and the first batch committed with its place.
    expect(await versionRows(schema)).toEqual([{ id: 1, version: LATEST_VERSION }]);
    expect(await backfills(schema)).toEqual([{ name: 'keyword index', last_id: 'm0500' }]);

    const reports: unknown[] = [];
    const store = reporting(schema, reports);
    try {
      await store.init();
      expect(reports).toEqual([
        { backfill: 'keyword index', done: 500, total: 701 },
        { backfill: 'keyword index', done: 701, total: 701 },
      ]);
      expect(await backfills(schema)).toEqual([]);
      await expectEveryMessageFound(store);
    } finally {
      await store.close();
    }

    // Done: the next open does not backfill again.
    const again = reporting(schema, reports);
    await again.init();
    await again.close();
    expect(reports).toHaveLength(2);
  });

  it('init() from several stores at once shares a pending backfill: each batch is done once, all wait for the end', async () => {
    const schema = await oldSchema();
    const batches: number[] = [];
    const stores = Array.from({ length: 4 }, () => {
      let done = 0;
      return new PostgresStore({
        connectionString: db.url,
        schemaName: schema,
        onBackfillProgress: (progress) => {
          if (progress.done > done) batches.push(progress.done - done);
          done = progress.done;
        },
      });
    });
    try {
      await Promise.all(
        stores.map(async (store) => {
          await store.init();
          // No store serves before the index is complete.
          expect(await backfills(schema)).toEqual([]);
        }),
      );
      expect(batches.sort((a, b) => b - a)).toEqual([500, 500, 201]);
      await expectEveryMessageFound(stores[0]!);
      // The keyword statistics (version 14, created before the backfill ran) counted each batch once.
      expect(await documents(schema)).toEqual({ kept: MESSAGES, counted: MESSAGES });
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('init() does not backfill a schema whose keyword index was complete before backfills were resumable', async () => {
    // Upgraded past the keyword index by a version that filled it in within the upgrade (9, the
    // last before the backfills table).
    const schema = await oldSchema(9);
    const reports: unknown[] = [];
    const store = reporting(schema, reports);
    try {
      await store.init();
      expect(reports).toEqual([]);
      expect(await versionRows(schema)).toEqual([{ id: 1, version: LATEST_VERSION }]);
      expect(await backfills(schema)).toEqual([]);
      await expectEveryMessageFound(store);
    } finally {
      await store.close();
    }
  });

  it('init() merges the keyword index pending list of an older schema, keeps it to 64 kB after, and counts its rows', async () => {
    // At version 9 the upgrade indexed the 1,201 messages with the default limit (4 MB): all pending.
    const schema = await oldSchema(9);
    const index = `${sql.quoteIdent(schema)}.engram_message_terms_lexemes_idx`;
    await db.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
    const pending = async () =>
      (
        await db.query<{ tuples: string; pages: number }>(
          `SELECT n_pending_tuples AS tuples, n_pending_pages AS pages
            FROM gin_metapage_info(get_raw_page('${index.replaceAll("'", "''")}', 0))`,
        )
      ).map((row) => ({ tuples: Number(row.tuples), pages: Number(row.pages) }))[0];
    expect((await pending())?.tuples).toBe(MESSAGES);
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await store.init();
      expect(await pending()).toEqual({ tuples: 0, pages: 0 });
      const [options] = await db.query(`SELECT reloptions FROM pg_class WHERE oid = '${index}'::regclass`);
      expect(options?.reloptions).toEqual(['gin_pending_list_limit=64']);
      await expectEveryMessageFound(store);
      const at = new Date('2024-02-01T00:00:00.000Z').getTime();
      const words = 'wombat kelp ferry lantern orchard basalt meadow quill harbor cobalt ember thistle';
      let most = 0;
      for (let i = 0; i < 1_000; i += 100) {
        await store.saveMessages(
          Array.from({ length: 100 }, (_, j) => ({
            id: `new${i + j}`,
            threadId: 'tk',
            resourceId: 'rk',
            role: 'user' as const,
            content: `${words} n${i + j}`,
            type: 'v2',
            createdAt: new Date(at + i + j),
          })),
        );
        most = Math.max(most, (await pending())?.pages ?? 0);
      }
      // 64 kB: 8 pages of 8 kB.
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(8);
      const hits = await store.keywords!.search({ query: 'n777', topK: 5, resourceId: 'rk' });
      expect(hits.map((h) => h.messageId)).toEqual(['new777']);
      // The statistics the upgrade started from the stored rows, kept since by each save.
      expect(await documents(schema)).toEqual({ kept: MESSAGES + 1_000, counted: MESSAGES + 1_000 });
    } finally {
      await store.close();
    }
  });

  it('init() upgrades a schema at migration 2 by counting the messages already there', async () => {
    const schema = randomName('counts');
    const names = sql.names(schema, 'engram_');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const at = new Date('2023-03-03T03:03:03.333Z');
    try {
      expect(await migrate(client, names, 2)).toBe(2);
      for (const [id, resource] of [
        ['t1', 'r1'],
        ['t2', 'r1'],
        ['t3', 'r2'],
      ]) {
        await client.query(`INSERT INTO ${names.threads} VALUES ($1, $2, $1, '{}', $3, $3)`, [
          id,
          resource,
          at,
        ]);
      }
      // t1: 45 messages of r1 and 3 of an earlier owner; t2: 2; t3: none.
      await client.query(
        `INSERT INTO ${names.messages}
          SELECT 'm' || i, 't1', CASE WHEN i <= 3 THEN 'r0' ELSE 'r1' END, 'user', '"x"', 'text',
                 $1::timestamptz + i * interval '1 second'
          FROM generate_series(1, 48) AS i`,
        [at],
      );
      await client.query(
        `INSERT INTO ${names.messages} VALUES ('n1', 't2', 'r1', 'user', '"x"', 'text', $1), ('n2', 't2', 'r1', 'user', '"x"', 'text', $1)`,
        [at],
      );
    } finally {
      await client.end();
    }
    expect(await versionRows(schema)).toEqual([{ id: 1, version: 2 }]);

    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await store.init();
      expect(await versionRows(schema)).toEqual([{ id: 1, version: LATEST_VERSION }]);
      const counts = await db.query(
        `SELECT thread_id, resource_id, n FROM ${names.counts} ORDER BY thread_id, resource_id`,
      );
      expect(counts).toEqual([
        { thread_id: 't1', resource_id: 'r0', n: 3 },
        { thread_id: 't1', resource_id: 'r1', n: 45 },
        { thread_id: 't2', resource_id: 'r1', n: 2 },
      ]);
      const total = async (threadId: string, resourceId?: string) =>
        (await store.listMessages({ threadId, resourceId, perPage: 1 })).total;
      expect(await total('t1')).toBe(48);
      expect(await total('t1', 'r1')).toBe(45);
      expect(await total('t1', 'r0')).toBe(3);
      expect(await total('t2')).toBe(2);
      expect(await total('t3')).toBe(0);
      // Writes after the upgrade keep the backfilled counts going.
      await store.saveMessages([
        {
          id: 'n1',
          threadId: 't1',
          resourceId: 'r1',
          role: 'user',
          content: 'moved',
          type: 'text',
          createdAt: at,
        },
      ]);
      await store.deleteMessages(['m1']);
      expect(await total('t1')).toBe(48);
      expect(await total('t1', 'r0')).toBe(2);
      expect(await total('t2')).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('init() upgrades a schema at migration 4 to snake_case columns, keeping rows and timestamps', async () => {
    const schema = randomName('snake');
    const names = sql.names(schema, 'engram_');
    const columnsOf = async () =>
      db.query<{ table_name: string; column_name: string }>(
        `SELECT table_name, column_name FROM information_schema.columns
          WHERE table_schema = $1 AND column_name ~ '[A-Z_]' ORDER BY table_name, column_name`,
        [schema],
      );
    const at = (s: number) => new Date(Date.UTC(2023, 2, 3, 3, 3, s, 333));
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect(await migrate(client, names, 4)).toBe(4);
      // Columns named as migration 4 left them.
      await client.query(
        `INSERT INTO ${names.threads} (id, resource_id, title, metadata, "createdAt", "updatedAt")
          VALUES ('t1', 'r1', 'older', '{"workingMemory":"thread note"}', $1, $2),
                 ('t2', 'r1', 'newer', '{}', $2, $3)`,
        [at(1), at(2), at(3)],
      );
      await client.query(
        `INSERT INTO ${names.messages} (id, thread_id, resource_id, role, content, type, "createdAt")
          VALUES ('m1', 't1', 'r1', 'user', '"first"', 'text', $1), ('m2', 't1', 'r1', 'assistant', '"second"', 'text', $2)`,
        [at(10), at(20)],
      );
      await client.query(`INSERT INTO ${names.counts} VALUES ('t1', 'r1', 2)`);
      await client.query(
        `INSERT INTO ${names.resources} (id, "workingMemory", metadata, "createdAt", "updatedAt")
          VALUES ('r1', 'remember', '{"k":1}', $1, $2)`,
        [at(4), at(5)],
      );
    } finally {
      await client.end();
    }
    expect(await columnsOf()).toContainEqual({
      table_name: 'engram_resources',
      column_name: 'workingMemory',
    });

    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await store.init();
      expect(await versionRows(schema)).toEqual([{ id: 1, version: LATEST_VERSION }]);
      // No camelCase column is left, the version table's included.
      expect((await columnsOf()).filter((c) => /[A-Z]/.test(c.column_name))).toEqual([]);
      expect(await columnsOf()).toContainEqual({
        table_name: 'engram_schema_version',
        column_name: 'updated_at',
      });
      expect(await store.getThreadById({ threadId: 't1' })).toEqual({
        id: 't1',
        resourceId: 'r1',
        title: 'older',
        metadata: { workingMemory: 'thread note' },
        createdAt: at(1),
        updatedAt: at(2),
      });
      const byUpdate = await store.listThreads({ resourceId: 'r1', orderBy: 'updatedAt', direction: 'ASC' });
      expect(byUpdate.threads.map((t) => t.id)).toEqual(['t1', 't2']);
      const page = await store.listMessages({ threadId: 't1', dateRange: { start: at(15) } });
      expect(page.messages).toEqual([
        {
          id: 'm2',
          threadId: 't1',
          resourceId: 'r1',
          role: 'assistant',
          content: 'second',
          type: 'text',
          createdAt: at(20),
        },
      ]);
      expect((await store.listMessages({ threadId: 't1' })).total).toBe(2);
      expect(await store.getResourceById({ resourceId: 'r1' })).toEqual({
        id: 'r1',
        workingMemory: 'remember',
        metadata: { k: 1 },
        createdAt: at(4),
        updatedAt: at(5),
      });
      // Writes after the upgrade land in the renamed columns.
      await store.updateResource({ resourceId: 'r1', workingMemory: 'changed' });
      const [row] = await db.query<{ working_memory: string }>(
        `SELECT working_memory FROM ${names.resources} WHERE id = 'r1'`,
      );
      expect(row?.working_memory).toBe('changed');
    } finally {
      await store.close();
    }
  });

  it('a schemaName store creates nothing in public', async () => {
    const fresh = await createDatabase(url);
    try {
      const schema = randomName('own');
      const store = new PostgresStore({
        connectionString: fresh.url,
        schemaName: schema,
        tablePrefix: 'mem_',
      });
      await store.init();
      await store.saveThread(threadNow('t', 'r'));
      await store.close();
      expect(await objectsIn(fresh, 'public', 'mem_')).toEqual([]);
      expect(await objectsIn(fresh, schema, 'mem_')).toContain('relation r mem_threads');
    } finally {
      await fresh.drop();
    }
  });

  it('close() during init() waits for it and ends the pool it opened; later calls are refused', async () => {
    const schema = randomName('closing');
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    const initializing = store.init().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await store.close();
    const outcome = await initializing;
    if (outcome !== 'resolved') expect(outcome).toMatchObject({ code: 'CONNECTION' });
    const pool = (store as unknown as { driver: { db: { pool?: pg.Pool } } }).driver.db.pool;
    expect(pool?.ended ?? true).toBe(true);
    expect(pool?.totalCount ?? 0).toBe(0);
    await expect(store.init()).rejects.toMatchObject({ code: 'CONNECTION', message: /the store is closed/ });
    await expect(store.listThreads({})).rejects.toMatchObject({ code: 'CONNECTION' });
  });

  it('a schema newer than the package is refused with MIGRATION', async () => {
    const schema = randomName('newer');
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    await store.init();
    await store.close();
    await db.query(`UPDATE ${schema}.engram_schema_version SET version = $1`, [LATEST_VERSION + 1]);
    const later = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await expect(later.init()).rejects.toMatchObject({
        code: 'MIGRATION',
        message: /newer than this package/,
      });
    } finally {
      await later.close();
    }
  });

  it('a failed migration is reported as MIGRATION and retried by the next call', async () => {
    const schema = randomName('blocked');
    // A table squatting on the name the first migration needs makes it fail.
    await db.query(`CREATE SCHEMA ${schema}`);
    await db.query(`CREATE TABLE ${schema}.engram_threads (x int)`);
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await expect(store.init()).rejects.toMatchObject({ code: 'MIGRATION', adapter: 'pg' });
      await expect(store.getThreadById({ threadId: 't' })).rejects.toMatchObject({ code: 'MIGRATION' });
      expect(await db.query(`SELECT to_regclass('${schema}.engram_schema_version') AS t`)).toEqual([
        { t: null },
      ]);
      await db.query(`DROP TABLE ${schema}.engram_threads`);
      await store.init();
      expect(await store.getThreadById({ threadId: 't' })).toBeNull();
    } finally {
      await store.close();
    }
  });
});
