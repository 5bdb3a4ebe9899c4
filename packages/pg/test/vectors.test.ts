import { createLexicalEmbedder, Memory, type Message } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore, type PostgresVectorOptions } from '../src/index.ts';
import { MIGRATIONS } from '../src/migrations.ts';
import {
  createDatabase,
  describePg,
  randomName,
  schemaAt,
  sentText,
  type TestDatabase,
  threadNow,
} from './env.ts';

/** The version whose vectors carry their message's place. */
const PLACE_VERSION = MIGRATIONS.findIndex((m) => m.description.startsWith('vectors carry')) + 1;

describePg('pg vectors, read back with plain SQL', (url) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createDatabase(url);
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function withStore(vectors: PostgresVectorOptions) {
    const schemaName = randomName('vec');
    const store = new PostgresStore({ connectionString: db.url, schemaName, vectors });
    await store.init();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder({ dimensions: 24 }),
      options: { semanticRecall: { mode: 'vector' } },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const saved = await memory.saveMessages({
      messages: [
        { threadId: 't', resourceId: 'u', role: 'user', content: 'the quick brown fox' },
        { threadId: 't', resourceId: 'u', role: 'assistant', content: 'jumps over the lazy dog' },
      ],
    });
    return { store, memory, saved, schemaName };
  }

  const columnType = async (schema: string) =>
    (
      await db.query<{ type: string }>(
        `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
          WHERE attrelid = $1::regclass AND attname = 'embedding'`,
        [`"${schema}".engram_message_vectors`],
      )
    )[0]?.type;

  it('by default stores vector(n) (pgvector) and ranks with <=>; a message delete cascades', async () => {
    const { store, saved, schemaName } = await withStore({});
    expect(await store.vectors.backend()).toBe('pgvector');
    expect(await columnType(schemaName)).toBe('engram_extensions.vector(24)');
    const rows = await db.query<{ message_id: string; space: string }>(
      `SELECT message_id, space FROM "${schemaName}".engram_message_vectors ORDER BY message_id`,
    );
    expect(rows.map((r) => r.message_id).sort()).toEqual(saved.map((m) => m.id).sort());
    expect(new Set(rows.map((r) => r.space))).toEqual(new Set(['engram:lexical-24']));
    await db.query(`DELETE FROM "${schemaName}".engram_messages WHERE id = $1`, [saved[0]?.id]);
    const left = await db.query<{ message_id: string }>(
      `SELECT message_id FROM "${schemaName}".engram_message_vectors`,
    );
    expect(left.map((r) => r.message_id)).toEqual([saved[1]?.id]);
    await store.close();
  });

  it("pgvector goes into a schema of its own: dropping a store's schema leaves the other schemas' vectors", async () => {
    const fresh = await createDatabase(url);
    try {
      const schemas = [randomName('vec'), randomName('vec')];
      const stores = schemas.map(
        (schemaName) => new PostgresStore({ connectionString: fresh.url, schemaName }),
      );
      const space = { id: 'test:own-schema', dimensions: 2 };
      for (const store of stores) {
        // The two stores claim at once: one creates the extension, the other finds it.
        await store.saveThread(threadNow('t', 'r'));
        await store.saveMessages([
          {
            id: 'm',
            threadId: 't',
            resourceId: 'r',
            role: 'user',
            content: 'x',
            type: 'v2',
            createdAt: new Date(),
          },
        ]);
      }
      await Promise.all(stores.map((store) => store.vectors.claimSpace(space)));
      for (const store of stores) {
        await store.vectors.upsertVectors(space, [
          { messageId: 'm', hash: 'h', vector: Float32Array.of(1, 0) },
        ]);
        expect(await store.vectors.backend()).toBe('pgvector');
      }
      const [ext] = await fresh.query<{ ext: string }>(
        "SELECT n.nspname AS ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
      );
      expect(ext?.ext).toBe('engram_extensions');
      const [first, second] = stores as [PostgresStore, PostgresStore];
      await first.close();
      await fresh.query(`DROP SCHEMA "${schemas[0]}" CASCADE`);
      const search = { space, vector: Float32Array.of(1, 0), topK: 1, resourceId: 'r' };
      expect((await second.vectors.searchVectors(search)).map((h) => h.messageId)).toEqual(['m']);
      await second.close();
    } finally {
      await fresh.drop();
    }
  });

  it("backend 'real[]' keeps exact real[] vectors and finds the same hit", async () => {
    const { store, memory, saved, schemaName } = await withStore({ backend: 'real[]' });
    expect(await store.vectors.backend()).toBe('real[]');
    expect(await columnType(schemaName)).toBe('real[]');
    await memory.createThread({ resourceId: 'u', threadId: 'now' });
    const { hits } = await memory.recall({ threadId: 'now', resourceId: 'u', query: 'a lazy dog' });
    expect(hits[0]?.message.id).toBe(saved[1]?.id);
    expect(hits[0]?.score).toBeGreaterThan(0.3);
    await store.close();
  });

  it('hnsw: true creates the HNSW index on the vector column', async () => {
    const { store, schemaName } = await withStore({ hnsw: { m: 8, efConstruction: 32, efSearch: 40 } });
    const indexes = await db.query<{ indexdef: string }>(
      'SELECT indexdef FROM pg_indexes WHERE schemaname = $1',
      [schemaName],
    );
    expect(indexes.map((i) => i.indexdef).join('\n')).toMatch(
      /USING hnsw \(embedding (\S+\.)?vector_cosine_ops\)/,
    );
    expect(store.vectors.search).toBe('index');
    await store.close();
  });

  it('hnsw: among equal scores the newest win, as in the exact scan (identical texts re-ranked exactly)', async () => {
    const schemaName = randomName('vec');
    const embedder = createLexicalEmbedder({ dimensions: 24 });
    const hnsw = new PostgresStore({ connectionString: db.url, schemaName, vectors: { hnsw: true } });
    const memory = new Memory({ storage: hnsw, embedder, options: { semanticRecall: { mode: 'vector' } } });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    // 150 "ok" fill the index's 100 candidates with one score; 40 "thanks!" fit in them.
    const texts = [
      ...Array.from({ length: 150 }, () => 'ok'),
      ...Array.from({ length: 40 }, () => 'thanks!'),
      ...Array.from({ length: 30 }, (_, i) => `note number ${i} about the trip`),
    ];
    const order = Array.from(texts.keys()).sort((a, b) => ((a * 7919) % 220) - ((b * 7919) % 220));
    await memory.saveMessages({
      messages: order.map((i) => ({
        threadId: 't',
        resourceId: 'u',
        role: 'user' as const,
        content: texts[i] as string,
        createdAt: new Date(Date.UTC(2024, 0, 1) + i * 1000),
      })),
    });
    const exact = new PostgresStore({ connectionString: db.url, schemaName });
    const space = (await hnsw.vectors.getSpace()) as { id: string; dimensions: number };
    let compared = 0;
    for (const query of ['ok', 'thanks!', 'note number 3 about the trip', 'the trip']) {
      const vector = new Float32Array(
        (await embedder.doEmbed({ values: [query] })).embeddings[0] as number[],
      );
      for (const topK of [1, 5, 20]) {
        const search = { space, vector, topK, resourceId: 'u' };
        const [got, want] = await Promise.all([
          hnsw.vectors.searchVectors(search),
          exact.vectors.searchVectors(search),
        ]);
        expect(want).toHaveLength(topK);
        expect(got, `${query} top ${topK}`).toEqual(want);
        // With history and windows, round by round the same (the ties send it past the first).
        const windowed = { ...search, before: 1, after: 1, history: { threadId: 't', last: 3 } };
        const [gotWindowed, wantWindowed] = await Promise.all([
          hnsw.vectors.searchWithWindows?.(windowed),
          exact.vectors.searchWithWindows?.(windowed),
        ]);
        expect(wantWindowed?.hits).toHaveLength(topK);
        expect(gotWindowed, `${query} top ${topK} with history`).toEqual(wantWindowed);
        compared++;
      }
    }
    expect(compared).toBe(12);
    await exact.close();
    await hnsw.close();
  });

  it("hnsw: a scoped search, and a recall's search with its history and windows, is one statement; its index settings hold for that statement only", async () => {
    const schemaName = randomName('vec');
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    // The test database is dropped WITH (FORCE): a client still closing then hears its backend end.
    pool.on('error', () => undefined);
    const sent: string[] = [];
    let statement: { text: string; values: unknown[] } | undefined;
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          const text = sentText(args[0]).trim();
          sent.push(text);
          if (text.includes('set_config')) {
            const values = (args[0] as { values?: unknown[] }).values ?? (args[1] as unknown[]);
            statement = { text, values };
          }
          return query(...args);
        },
      });
    });
    const store = new PostgresStore({ pool, schemaName, vectors: { hnsw: { efSearch: 64 } } });
    const space = { id: 'test:hnsw', dimensions: 8 };
    await store.vectors.claimSpace(space);
    let seed = 7;
    const unit = () => {
      const v = Float32Array.from({ length: 8 }, () => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        return seed / 2 ** 31 - 0.5;
      });
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    };
    for (const [resourceId, count] of [
      ['big', 600],
      ['small', 12],
    ] as const) {
      const at = new Date(Date.UTC(2024, 0, 1));
      await store.saveThread({
        id: `t-${resourceId}`,
        resourceId,
        title: '',
        metadata: {},
        createdAt: at,
        updatedAt: at,
      });
      const messages = Array.from({ length: count }, (_, i) => ({
        id: `${resourceId}-${i}`,
        threadId: `t-${resourceId}`,
        resourceId,
        role: 'user' as const,
        content: `m ${i}`,
        type: 'text',
        createdAt: new Date(at.getTime() + i),
      }));
      await store.saveMessages(messages);
      await store.vectors.upsertVectors(
        space,
        messages.map((m) => ({ messageId: m.id, hash: m.id, vector: unit() })),
      );
    }
    const exact = new PostgresStore({ connectionString: db.url, schemaName });
    for (let q = 0; q < 5; q++) {
      const search = { space, vector: unit(), topK: 5, resourceId: 'small' };
      sent.length = 0;
      const got = await store.vectors.searchVectors(search);
      expect(sent.filter((text) => !/^SELECT (format_type|.*pg_extension)/i.test(text))).toHaveLength(1);
      expect(sent.join('\n')).not.toMatch(/\b(BEGIN|SET LOCAL|COMMIT)\b/);
      // Twice top k from the index (distinct scores here: no tie with the last candidate).
      expect(statement?.values.at(-1)).toBe(2 * search.topK);
      expect(got).toEqual(await exact.vectors.searchVectors(search));
    }
    // The settings are made by a one-time filter above every scan of the statement, so they hold
    // when the index scan starts (the next test shows pgvector then takes them).
    const explain = async () =>
      (await pool.query(`EXPLAIN (COSTS OFF) ${statement?.text}`, statement?.values)).rows.map(
        (r: Record<string, string>) => r['QUERY PLAN'] as string,
      );
    const settings = (line: string) => /One-Time Filter: .*hnsw\.ef_search.*hnsw\.iterative_scan/.test(line);
    const plan = await explain();
    const filter = plan.findIndex(settings);
    expect(filter).toBeGreaterThan(0);
    expect(plan.slice(0, filter).filter((line) => /Scan/.test(line))).toEqual([]);
    // A recall's history, hits and windows: one statement too, the hits from the index.
    for (let q = 0; q < 5; q++) {
      const history = { threadId: 't-small', last: 4 };
      const search = { space, vector: unit(), topK: 5, resourceId: 'small', before: 1, after: 1, history };
      sent.length = 0;
      const got = await store.vectors.searchWithWindows?.(search);
      expect(sent.filter((text) => !/^SELECT (format_type|.*pg_extension)/i.test(text))).toHaveLength(1);
      expect(got?.history).toEqual(['small-11', 'small-10', 'small-9', 'small-8']);
      expect(got?.hits).toHaveLength(5);
      expect(got).toEqual(await exact.vectors.searchWithWindows?.(search));
    }
    // The settings' filter sits above the statement's only scan of the vectors, as in the search's.
    const windowed = await explain();
    const at = windowed.findIndex(settings);
    const vectorScans = windowed.flatMap((line, i) =>
      /Scan.* on engram_message_vectors/.test(line) ? [i] : [],
    );
    expect(at).toBeGreaterThan(0);
    expect(vectorScans).toEqual([at + 1]);
    // Local to the statement: the pooled connection is back to pgvector's defaults (40, off).
    const { rows } = await pool.query<{ ef: string; iterative: string }>(
      "SELECT current_setting('hnsw.ef_search', true) AS ef, current_setting('hnsw.iterative_scan', true) AS iterative",
    );
    expect(rows[0]).toEqual({ ef: '40', iterative: 'off' });
    await exact.close();
    await store.close();
    await pool.end();
  });

  it('hnsw: pgvector takes settings made by a one-time filter above its index scan (iterative scan on: 40 hits of a 1% filter; off: none)', async () => {
    const schema = randomName('hnsw');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query('CREATE EXTENSION IF NOT EXISTS vector');
      const [{ ext } = { ext: 'public' }] = (
        await client.query<{ ext: string }>(
          "SELECT n.nspname AS ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
        )
      ).rows;
      await client.query(`CREATE TABLE ${schema}.t (id int, grp text, e ${ext}.vector(8))`);
      await client.query(`INSERT INTO ${schema}.t SELECT i, CASE WHEN i % 100 = 0 THEN 'small' ELSE 'big' END,
        ARRAY(SELECT sin(i * 7 + j) FROM generate_series(1, 8) j)::real[]::${ext}.vector FROM generate_series(1, 5000) i`);
      await client.query(`CREATE INDEX ON ${schema}.t USING hnsw (e ${ext}.vector_cosine_ops)`);
      await client.query(`ANALYZE ${schema}.t`);
      await client.query('SET enable_seqscan = off');
      const count = async (iterative: string) =>
        Number(
          (
            await client.query<{ n: string }>(
              `SELECT count(*) AS n FROM (SELECT set_config('hnsw.ef_search', '40', true) AS ef,
                 set_config('hnsw.iterative_scan', $1, true) AS iterative) settings
               CROSS JOIN LATERAL (SELECT id FROM ${schema}.t WHERE grp = 'small'
                 AND settings.ef IS NOT NULL AND settings.iterative IS NOT NULL
                 ORDER BY e OPERATOR(${ext}.<=>) '[0.1,0.2,0.3,0.4,-0.1,-0.2,-0.3,0.5]'::${ext}.vector LIMIT 40) r`,
              [iterative],
            )
          ).rows[0]?.n,
        );
      expect(await count('strict_order')).toBe(40);
      expect(await count('off')).toBeLessThan(5);
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  });

  it('a zero vector stored before they were refused scores 0, never NaN', async () => {
    for (const backend of ['pgvector', 'real[]'] as const) {
      const { store, saved, schemaName } = await withStore({ backend });
      await db.query(
        // pgvector casts real[] to vector on assignment.
        `UPDATE "${schemaName}".engram_message_vectors SET embedding = array_fill(0::real, ARRAY[24]) WHERE message_id = $1`,
        [saved[0]?.id],
      );
      const space = (await store.vectors.getSpace()) as { id: string; dimensions: number };
      const vector = new Float32Array(24);
      vector[0] = -1;
      const hits = await store.vectors.searchVectors({ space, vector, topK: 2, resourceId: 'u' });
      const zero = hits.find((h) => h.messageId === saved[0]?.id);
      expect(zero?.score, backend).toBe(0);
      for (const h of hits) expect(Number.isFinite(h.score), backend).toBe(true);
      await store.close();
    }
  });

  it("vectors carry their message's resource, thread and createdAt: filled in by the upgrade, moved with the message by any write", async () => {
    const at = new Date('2024-05-06T07:08:09.010Z');
    // A schema of the version before: vectors without the message's place.
    const schemaName = await schemaAt(db.url, 'vec', PLACE_VERSION - 1, async (client, names) => {
      await client.query(
        `INSERT INTO ${names.threads} (id, resource_id, title, metadata, created_at, updated_at)
          VALUES ('t1', 'r1', '', '{}', $1, $1), ('t2', 'r2', '', '{}', $1, $1), ('t3', 'r1', '', '{}', $1, $1)`,
        [at],
      );
      await client.query(
        `INSERT INTO ${names.messages} (id, thread_id, resource_id, role, content, type, created_at)
          SELECT 'm' || i, 't1', 'r1', 'user', to_jsonb('note ' || i), 'v2', $1::timestamptz + i * interval '1 second'
          FROM generate_series(1, 3) AS i`,
        [at],
      );
      await client.query(`INSERT INTO ${names.vectorSpace} (id, embedder, dimensions) VALUES (1, 's', 2)`);
      await client.query(
        `INSERT INTO ${names.vectors} (message_id, space, hash, embedding)
          SELECT 'm' || i, 's', 'h' || i, ARRAY[1, i]::real[] FROM generate_series(1, 3) AS i`,
      );
    });
    const store = new PostgresStore({ connectionString: db.url, schemaName, vectors: { backend: 'real[]' } });
    const places = () =>
      db.query<{ id: string; r: string; t: string; at: Date }>(
        `SELECT message_id AS id, resource_id AS r, thread_id AS t, created_at AS at
          FROM "${schemaName}".engram_message_vectors ORDER BY message_id`,
      );
    try {
      await store.init();
      expect(await places()).toEqual(
        [1, 2, 3].map((i) => ({ id: `m${i}`, r: 'r1', t: 't1', at: new Date(at.getTime() + i * 1000) })),
      );
      // Moved to another thread and re-dated by a save; moved to another resource by plain SQL.
      const [m1] = await store.listMessagesById({ ids: ['m1'] });
      const later = new Date(at.getTime() + 60_000);
      await store.saveMessages([{ ...(m1 as Message), threadId: 't3', createdAt: later }]);
      await db.query(
        `UPDATE "${schemaName}".engram_messages SET thread_id = 't2', resource_id = 'r2' WHERE id = 'm3'`,
      );
      expect(await places()).toEqual([
        { id: 'm1', r: 'r1', t: 't3', at: later },
        { id: 'm2', r: 'r1', t: 't1', at: new Date(at.getTime() + 2000) },
        { id: 'm3', r: 'r2', t: 't2', at: new Date(at.getTime() + 3000) },
      ]);
      const space = { id: 's', dimensions: 2 };
      const search = (resourceId: string) =>
        store.vectors.searchVectors({ space, vector: Float32Array.of(1, 0), topK: 5, resourceId });
      expect((await search('r1')).map((h) => [h.messageId, h.threadId, h.createdAt])).toEqual([
        ['m1', 't3', later],
        ['m2', 't1', new Date(at.getTime() + 2000)],
      ]);
      expect((await search('r2')).map((h) => h.messageId)).toEqual(['m3']);
    } finally {
      await store.close();
    }
  });

  it('bad vector options are INVALID_ARGUMENT at construction', () => {
    expect(
      () => new PostgresStore({ connectionString: db.url, vectors: { backend: 'faiss' as never } }),
    ).toThrow(/vectors.backend/);
    expect(() => new PostgresStore({ connectionString: db.url, vectors: { hnsw: { m: 1 } } })).toThrow(
      /hnsw.m/,
    );
  });
});
