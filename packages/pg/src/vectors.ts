import type * as core from '@engram/core/adapter';
import { compareIds, MemoryError, VectorStoreBase } from '@engram/core/adapter';
import type pg from 'pg';
import type { Connection } from './connection.ts';
import { type Names, quoteIdent } from './sql.ts';

/** How vectors are stored and ranked: pgvector's `vector(n)` with `<=>`, or exact `real[]` math. */
export type VectorBackend = 'pgvector' | 'real[]';

/** Vector options of `PostgresStore`. */
export interface PostgresVectorOptions {
  /**
   * `'auto'` (default): pgvector when `CREATE EXTENSION vector` works when the first vector is
   * stored, else `real[]`. `'pgvector'` requires the extension (`UNSUPPORTED` otherwise);
   * `'real[]'` never uses it. Decided once per schema: later stores follow what is stored.
   */
  backend?: 'auto' | VectorBackend;
  /**
   * An HNSW index (pgvector only; opt-in). Searches then take `max(efSearch, 2 × topK)`
   * candidates of the scope from it with iterative scans (`hnsw.iterative_scan = strict_order`)
   * and re-rank them with the exact path's order and tie rule; when the candidates end tied with
   * the `topK`-th hit, or fewer than `topK` come back, the exact scan answers. Approximate only in
   * that a closer vector the graph search never reached is missed. Default off: exact scans.
   */
  hnsw?: boolean | { m?: number; efConstruction?: number; efSearch?: number };
}

interface HnswSettings {
  m: number;
  efConstruction: number;
  efSearch: number;
}

function hnswSettings(option: PostgresVectorOptions['hnsw']): HnswSettings | null {
  if (!option) return null;
  const o = option === true ? {} : option;
  const settings = { m: o.m ?? 16, efConstruction: o.efConstruction ?? 64, efSearch: o.efSearch ?? 100 };
  for (const [key, value] of Object.entries(settings)) {
    if (!Number.isInteger(value) || value < 2 || value > 1000) {
      throw new MemoryError('INVALID_ARGUMENT', `pg: vectors.hnsw.${key} must be an integer from 2 to 1000`, {
        adapter: 'pg',
      });
    }
  }
  return settings;
}

/**
 * Vectors in `<prefix>message_vectors`, next to the messages: one row per `(message, space)`,
 * deleted with its message by a foreign key (`ON DELETE CASCADE`), so `deleteMessages` and
 * `deleteThread` remove vectors in the same statement. The column starts as `real[]`; when the
 * first space is recorded with pgvector available it becomes `vector(n)`.
 *
 * Search selects the scope's messages first (`resource_id`, or `thread_id`) and ranks them
 * exactly: `<=>` (pgvector) or a cosine over `unnest` of the arrays (`real[]`).
 */
export class PostgresVectors extends VectorStoreBase {
  readonly search: 'exact' | 'index';
  private readonly hnsw: HnswSettings | null;
  private readonly want: 'auto' | VectorBackend;
  private known: VectorBackend | undefined;
  /** The quoted schema pgvector's type and operators live in, once known. */
  private ext: string | undefined;

