import type { JsonObject, Message } from '@engram/core';
import { PostgresStore } from '@engram/pg';
import pg from 'pg';
import { deepMerge } from '../deep-merge.ts';
import { runScoped, serviceUrl } from '../env.ts';
import type { BenchTarget, RawBaseline, RecallTarget } from '../target.ts';

/** The run's schema: `ENGRAM_BENCH_PG_SCHEMA`, or a fresh one dropped at the end. */
const given = process.env.ENGRAM_BENCH_PG_SCHEMA;
const schema = () => runScoped('ENGRAM_BENCH_PG_SCHEMA', () => `engram_bench_${process.pid}`);

/** `hnsw.ef_search` of the HNSW rows: the store's default `efSearch`. */
const EF_SEARCH = 100;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
/** Mastra's schema on the same server, dropped at the end with the store's. */
const peerSchema = () => `${schema()}_mastra`;
/** The `real[]` fallback's copy of the recall fixture, dropped at the end with the store's. */
const fallbackSchema = () => `${schema()}_real`;
const table = (name: string, at = schema()) => `${quote(at)}.${quote(`engram_${name}`)}`;

/** PostgreSQL at `ENGRAM_PG_URL`: the store and a `pg.Pool` side by side. */
export const target: BenchTarget = {
  name: 'pg',
  async open(options) {
    const url = serviceUrl('pg') as string;
    const storage = new PostgresStore({ connectionString: url, schemaName: schema(), maxConnections: 4 });
    await storage.init();
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    pool.on('error', () => undefined);
    const resources = table('resources');
    const messages = table('messages');
    const threads = table('threads');
    const raw: RawBaseline = {
      async getWorkingMemory(resourceId) {
        const result = await pool.query<{ working_memory: string | null }>(
          `SELECT working_memory FROM ${resources} WHERE id = $1`,
          [resourceId],
        );
        return result.rows[0]?.working_memory ?? null;
      },
      async replaceWorkingMemory(resourceId, document) {
        await pool.query(
          `INSERT INTO ${resources} (id, working_memory, metadata, created_at, updated_at)
           VALUES ($1, $2, '{}', now(), now())
           ON CONFLICT (id) DO UPDATE SET working_memory = EXCLUDED.working_memory, updated_at = now()`,
          [resourceId, document],
        );
      },
      async mergeWorkingMemory(resourceId: string, patch: JsonObject) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const lock = `SELECT working_memory FROM ${resources} WHERE id = $1 FOR UPDATE`;
          let locked = await client.query<{ working_memory: string | null }>(lock, [resourceId]);
          if (locked.rows.length === 0) {
            // First write: create the row (another process may win that race), then lock it.
            await client.query(
              `INSERT INTO ${resources} (id, working_memory, metadata, created_at, updated_at)
               VALUES ($1, NULL, '{}', now(), now()) ON CONFLICT (id) DO NOTHING`,
              [resourceId],
            );
            locked = await client.query(lock, [resourceId]);
          }
          const next = deepMerge(locked.rows[0]?.working_memory ?? null, patch);
          await client.query(
            `UPDATE ${resources} SET working_memory = $2, updated_at = now() WHERE id = $1`,
            [resourceId, next],
          );
          await client.query('COMMIT');
          client.release();
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          client.release(true);
          throw error;
        }
      },
      async saveMessages(batch: Message[]) {
        const values: unknown[] = [];
        const rows = batch.map((m) => {
          const at = values.length;
          values.push(m.id, m.threadId, m.resourceId, m.role, JSON.stringify(m.content), m.type, m.createdAt);
          return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}::jsonb, $${at + 6}, $${at + 7})`;
        });
        await pool.query(
          `INSERT INTO ${messages} (id, thread_id, resource_id, role, content, type, created_at) VALUES ${rows.join(', ')}`,
          values,
        );
      },
      async listNewest(threadId, n) {
        const result = await pool.query(
          `SELECT id, thread_id, resource_id, role, content, type, created_at FROM ${messages}
           WHERE thread_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
          [threadId, n],
        );
        return result.rows;
      },
      async listThreads(resourceId, n) {
        const result = await pool.query(
          `SELECT id, resource_id, title, metadata, created_at, updated_at FROM ${threads}
           WHERE resource_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
          [resourceId, n],
        );
        return result.rows;
      },
    };
    // Mastra is loaded only where it runs: the contention workers never import it.
    const peer = options?.peer
      ? await (await import('../mastra.ts')).mastraPeer(
          new (await import('@mastra/pg')).PostgresStore({
            id: 'bench-mastra',
            connectionString: url,
            schemaName: peerSchema(),
          }),
          'Mastra (@mastra/memory 1.31.0, @mastra/pg 1.27.1)',
          "the thread read before, outside the transaction; then one transaction for the rows and the thread's `updatedAt`",
        )
      : undefined;
    return {
      storage,
      raw,
      peer,
      async close() {
        await peer?.close();
        await pool.end();
        await storage.close();
      },
    };
  },
  async openWithoutKeywords() {
    const url = serviceUrl('pg') as string;
    const storage = new PostgresStore({
      connectionString: url,
      schemaName: schema(),
      maxConnections: 4,
      keywords: false,
    });
    await storage.init();
    return storage;
  },
  async openRecall(): Promise<RecallTarget> {
    const url = serviceUrl('pg') as string;
    const open = async (
      vectors: ConstructorParameters<typeof PostgresStore>[0]['vectors'],
      schemaName = schema(),
    ) => {
      const store = new PostgresStore({
        connectionString: url,
        schemaName,
        maxConnections: 4,
        vectors,
      });
      await store.init();
      return store;
    };
    const storage = await open({ backend: 'pgvector' });
    const indexed = await open({ backend: 'pgvector', hnsw: true });
    // The store without pgvector keeps vectors as real[] and ranks them in SQL; the column type
    // is decided per schema, so it gets a schema of its own, filled from the first one.
    const fallback = await open({ backend: 'real[]' }, fallbackSchema());
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    const messages = table('messages');
    const vectors = table('message_vectors');
    let ext: string | undefined;
    const hnsw = `pgvector HNSW (m 16, ef_construction 64, ef_search ${EF_SEARCH}, iterative scan)`;
    // The raw side of the HNSW rows: the same query, on connections that search the index as the
    // store does (set once per connection, so no query of it pays for the settings).
    const tuned = new pg.Pool({
      connectionString: url,
      max: 2,
      options: `-c hnsw.ef_search=${EF_SEARCH} -c hnsw.iterative_scan=strict_order`,
    });
    tuned.on('error', () => undefined);
    /** The resource's `topK` nearest vectors by `<=>`, as one hand-written SELECT on `client`. */
    const nearest = async (client: pg.Pool, resourceId: string, vector: Float32Array, topK: number) => {
      ext ??= quote(
        (
          await client.query<{ nspname: string }>(
            `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`,
          )
        ).rows[0]?.nspname ?? 'public',
      );
      const result = await client.query<{ id: string }>(
        `SELECT v.message_id AS id, v.thread_id, 1 - (v.embedding OPERATOR(${ext}.<=>) $1::${ext}.vector) AS score
         FROM ${vectors} v WHERE v.resource_id = $2
         ORDER BY v.embedding OPERATOR(${ext}.<=>) $1::${ext}.vector LIMIT $3`,
        [`[${Array.from(vector).join(',')}]`, resourceId, topK],
      );
      return result.rows;
    };
    const terms = table('message_terms');
    return {
      storage,
      rawKeywords: {
        describe:
          "PostgreSQL full-text search: `lexemes @@ to_tsquery` (the terms OR-ed, GIN index) joined to messages for the resource, ORDER BY ts_rank(lexemes, query) DESC LIMIT k (ts_rank, not engram's BM25)",
        async search(resourceId, words, topK) {
          const query = words.map((w) => `'${w.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`).join(' | ');
          const result = await pool.query<{ id: string }>(
            `SELECT m.id FROM ${terms} k JOIN ${messages} m ON m.id = k.message_id
             WHERE k.lexemes @@ $1::tsquery AND m.resource_id = $2
             ORDER BY ts_rank(k.lexemes, $1::tsquery) DESC LIMIT $3`,
            [query, resourceId, topK],
          );
          return result.rows;
        },
      },
      raw: {
        describe:
          "one SELECT of the resource's vector rows (which carry their message's resource since schema 11), ORDER BY embedding <=> $1 LIMIT k (an exact scan without the index)",
        scan: (resourceId, vector, topK) => nearest(pool, resourceId, vector, topK),
      },
      // Mastra is loaded only where it runs: the contention workers never import it.
      async openPeer(settings) {
        const { PostgresStore: MastraStore, PgVector } = await import('@mastra/pg');
        return (await import('../recall-mastra.ts')).mastraRecallPeer({
          ...settings,
          store: new MastraStore({ id: 'bench-mastra', connectionString: url, schemaName: peerSchema() }),
          vector: new PgVector({
            id: 'bench-mastra-vector',
            connectionString: url,
            schemaName: peerSchema(),
          }),
          name: 'Mastra (@mastra/memory 1.31.0, @mastra/pg 1.27.1 PgVector)',
          search:
            "on pg an exact ranking: PgVector's table (vector(256)) gets an IVFFlat index at creation and B-tree indexes on metadata->>'thread_id' and ->>'resource_id', but its filtered query scores every row that passes the filter and sorts them by score in an outer SELECT, which no vector index serves",
        });
      },
      variants: [
        {
          name: 'real[] fallback (exact, no pgvector)',
          storage: fallback,
          raw: {
            describe:
              "one SELECT of the resource's vector rows in the fallback's schema, ORDER BY the cosine of the real[] arrays (sum of products over unnest, as the store computes it) DESC LIMIT k",
            async scan(resourceId, vector, topK) {
              const result = await pool.query<{ id: string }>(
                `SELECT v.message_id AS id, (SELECT sum(a::float8 * b::float8) / nullif(sqrt(sum(a::float8 * a::float8) * sum(b::float8 * b::float8)), 0)
                   FROM unnest(v.embedding, $1::real[]) AS t(a, b)) AS score
                 FROM ${table('message_vectors', fallbackSchema())} v
                 WHERE v.resource_id = $2 ORDER BY score DESC LIMIT $3`,
                [Array.from(vector), resourceId, topK],
              );
              return result.rows;
            },
          },
          // Copies what the size added (threads, messages, vectors as real[]) from the store's schema.
          before: async () => {
            await fallback.vectors.claimSpace((await storage.vectors.getSpace()) as never);
            for (const name of ['threads', 'messages']) {
              await pool.query(
                `INSERT INTO ${table(name, fallbackSchema())} SELECT * FROM ${table(name)} ON CONFLICT DO NOTHING`,
              );
            }
            await pool.query(
              `INSERT INTO ${table('message_vectors', fallbackSchema())}
                 (message_id, space, hash, embedding, resource_id, thread_id, created_at)
               SELECT message_id, space, hash, embedding::real[], resource_id, thread_id, created_at
               FROM ${vectors} ON CONFLICT DO NOTHING`,
            );
            await pool.query(`ANALYZE ${table('messages', fallbackSchema())}`);
            await pool.query(`ANALYZE ${table('message_vectors', fallbackSchema())}`);
          },
          after: async () => undefined,
        },
        {
          name: hnsw,
          storage: indexed,
          approximate: true,
          raw: {
            describe: `the exact rows' SELECT, answered from the HNSW index by the planner, on connections set to hnsw.ef_search = ${EF_SEARCH} and hnsw.iterative_scan = strict_order (the store's settings; pgvector's defaults, 40 without iterative scans, may return fewer than k hits of the resource)`,
            scan: (resourceId, vector, topK) => nearest(tuned, resourceId, vector, topK),
          },
          // The store creates its index when it claims the space (here: already claimed).
          before: async () => {
            await indexed.vectors.claimSpace((await storage.vectors.getSpace()) as never);
            await pool.query(`ANALYZE ${vectors}`);
          },
          // Without IF EXISTS: were the store to name its index otherwise, the exact rows of the
          // next size would run beside it, so the run fails instead.
          after: async () => {
            await pool.query(`DROP INDEX ${quote(schema())}.${quote('engram_message_vectors_hnsw')}`);
          },
        },
      ],
      async settle() {
        await pool.query(`ANALYZE ${messages}`);
        await pool.query(`ANALYZE ${vectors}`);
      },
      async close() {
        await pool.end();
        await tuned.end();
        await fallback.close();
        await indexed.close();
        await storage.close();
      },
    };
  },
  async dispose() {
    const url = serviceUrl('pg');
    if (given || !url) return;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS ${quote(schema())} CASCADE`);
      await client.query(`DROP SCHEMA IF EXISTS ${quote(peerSchema())} CASCADE`);
      await client.query(`DROP SCHEMA IF EXISTS ${quote(fallbackSchema())} CASCADE`);
    } finally {
      await client.end();
    }
  },
};
