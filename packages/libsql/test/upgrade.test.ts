import { isMemoryError } from '@engram/core';
import { LibSQLStore, MIGRATIONS, SCHEMA_VERSION } from '@engram/libsql';
import { type Client, createClient } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '../src/migrations.ts';
import { exited, runScript, tempDir, waitForLine } from './helpers.ts';

describe('libsql: versioned migrations', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  function dbFile(): string {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    return `file:${dir}/upgrade.db`;
  }

  it('has more than one migration, so upgrades are exercised', () => {
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(2);
  });

  it('upgrades a database created with the first migration only, keeping its rows', async () => {
    const url = dbFile();
    const old = createClient({ url });
    await migrate(old, 1);
    const t = Date.UTC(2024, 0, 2, 3, 4, 5, 678);
    await old.batch(
      [
        {
          sql: 'INSERT INTO engram_threads VALUES (?, ?, ?, ?, ?, ?)',
          args: ['th-1', 'user-1', 'Old thread', '{"topic":"v1"}', t, t],
        },
        {
          sql: 'INSERT INTO engram_messages VALUES (?, ?, ?, ?, ?, ?)',
          args: ['msg-1', 'th-1', 'user-1', 'user', '"hello from v1"', t],
        },
        {
          sql: 'INSERT INTO engram_resources VALUES (?, ?, ?, ?, ?)',
          args: ['user-1', '# Notes\n- likes tea', '{}', t, t],
        },
      ],
      'write',
    );
    const columnsBefore = await old.execute("SELECT name FROM pragma_table_info('engram_messages')");
    expect(columnsBefore.rows.map((r) => r.name)).not.toContain('type');
    old.close();

    const store = new LibSQLStore({ url });
    await store.init();
    await store.init();

    expect(await store.getThreadById({ threadId: 'th-1' })).toEqual({
      id: 'th-1',
      resourceId: 'user-1',
      title: 'Old thread',
      metadata: { topic: 'v1' },
      createdAt: new Date(t),
      updatedAt: new Date(t),
    });
    const { messages, total } = await store.listMessages({ threadId: 'th-1' });
    expect(total).toBe(1);
    expect(messages).toEqual([
      {
        id: 'msg-1',
        threadId: 'th-1',
        resourceId: 'user-1',
        role: 'user',
        content: 'hello from v1',
        type: 'text',
        createdAt: new Date(t),
      },
    ]);
    expect((await store.getResourceById({ resourceId: 'user-1' }))?.workingMemory).toBe(
      '# Notes\n- likes tea',
    );

    // New writes use the new column.
    await store.saveMessages([
      {
        id: 'msg-2',
        threadId: 'th-1',
        resourceId: 'user-1',
        role: 'assistant',
        content: 'hi',
        type: 'v2',
        createdAt: new Date(t + 1),
      },
    ]);
    expect((await store.listMessagesById({ ids: ['msg-2'] }))[0]?.type).toBe('v2');
    expect((await store.listMessages({ threadId: 'th-1', resourceId: 'user-1' })).total).toBe(2);
    await store.close();

    const check = createClient({ url });
    try {
      const versions = await check.execute('SELECT version, name FROM engram_migrations ORDER BY version');
      expect(versions.rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((_, i) => i + 1));
      const indexes = await check.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'engram_threads'",
      );
      expect(indexes.rows.map((r) => r.name)).toContain('engram_threads_resource_created_id');
    } finally {
      check.close();
    }
  });

  const keywordVersion = MIGRATIONS.findIndex((m) => m.name.startsWith('keyword index')) + 1;
  const MESSAGES = 1_201;
  const messageId = (i: number) => `m${String(i).padStart(4, '0')}`;

  /**
   * A database at the version before the keyword index, holding `MESSAGES` messages of `user-k`
   * (`m0001`…, each with its own word `w<i>`, `m0700` also "quokka"); then migrated to `target`.
   */
  async function oldDatabase(target = keywordVersion - 1): Promise<string> {
    const url = dbFile();
    const old = createClient({ url });
    await migrate(old, keywordVersion - 1);
    const t = Date.UTC(2024, 0, 2);
    await old.execute({
      sql: 'INSERT INTO engram_threads VALUES (?, ?, ?, ?, ?, ?)',
      args: ['th-k', 'user-k', 'Old', '{}', t, t],
    });
    await old.batch(
      Array.from({ length: MESSAGES }, (_, n) => ({
        sql: 'INSERT INTO engram_messages (id, thread_id, resource_id, role, content, type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        args: [
          messageId(n + 1),
          'th-k',
          'user-k',
          'user',
          JSON.stringify(`note w${n + 1}${n + 1 === 700 ? ' the quokka smiled' : ''}`),
          'v2',
          t + n,
        ],
      })),
      'write',
    );
    await migrate(old, target);
    old.close();
    return url;
  }

  /** Each message is found by its own word, and nothing else is. */
  async function expectEveryMessageFound(store: LibSQLStore): Promise<void> {
    for (let i = 1; i <= MESSAGES; i++) {
      const hits = await store.keywords!.search({ query: `w${i}`, topK: 5, resourceId: 'user-k' });
      expect(hits.map((h) => h.messageId)).toEqual([messageId(i)]);
    }
  }

  /** `fn` on a client of its own, closed after it (the backdoor). */
  async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
    const client = createClient({ url });
    try {
      return await fn(client);
    } finally {
      client.close();
    }
  }

  /** The pending backfills (backdoor). */
  function backfills(url: string): Promise<unknown[]> {
    return withClient(url, async (client) => {
      const { rows } = await client.execute('SELECT name, last_id FROM engram_backfills');
      return rows.map((row) => ({ name: row.name, lastId: row.last_id }));
    });
  }

  /**
   * Opens a store on `url` (its upgrade and backfill run), checks that no backfill is left and
   * every message is found, and returns what the backfill reported.
   */
  async function upgraded(url: string): Promise<unknown[]> {
    const reports: unknown[] = [];
    const store = new LibSQLStore({ url, onBackfillProgress: (progress) => reports.push(progress) });
    try {
      await store.init();
      expect(await backfills(url)).toEqual([]);
      await expectEveryMessageFound(store);
    } finally {
      await store.close();
    }
    return reports;
  }

  it('backfills the keyword index of older messages, reporting progress per batch of 500', async () => {
    const url = await oldDatabase();
    const reports: unknown[] = [];
    const store = new LibSQLStore({
      url,
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
      const hits = await store.keywords!.search({ query: 'quokka', topK: 5, resourceId: 'user-k' });
      expect(hits.map((h) => h.messageId)).toEqual(['m0700']);
    } finally {
      await store.close();
    }
    expect(await backfills(url)).toEqual([]);
    expect(() => new LibSQLStore({ url, onBackfillProgress: 'log' as never })).toThrow(
      /onBackfillProgress must be a function/,
    );
  });

  it('resumes a keyword backfill stopped half-way (process killed): the next open indexes only the messages left', async () => {
    const url = await oldDatabase();
    const child = runScript('./fixtures/stop-backfill.ts', { ENGRAM_LIBSQL_CONFORMANCE_URL: url });
    await waitForLine(child, 'stopped 500');
    child.kill('SIGKILL');
    await exited(child);
    // The schema is upgraded and the first batch committed with its place.
    expect(await backfills(url)).toEqual([{ name: 'keyword index', lastId: 'm0500' }]);

    const reports = await upgraded(url);
    expect(reports).toEqual([
      { backfill: 'keyword index', done: 500, total: 701 },
      { backfill: 'keyword index', done: 701, total: 701 },
    ]);

    // Done: the next open does not backfill again.
    const again = new LibSQLStore({ url, onBackfillProgress: (progress) => reports.push(progress) });
    await again.init();
    await again.close();
    expect(reports).toHaveLength(2);
  });

  const keyedVersion = MIGRATIONS.findIndex((m) => m.name.startsWith('messages keyed')) + 1;

  it('does not backfill a database whose keyword index was complete before backfills were resumable', async () => {
    // Upgraded past the keyword index by a version that filled it in within the upgrade.
    const resumable = MIGRATIONS.findIndex((m) => m.name.startsWith('backfills an upgrade')) + 1;
    const url = await oldDatabase(resumable - 1);
    const reports: unknown[] = [];
    // Up to the version before the index is built again on a key of the messages' own (below).
    await withClient(url, (client) =>
      migrate(client, keyedVersion - 1, undefined, (progress) => reports.push(progress)),
    );
    expect(reports).toEqual([]);
    expect(await backfills(url)).toEqual([]);
  });

  it('builds the keyword index again from the start when an older backfill was left pending', async () => {
    const url = await oldDatabase(keyedVersion - 1);
    // As a backfill of that version stopped after its first batch leaves it.
    await withClient(url, (raw) =>
      raw.execute("INSERT INTO engram_backfills (name, last_id) VALUES ('keyword index', 'm0500')"),
    );
    expect((await upgraded(url)).at(-1)).toEqual({ backfill: 'keyword index', done: 1_201, total: 1_201 });
  });

  it("builds the keyword index again on the messages' seq, repairing one keyed by rowids a logical copy renumbered", async () => {
    // Indexed by rowid, then renumbered as a restore from `sqlite3 .dump` may do (the index's own
    // rows keep their numbers): every hit names another message.
    const url = await oldDatabase(keyedVersion - 1);
    const found = await withClient(url, async (raw) => {
      await raw.execute('UPDATE engram_messages SET rowid = 100000 - rowid');
      return (
        await raw.execute(
          "SELECT m.id FROM engram_message_terms k JOIN engram_messages m ON m.rowid = k.rowid WHERE engram_message_terms MATCH 'quokka'",
        )
      ).rows;
    });
    expect(found).toEqual([]);
    expect(await upgraded(url)).toEqual([
      { backfill: 'keyword index', done: 500, total: 1_201 },
      { backfill: 'keyword index', done: 1_000, total: 1_201 },
      { backfill: 'keyword index', done: 1_201, total: 1_201 },
    ]);
  });

  it('upgrades the one-statement save of schema 5: it no longer sets updatedAt back', async () => {
    const url = dbFile();
    const old = createClient({ url });
    await migrate(old, 5);
    const later = Date.now() + 86_400_000;
    await old.execute({
      sql: 'INSERT INTO engram_threads VALUES (?, ?, ?, ?, ?, ?)',
      args: ['th-5', 'user-5', 'From schema 5', '{}', later, later],
    });
    old.close();

    const store = new LibSQLStore({ url });
    try {
      const message = {
        id: 'msg-5',
        threadId: 'th-5',
        resourceId: 'user-5',
        role: 'user' as const,
        content: 'hi',
        type: 'text',
        createdAt: new Date(),
      };
      await store.saveMessages([message]);
      expect((await store.getThreadById({ threadId: 'th-5' }))?.updatedAt).toEqual(new Date(later));
      const future = { ...message, id: 'msg-6', createdAt: new Date(later + 1_000) };
      await store.saveMessages([future]);
      expect((await store.getThreadById({ threadId: 'th-5' }))?.updatedAt).toEqual(future.createdAt);
    } finally {
      await store.close();
    }
  });

  it('upgrades the vector write order: the counter starts above every stored seq, a moved message takes the next', async () => {
    const counter = MIGRATIONS.findIndex((m) => m.name.startsWith('vector write order from a counter')) + 1;
    const url = dbFile();
    const old = createClient({ url });
    await migrate(old, counter - 1);
    const vector = new Uint8Array(new Float32Array([1, 0]).buffer);
    await old.batch([
      { sql: 'INSERT INTO engram_threads VALUES (?, ?, ?, ?, ?, ?)', args: ['th', 'user', '', '{}', 0, 0] },
      ...['a', 'b'].map((id, i) => ({
        sql: 'INSERT INTO engram_messages (id, thread_id, resource_id, role, content, type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        args: [id, 'th', 'user', 'user', '"hi"', 'text', i],
      })),
      "INSERT INTO engram_vector_space VALUES (1, 'test:2', 2)",
      ...[
        ['a', 3],
        ['b', 7],
      ].map(([id, seq]) => ({
        sql: "INSERT INTO engram_message_vectors (message_id, space, hash, embedding, seq) VALUES (?, 'test:2', ?, vector32(?), ?)",
        args: [id as string, id as string, vector, seq as number],
      })),
    ]);
    old.close();

    const store = new LibSQLStore({ url });
    const raw = createClient({ url });
    try {
      await store.init();
      const seq = async () =>
        Number((await raw.execute('SELECT seq FROM engram_vector_writes')).rows[0]?.seq);
      expect(await seq()).toBe(7);
      const search = () =>
        store.vectors.searchVectors({
          space: { id: 'test:2', dimensions: 2 },
          vector: new Float32Array([1, 0]),
          topK: 5,
          resourceId: 'user',
        });
      expect((await search()).map((h) => h.messageId)).toEqual(['b', 'a']);
      // b, the newest vector, goes; a moves to a later time: the kept copy sees both.
      await store.deleteMessages(['b']);
      await store.updateMessages([{ id: 'a', createdAt: new Date(9) }]);
      expect(await seq()).toBe(8);
      expect((await search()).map((h) => [h.messageId, h.createdAt.getTime()])).toEqual([['a', 9]]);
    } finally {
      raw.close();
      await store.close();
    }
  });

  it('applies each migration once when several stores initialise the same file at once', async () => {
    const url = dbFile();
    const stores = Array.from({ length: 4 }, () => new LibSQLStore({ url }));
    await Promise.all(stores.map((s) => s.init()));
    await Promise.all(stores.map((s) => s.close()));
    const check = createClient({ url });
    try {
      const versions = await check.execute('SELECT version FROM engram_migrations ORDER BY version');
      expect(versions.rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((_, i) => i + 1));
    } finally {
      check.close();
    }
  });

  it('applies each migration once when several processes initialise a new file at once', async () => {
    const url = dbFile();
    const children = Array.from({ length: 4 }, () =>
      runScript('./fixtures/init-store.ts', { ENGRAM_LIBSQL_CONFORMANCE_URL: url }),
    );
    expect(await Promise.all(children.map(exited))).toEqual([0, 0, 0, 0]);
    const check = createClient({ url });
    try {
      const versions = await check.execute('SELECT version FROM engram_migrations ORDER BY version');
      expect(versions.rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((_, i) => i + 1));
      const threads = await check.execute('SELECT COUNT(*) AS n FROM engram_threads');
      expect(Number(threads.rows[0]?.n)).toBe(4);
      const mode = await check.execute('PRAGMA journal_mode');
      expect(String(mode.rows[0]?.[0])).toBe('wal');
    } finally {
      check.close();
    }
  });

  it('refuses a database written by a newer schema version with MIGRATION', async () => {
    const url = dbFile();
    const store = new LibSQLStore({ url });
    await store.init();
    await store.close();
    const client = createClient({ url });
    await client.execute({
      sql: 'INSERT INTO engram_migrations (version, name, applied_at) VALUES (?, ?, ?)',
      args: [SCHEMA_VERSION + 1, 'from the future', Date.now()],
    });
    client.close();
    const newer = new LibSQLStore({ url });
    const error = await newer.init().catch((e: unknown) => e);
    expect(isMemoryError(error, 'MIGRATION')).toBe(true);
    expect(String(error)).toMatch(/newer/);
    await newer.close();
  });
});