  constructor(
    private readonly connection: Connection,
    private readonly n: Names,
    run: core.VectorRunner,
    options: PostgresVectorOptions = {},
  ) {
    super('pg', run);
    this.want = options.backend ?? 'auto';
    if (!['auto', 'pgvector', 'real[]'].includes(this.want)) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        "pg: vectors.backend must be 'auto', 'pgvector' or 'real[]'",
        {
          adapter: 'pg',
        },
      );
    }
    this.hnsw = hnswSettings(options.hnsw);
    this.search = this.hnsw ? 'index' : 'exact';
  }

  private get table(): string {
    return this.n.vectors;
  }

  /**
   * The backend this schema's vectors use (read from the column type). `real[]` can still turn
   * into pgvector until a space is recorded; `settled` says one is.
   */
  async backend(settled = false): Promise<VectorBackend> {
    if (this.known) return this.known;
    const [row] = await this.connection.query<{ type: string }>(
      `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
        WHERE attrelid = $1::regclass AND attname = 'embedding'`,
      [this.table],
    );
    const backend: VectorBackend = row?.type.includes('vector') ? 'pgvector' : 'real[]';
    // real[] may still turn into vector(n) when the space is claimed: only cache pgvector.
    if (backend === 'pgvector')
      this.ext = await this.extensionSchema(this.connection.query.bind(this.connection));
    if (backend === 'pgvector' || settled) this.known = backend;
    return backend;
  }

  /** The quoted schema holding the `vector` extension, or `undefined` when it is not installed. */
  private async extensionSchema(
    query: (text: string) => Promise<{ nspname: string }[]>,
  ): Promise<string | undefined> {
    const [row] = await query(
      `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`,
    );
    return row ? quoteIdent(row.nspname) : undefined;
  }

  protected async doGetSpace(): Promise<core.EmbeddingSpace | null> {
    const [row] = await this.connection.query<{ embedder: string; dimensions: number }>(
      `SELECT embedder, dimensions FROM ${this.n.vectorSpace} WHERE id = 1`,
    );
    return row ? { id: row.embedder, dimensions: row.dimensions } : null;
  }

  protected async doClaimSpace(space: core.EmbeddingSpace): Promise<core.EmbeddingSpace> {
    await this.connection.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `engram-vectors:${this.table}`,
      ]);
      const inserted = await client.query(
        `INSERT INTO ${this.n.vectorSpace} (id, embedder, dimensions) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING`,
        [space.id, space.dimensions],
      );
      if (inserted.rowCount === 1 && this.want !== 'real[]' && (await this.createExtension(client))) {
        const ext = await this.extensionSchema(async (text) => (await client.query(text)).rows);
        const type = `${ext}.vector(${space.dimensions})`;
        await client.query(
          `ALTER TABLE ${this.table} ALTER COLUMN embedding TYPE ${type} USING embedding::${type}`,
        );
      }
    });
    const backend = await this.backend();
    if (this.want === 'pgvector' && backend !== 'pgvector') {
      throw new MemoryError(
        'UNSUPPORTED',
        "pg: vectors.backend 'pgvector' was asked for, but the extension cannot be created here (or this schema's vectors are already stored as real[])",
        { adapter: 'pg' },
      );
    }
    if (backend === 'pgvector' && this.hnsw) await this.createIndex();
    return (await this.doGetSpace()) as core.EmbeddingSpace;
  }

  /**
   * `CREATE EXTENSION IF NOT EXISTS vector` in the store's schema (so `public` stays untouched
   * when a schema is configured; an extension already installed elsewhere is used where it is),
   * inside a savepoint; `false` when it is unavailable.
   */
  private async createExtension(client: pg.PoolClient): Promise<boolean> {
    await client.query('SAVEPOINT engram_vector_extension');
    try {
      await client.query(`CREATE EXTENSION IF NOT EXISTS vector SCHEMA ${this.n.schema}`);
      await client.query('RELEASE SAVEPOINT engram_vector_extension');
      return true;
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT engram_vector_extension');
      return false;
    }
  }

  private async createIndex(): Promise<void> {
    const h = this.hnsw as HnswSettings;
    await this.connection.query(
      `CREATE INDEX IF NOT EXISTS ${quoteIdent(`${this.n.prefix}message_vectors_hnsw`)} ON ${this.table}
        USING hnsw (embedding ${this.ext}.vector_cosine_ops) WITH (m = ${h.m}, ef_construction = ${h.efConstruction})`,
    );
  }

  protected async doUpsertVectors(space: core.EmbeddingSpace, rows: core.MessageVector[]): Promise<void> {
    // In id order, so concurrent writers lock rows in the same order; absent messages join nothing.
    const sorted = [...rows].sort((a, b) => compareIds(a.messageId, b.messageId));
    const values: unknown[] = [space.id];
    const tuples = sorted.map((v) => {
      values.push(v.messageId, v.hash, Array.from(v.vector));
      const at = values.length;
      return `($${at - 2}::text, $${at - 1}::text, $${at}::real[])`;
    });
    await this.connection.query(
      `INSERT INTO ${this.table} AS o (message_id, space, hash, embedding)
        SELECT m.id, $1, x.hash, x.embedding
        FROM (VALUES ${tuples.join(', ')}) AS x(id, hash, embedding) JOIN ${this.n.messages} m ON m.id = x.id
        ORDER BY m.id
        ON CONFLICT (message_id, space) DO UPDATE SET hash = EXCLUDED.hash, embedding = EXCLUDED.embedding`,
      values,
    );
  }

  protected async doGetVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.StoredVector[]> {
    const rows = await this.connection.query<{ message_id: string; hash: string }>(
      `SELECT message_id, hash FROM ${this.table} WHERE space = $1 AND message_id = ANY($2::text[])`,
      [space.id, ids],
    );
    return rows.map((r) => ({ messageId: r.message_id, hash: r.hash }));
  }

  protected async doDeleteVectors(space: core.EmbeddingSpace, ids: string[]): Promise<void> {
    await this.connection.query(
      `DELETE FROM ${this.table} WHERE space = $1 AND message_id = ANY($2::text[])`,
      [space.id, ids],
    );
  }

  protected async doSearchVectors(args: core.VectorSearch): Promise<core.VectorHit[]> {
    // The base class checked that a space is recorded: the column type is settled.
    const pgvector = (await this.backend(true)) === 'pgvector';
    if (!pgvector || !this.hnsw) return hitsOf(await this.scan(args, pgvector, null));
    // The index's nearest candidates of the scope (more than topK), re-ranked exactly. When the
    // index filled the candidates and the last one ties with the topK-th, the tie may go on past
    // them: the exact scan then decides which of the tied hits are the newest.
    const candidates = Math.max(this.hnsw.efSearch, args.topK * 2);
    const ranked = await this.scan(args, true, candidates);
    const last = ranked[ranked.length - 1];
    const kth = ranked[args.topK - 1];
    const tiedPast = ranked.length === candidates && kth?.distance === last?.distance;
    // Fewer than topK: the scope has fewer, or the scan stopped at hnsw.max_scan_tuples.
    if (!kth || tiedPast) {
      return hitsOf(await this.scan(args, true, null));
    }
    return hitsOf(ranked.slice(0, args.topK));
  }

  /**
   * The scope's rows in the exact order (score, newest `created_at`, id): the best `topK` of
   * every vector of the scope (`candidates` null), or all of the HNSW index's `candidates`
   * nearest. A zero vector (stored before they were refused) scores 0, never `NaN` (pgvector's
   * `<=>`) or `NULL` (the `real[]` cosine).
   */
  private async scan(args: core.VectorSearch, pgvector: boolean, candidates: number | null): Promise<Row[]> {
    const raw = `v.embedding OPERATOR(${this.ext}.<=>) $1::real[]::${this.ext}.vector`;
    const values: unknown[] = [
      Array.from(args.vector),
      args.space.id,
      args.resourceId,
      args.excludeIds ?? [],
    ];
    const thread = args.threadId === undefined ? '' : `AND m.thread_id = $${values.push(args.threadId)}`;
    const ties = 'm.created_at DESC, m.id';
    // pgvector orders by the distance (what its index ranks by), real[] by the cosine itself.
    const [columns, order] = pgvector
      ? [
          `coalesce(nullif(${raw}, 'NaN'::float8), 1) AS distance, 1 - coalesce(nullif(${raw}, 'NaN'::float8), 1) AS score`,
          `ORDER BY distance, ${ties}`,
        ]
      : [
          `coalesce((SELECT sum(a::float8 * b::float8) / nullif(sqrt(sum(a::float8 * a::float8) * sum(b::float8 * b::float8)), 0)
             FROM unnest(v.embedding, $1::real[]) AS t(a, b)), 0) AS score`,
          `ORDER BY score DESC, ${ties}`,
        ];
    const select = `SELECT m.id, m.thread_id, m.created_at, v.hash, ${columns}
      FROM ${this.n.messages} m JOIN ${this.table} v ON v.message_id = m.id AND v.space = $2
      WHERE m.resource_id = $3 AND NOT (m.id = ANY($4::text[])) ${thread}`;
    if (candidates === null) {
      return this.connection.query<Row>(`${select} ${order} LIMIT $${values.push(args.topK)}`, values);
    }
    // The inner ORDER BY must be the distance alone for pgvector to use the index.
    const text = `SELECT * FROM (${select} ORDER BY ${raw} LIMIT $${values.push(candidates)}) m ${order}`;
    const efSearch = Math.min(1000, Math.max((this.hnsw as HnswSettings).efSearch, candidates));
    return this.connection.transaction(async (client) => {
      await client.query(`SET LOCAL hnsw.ef_search = ${efSearch}`);
      await client.query(`SET LOCAL hnsw.iterative_scan = strict_order`);
      return (await client.query<Row>(text, values)).rows;
    });
  }
}

type Row = {
  id: string;
  thread_id: string;
  created_at: Date;
  hash: string;
  score: number;
  distance?: number;
};

function hitsOf(rows: Row[]): core.VectorHit[] {
  return rows.map((r) => ({
    messageId: r.id,
    threadId: r.thread_id,
    hash: r.hash,
    score: Number(r.score),
    createdAt: new Date(r.created_at),
  }));
}
