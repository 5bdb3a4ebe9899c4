import type * as core from '@engram/core/driver';
import { assertStoreOptions, compareIds, keysOf, MemoryError, ValidatedVectors } from '@engram/core/driver';
import type { ClientBase } from 'pg';
import type { Connection } from './connection.ts';
import { filterOnly, messageById, type Names, quoteIdent, windowsOf } from './sql.ts';

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
   * An HNSW index (pgvector only; opt-in). Searches take `2 × topK` candidates of the scope from it
   * (`hnsw.iterative_scan = strict_order`, `hnsw.ef_search` at least `efSearch`) and re-rank them
   * exactly, reading `max(efSearch, 2 × topK)` when the last ties with the `topK`-th; approximate
   * only in that a closer vector the graph search never reached is missed. Default off: exact scans.
   */
  hnsw?: boolean | { m?: number; efConstruction?: number; efSearch?: number };
}

type Hnsw = { m: number; efConstruction: number; efSearch: number };
/**
 * A hit as scanned: pgvector's rows carry the distance (what its index ranks by, computed once per
 * row) and no score, the `real[]` fallback's the score.
 */
type Scanned = Omit<core.VectorHit, 'score'> & { score?: number; distance?: number };
/**
 * A search's SQL parts (see `PostgresVectorDriver.ranking`): `select` the scope's rows without the
 * left-out ids (unordered), `order` the exact order, `distance` what pgvector's index ranks by,
 * and `exact(limit)` the best `limit` rows in order.
 */
type Ranking = { select: string; order: string; distance: string; exact: (limit: number) => string };

/**
 * A vector as the text of a PostgreSQL array (`{…}`) or, `pgvector`, of pgvector's `vector`
 * (`[…]`), each element as JavaScript prints it: built in one `join` (pg's own serialisation of a
 * 256-number array took 0.1–0.2 ms, about a fifth of an exact search of 1,000 vectors).
 */
const vectorText = (vector: Float32Array, pgvector = false): string =>
  pgvector ? `[${vector.join(',')}]` : `{${vector.join(',')}}`;

/**
 * A count written into a statement's text: a safe integer (core validated it), else a thrown
 * error, never text. Counts are written, not sent, in the exact scan's named statements, so that
 * PostgreSQL plans them once (a generic plan): with a parameter for a `LIMIT`, it estimated a tenth
 * of the rows and planned the statement again on every call (0.5 of 1.7 ms at 1,000 vectors).
 */
function count(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`pg: not a count: ${n}`);
  return n;
}

/** The schema holding the `vector` extension (NULL when it is not installed), as an SQL subquery. */
const EXTENSION_SCHEMA = `(SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
  WHERE e.extname = 'vector')`;

/** Where a store installs pgvector when the database has none: a schema of its own (see `installVector`). */
const EXTENSIONS_SCHEMA = 'engram_extensions';

/**
 * The schema holding pgvector, installed first when the database has none (`null` when it cannot
 * be), inside the caller's transaction, under a lock for the whole database so stores of several
 * schemas do not race to create it. Installed in `engram_extensions`, not in a store's schema:
 * dropping that store's schema with `CASCADE` would drop the extension, and with it the vector
 * column of every other schema's store. A role that cannot create that schema installs it in the
 * store's own (`fallback`), as before.
 */
async function installVector(client: ClientBase, fallback: string): Promise<string | null> {
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended('engram-vector-extension', 0))");
  const installed = async () =>
    (await client.query(`SELECT ${EXTENSION_SCHEMA} AS ext`)).rows[0]?.ext ?? null;
  const attempt = async (statements: string[]) => {
    await client.query('SAVEPOINT engram_vector_extension');
    try {
      for (const statement of statements) await client.query(statement);
      await client.query('RELEASE SAVEPOINT engram_vector_extension');
      return true;
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT engram_vector_extension');
      return false;
    }
  };
  const own = quoteIdent(EXTENSIONS_SCHEMA);
  const found = await installed();
  if (found !== null) return found;
  const ours = [`CREATE SCHEMA IF NOT EXISTS ${own}`, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA ${own}`];
  if (!(await attempt(ours))) await attempt([`CREATE EXTENSION IF NOT EXISTS vector SCHEMA ${fallback}`]);
  return installed();
}

const invalid = (message: string) => new MemoryError('INVALID_ARGUMENT', `pg: ${message}`, { adapter: 'pg' });

/**
 * Vectors in `<prefix>message_vectors`, one row per `(message, space)`, in a column that starts as
 * `real[]` and becomes `vector(n)` when the first space is recorded with pgvector available.
 */
export class PostgresVectorDriver implements core.VectorDriver {
  readonly search: 'exact' | 'index';
  readonly historyInSearch: boolean;
  readonly searchWithWindows?: (
    args: core.WindowedSearch & { excludeIds: string[] },
  ) => Promise<core.WindowedHits>;
  private readonly hnsw: Hnsw | null = null;
  private readonly want: 'auto' | VectorBackend;
  private known: VectorBackend | undefined;
  /** The quoted schema pgvector's type and operators live in, once known. */
  private ext: string | undefined;

  constructor(
    private readonly db: Connection,
    private readonly n: Names,
    options: PostgresVectorOptions = {},
  ) {
    assertStoreOptions(
      options,
      keysOf<PostgresVectorOptions>({ backend: true, hnsw: true }),
      'pg',
      'vectors.',
    );
    this.want = options.backend ?? 'auto';
    if (!['auto', 'pgvector', 'real[]'].includes(this.want)) {
      throw invalid("vectors.backend must be 'auto', 'pgvector' or 'real[]'");
    }
    if (options.hnsw) {
      const given = options.hnsw === true ? {} : options.hnsw;
      assertStoreOptions(
        given,
        keysOf<Hnsw>({ m: true, efConstruction: true, efSearch: true }),
        'pg',
        'vectors.hnsw.',
      );
      const { m = 16, efConstruction = 64, efSearch = 100 } = given;
      this.hnsw = { m, efConstruction, efSearch };
      for (const [key, value] of Object.entries(this.hnsw)) {
        if (!Number.isInteger(value) || value < 2 || value > 1000) {
          throw invalid(`vectors.hnsw.${key} must be an integer from 2 to 1000`);
        }
      }
    }
    this.search = this.hnsw ? 'index' : 'exact';
    // The history and the hits' windows are read in the search's statement (see `windowed`).
    this.historyInSearch = true;
    this.searchWithWindows = (args) => this.windowed(args);
  }

  /**
   * No statements: a vector row references its message with `ON DELETE CASCADE`, so the database
   * removes it in the statement that deletes the message or its thread, inside the same write.
   */
  async deleteByThread(): Promise<void> {}
  async deleteByMessages(): Promise<void> {}

  /**
   * The backend this schema's vectors use (read from the column type), and where pgvector lives.
   * `real[]` can still turn into pgvector until a space is recorded; `settled` says one is.
   */
  async backend(settled = false): Promise<VectorBackend> {
    if (this.known) return this.known;
    const [row] = await this.db.query<{ type: string; ext: string | null }>(
      `SELECT format_type(atttypid, atttypmod) AS type, ${EXTENSION_SCHEMA} AS ext FROM pg_attribute
        WHERE attrelid = $1::regclass AND attname = 'embedding'`,
      [this.n.vectors],
    );
    const backend: VectorBackend = row?.type.includes('vector') ? 'pgvector' : 'real[]';
    this.ext = row?.ext ? quoteIdent(row.ext) : undefined;
    if (backend === 'pgvector' || settled) this.known = backend;
    return backend;
  }

  async getSpace(): Promise<core.EmbeddingSpace | null> {
    const [space] = await this.db.query(`SELECT embedder AS id, dimensions FROM ${this.n.vectorSpace}`);
    return (space as core.EmbeddingSpace) ?? null;
  }

  /**
   * Records the space under an advisory lock; the first one turns the column into `vector(n)` when
   * pgvector is there or can be created (see `installVector`).
   */
  async claimSpace(space: core.EmbeddingSpace): Promise<core.EmbeddingSpace> {
    await this.db.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `engram-vectors:${this.n.vectors}`,
      ]);
      const inserted = await client.query(
        `INSERT INTO ${this.n.vectorSpace} (id, embedder, dimensions) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING`,
        [space.id, space.dimensions],
      );
      if (inserted.rowCount !== 1 || this.want === 'real[]') return;
      const ext = await installVector(client, this.n.schema);
      if (ext === null) return;
      const type = `${quoteIdent(ext)}.vector(${space.dimensions})`;
      await client.query(
        `ALTER TABLE ${this.n.vectors} ALTER COLUMN embedding TYPE ${type} USING embedding::${type}`,
      );
    });
    const backend = await this.backend();
    if (this.want === 'pgvector' && backend !== 'pgvector') {
      throw new MemoryError(
        'UNSUPPORTED',
        "pg: vectors.backend 'pgvector' was asked for, but the extension cannot be created here (or this schema's vectors are already stored as real[])",
        { adapter: 'pg' },
      );
    }
    if (backend === 'pgvector' && this.hnsw) {
      const { m, efConstruction } = this.hnsw;
      await this.db.query(
        `CREATE INDEX IF NOT EXISTS ${quoteIdent(`${this.n.prefix}message_vectors_hnsw`)} ON ${this.n.vectors}
          USING hnsw (embedding ${this.ext}.vector_cosine_ops) WITH (m = ${m}, ef_construction = ${efConstruction})`,
      );
    }
    return (await this.getSpace()) as core.EmbeddingSpace;
  }

  async upsertVectors(space: core.EmbeddingSpace, rows: core.MessageVector[]): Promise<void> {
    // In id order, so concurrent writers lock rows in the same order; absent messages join nothing.
    const sorted = [...rows].sort((a, b) => compareIds(a.messageId, b.messageId));
    const values: unknown[] = [space.id];
    const tuples = sorted.map((v) => {
      const at = values.push(v.messageId, v.hash, vectorText(v.vector));
      return `($${at - 2}::text, $${at - 1}::text, $${at}::real[])`;
    });
    // With the message's place, read under a share lock: a move waits for this statement, or this
    // statement reads the moved row (its trigger then finds no vector yet to move).
    await this.db.query(
      `INSERT INTO ${this.n.vectors} AS o (message_id, space, hash, embedding, resource_id, thread_id, created_at)
        SELECT m.id, $1, x.hash, x.embedding, m.resource_id, m.thread_id, m.created_at
        FROM (VALUES ${tuples.join(', ')}) AS x(id, hash, embedding) JOIN ${this.n.messages} m ON m.id = x.id
        ORDER BY m.id FOR SHARE OF m
        ON CONFLICT (message_id, space) DO UPDATE SET hash = EXCLUDED.hash, embedding = EXCLUDED.embedding,
          resource_id = EXCLUDED.resource_id, thread_id = EXCLUDED.thread_id, created_at = EXCLUDED.created_at`,
      values,
    );
  }

  getVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.StoredVector[]> {
    const text = `SELECT message_id AS "messageId", hash FROM ${this.n.vectors} WHERE space = $1 AND message_id = ANY($2)`;
    return this.db.query(text, [space.id, ids]);
  }

  async readVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.MessageVector[]> {
    const rows = await this.db.query<{ messageId: string; hash: string; embedding: number[] }>(
      `SELECT message_id AS "messageId", hash, embedding::real[] AS embedding
        FROM ${this.n.vectors} WHERE space = $1 AND message_id = ANY($2)`,
      [space.id, ids],
    );
    return rows.map((r) => ({
      messageId: r.messageId,
      hash: r.hash,
      vector: Float32Array.from(r.embedding),
    }));
  }

  async deleteVectors(space: core.EmbeddingSpace, ids: string[]): Promise<void> {
    await this.db.query(`DELETE FROM ${this.n.vectors} WHERE space = $1 AND message_id = ANY($2)`, [
      space.id,
      ids,
    ]);
  }

  /** An exact scan, or with HNSW the index's nearest candidates of the scope (`indexed`). */
  async searchVectors(args: core.VectorSearch): Promise<core.VectorHit[]> {
    // Core checked that a space is recorded: the column type is settled.
    const pgvector = (await this.backend(true)) === 'pgvector';
    const round = async (candidates: number | null) => ({
      ranked: await this.scan(args, pgvector, candidates),
    });
    const { ranked } =
      pgvector && this.hnsw ? await this.indexed(args.topK, this.hnsw, round) : await round(null);
    return ranked.map(hitOf);
  }

  /**
   * The HNSW index's nearest candidates of the scope, re-ranked exactly. They come in exact distance
   * order, so the best `topK` of `2 × topK` candidates are those of more: only when the `topK`-th
   * hit ties with the last candidate (the tie may go on past them) are `max(efSearch, 2 × topK)`
   * read, and when it still does, or fewer than `topK` come back (the scope has fewer, or the scan
   * hit `hnsw.max_scan_tuples`), the exact scan answers. `run` reads the hits of one round: the
   * `candidates` nearest in the exact order, or (`null`) the exact scan's best `topK`.
   */
  private async indexed<R extends { ranked: Scanned[] }>(
    topK: number,
    hnsw: Hnsw,
    run: (candidates: number | null) => Promise<R>,
  ): Promise<R> {
    const few = topK * 2;
    for (const candidates of new Set([few, Math.max(hnsw.efSearch, few)])) {
      const round = await run(candidates);
      const { ranked } = round;
      const kth = ranked[topK - 1];
      if (!kth) break;
      if (ranked.length < candidates || kth.distance !== ranked[candidates - 1]?.distance) {
        return { ...round, ranked: ranked.slice(0, topK) };
      }
    }
    return run(null);
  }

  /**
   * The scope's hits in the exact order (score, newest `createdAt`, id): the best `topK` (`candidates`
   * null), or all of the HNSW index's `candidates` nearest. A zero vector scores 0, never `NaN`.
   */
  private scan(args: core.VectorSearch, pgvector: boolean, candidates: number | null): Promise<Scanned[]> {
    const values: unknown[] = [];
    const ranked = this.ranking(args, pgvector, values);
    const text = this.nearest(ranked, args.topK, candidates, values);
    // Named for the exact scan, as the recall statement (see `windowedRound`).
    if (candidates === null) return this.db.query<Scanned>(text, values, true);
    return this.db.query<Scanned>(`${text} ${ranked.order}`, values);
  }

  /**
   * The query of one round: the exact scan's best `topK` in order (`candidates` null), or the HNSW
   * index's `candidates` nearest of the scope, unordered.
   */
  private nearest(ranked: Ranking, topK: number, candidates: number | null, values: unknown[]): string {
    const { select, distance } = ranked;
    if (candidates === null) return ranked.exact(topK);
    // The index's settings for this statement only, in the statement itself: `set_config(…, true)`
    // lasts to the end of the transaction, here the statement's own, so there is no BEGIN, SET
    // LOCAL or COMMIT to send (through PgBouncer's transaction pooling too). The scan reads them
    // when it starts: it is LATERAL to the row that sets them and filtered on it, so it runs
    // after. The inner ORDER BY must be the distance alone for pgvector to use the index.
    const efSearch = Math.min(1000, Math.max((this.hnsw as Hnsw).efSearch, candidates));
    return `SELECT r.* FROM (SELECT set_config('hnsw.ef_search', '${efSearch}', true) AS ef,
        set_config('hnsw.iterative_scan', 'strict_order', true) AS iterative) settings
      CROSS JOIN LATERAL (
        ${select} AND settings.ef IS NOT NULL AND settings.iterative IS NOT NULL
        ORDER BY ${distance} LIMIT $${values.push(candidates)}
      ) r`;
  }

  /**
   * The SQL of a search of the scope (see `Ranking`), its parameters pushed onto `values`, leaving
   * out `excludeIds` and the ids of the SQL array `without.ids` (at most `without.most`) too.
   * pgvector rows carry `distance` (what its index ranks by), `real[]` rows `score`. The query
   * vector is a parameter of the column's type: a generic plan casts nothing per row.
   */
  private ranking(
    args: core.VectorSearch,
    pgvector: boolean,
    values: unknown[],
    without?: { ids: string; most: number },
  ): Ranking {
    const type = pgvector ? `${this.ext}.vector` : 'real[]';
    const query = `$${values.push(vectorText(args.vector, pgvector))}::${type}`;
    const distance = `v.embedding OPERATOR(${this.ext}.<=>) ${query}`;
    const space = `$${values.push(args.space.id)}`;
    const scope = [`v.space = ${space}`, `v.resource_id = $${values.push(args.resourceId)}`];
    if (args.threadId !== undefined) scope.push(`v.thread_id = $${values.push(args.threadId)}`);
    const excludeIds = args.excludeIds ?? [];
    const omitted = [`$${values.push(excludeIds)}::text[]`, ...(without ? [without.ids] : [])];
    const kept = (id: string) => omitted.map((ids) => `NOT (${id} = ANY(${ids}))`).join(' AND ');
    const ties = '"createdAt" DESC, "messageId"';
    // pgvector orders by the distance (what its index ranks by), real[] by the cosine itself.
    const [name, column, order] = pgvector
      ? [
          'distance',
          `coalesce(nullif(${distance}, 'NaN'::float8), 1) AS distance`,
          `ORDER BY distance, ${ties}`,
        ]
      : [
          'score',
          `coalesce((SELECT sum(a::float8 * b::float8) / nullif(sqrt(sum(a::float8 * a::float8) * sum(b::float8 * b::float8)), 0)
             FROM unnest(v.embedding, ${query}) AS t(a, b)), 0) AS score`,
          `ORDER BY score DESC, ${ties}`,
        ];
    // The vectors carry their message's place (kept by the move trigger): no message row is read.
    const select = `SELECT v.message_id AS "messageId", v.thread_id AS "threadId", v.created_at AS "createdAt", v.hash, ${column}
      FROM ${this.n.vectors} v WHERE ${[...scope, kept('v.message_id')].join(' AND ')}`;
    // The exact scan ranks narrow rows of the scope alone, then drops the left-out ids from the best
    // `limit` plus as many as there may be left-out ids (rounded up to a power of two, so the
    // statement's text repeats), then reads each hit's thread and hash by its key (a lateral
    // lookup, as `messageById`): the scan tests no id against an array (evaluated per row) and
    // sorts no wide rows.
    const exact = (limit: number) => {
      const most = count(limit) + excludeIds.length + count(without?.most ?? 0);
      return `SELECT h."messageId", v.thread_id AS "threadId", h."createdAt", v.hash, h.${name}
      FROM (SELECT v.message_id AS "messageId", v.created_at AS "createdAt", ${column}
        FROM ${this.n.vectors} v WHERE ${scope.join(' AND ')}
        ${order} LIMIT ${2 ** Math.ceil(Math.log2(most))}) h
      CROSS JOIN LATERAL (SELECT thread_id, hash FROM ${this.n.vectors}
        WHERE message_id = h."messageId" AND space = ${space} OFFSET 0) v
      WHERE ${kept('h."messageId"')} ${order} LIMIT ${limit}`;
    };
    return { select, order, distance, exact };
  }

  /**
   * `searchWithWindows`: the history (`history`), the hits without it and their windows in one
   * statement a round (with HNSW, the rounds of `indexed`).
   */
  private async windowed(args: core.WindowedSearch & { excludeIds: string[] }): Promise<core.WindowedHits> {
    const pgvector = (await this.backend(true)) === 'pgvector';
    const round = (candidates: number | null) => this.windowedRound(args, pgvector, candidates);
    const { ranked, windows, history } =
      pgvector && this.hnsw ? await this.indexed(args.topK, this.hnsw, round) : await round(null);
    const found: core.WindowedHits = { hits: ranked.map(hitOf), windows };
    return args.history ? { ...found, history } : found;
  }

  /**
   * One round of `windowed`, its rows told apart by `kind`: `h` a history id (`n` its place, newest
   * first), `v` a hit (`n` its place in the exact order, `rank` its distance or score), `w` a
   * message of the windows of the best `topK` hits.
   */
  private async windowedRound(
    args: core.WindowedSearch & { excludeIds: string[] },
    pgvector: boolean,
    candidates: number | null,
  ): Promise<{ ranked: Scanned[]; windows: core.Message[]; history: string[] }> {
    const { history } = args;
    const values: unknown[] = [];
    const scope = `$${values.push(args.resourceId)}`;
    const recent = history
      ? `SELECT id, row_number() OVER (ORDER BY created_at DESC, id DESC)::float8 AS n FROM (
          SELECT id, created_at FROM ${this.n.messages}
          WHERE thread_id = $${values.push(history.threadId)} AND ${filterOnly('resource_id', scope)}
          ORDER BY created_at DESC, id DESC LIMIT ${count(history.last)}) s`
      : 'SELECT NULL::text AS id, NULL::float8 AS n WHERE false';
    const ranked = this.ranking(args, pgvector, values, {
      ids: 'ARRAY(SELECT id FROM recent)',
      most: history?.last ?? 0,
    });
    const text = `WITH recent AS MATERIALIZED (${recent}),
      hits AS MATERIALIZED (
        SELECT r.*, row_number() OVER (${ranked.order})::float8 AS n
        FROM (${this.nearest(ranked, args.topK, candidates, values)}) r
      ),
      targets AS (
        SELECT t.thread_id, t.created_at, t.id, ${count(args.before)} AS before,
          ${count(args.after)} AS after
        FROM hits ${messageById(this.n, 'hits."messageId"')}
        WHERE hits.n <= ${count(args.topK)} AND t.resource_id = ${scope}
      )
      SELECT 'h' AS kind, id, NULL::text AS "threadId", NULL::text AS "resourceId", NULL::text AS role,
        NULL::jsonb AS content, NULL::text AS type, NULL::timestamptz AS "createdAt", NULL::text AS hash,
        NULL::float8 AS rank, n
      FROM recent
      UNION ALL SELECT 'v', "messageId", "threadId", NULL, NULL, NULL, NULL, "createdAt", hash,
        ${pgvector ? 'distance' : 'score'}, n
      FROM hits
      UNION ALL SELECT 'w', x.id, x."threadId", x."resourceId", x.role, x.content, x.type, x."createdAt", NULL, NULL, NULL
        FROM ${windowsOf(this.n, scope)}`;
    type Row = Omit<core.Message, 'threadId'> & {
      kind: string;
      threadId: string;
      hash: string;
      rank: number;
      n: number;
    };
    // Named for the exact scan, whose plan suits any scope; an HNSW round's depends on its size.
    const rows = await this.db.query<Row>(text, values, candidates === null);
    // A UNION ALL keeps no order: the hits and the history are put back in theirs by `n`.
    const of = (kind: string) => rows.filter((r) => r.kind === kind).sort((a, b) => a.n - b.n);
    return {
      ranked: of('v').map(({ id, threadId, createdAt, hash, rank }) => ({
        messageId: id,
        threadId,
        createdAt,
        hash,
        ...(pgvector ? { distance: rank } : { score: rank }),
      })),
      windows: of('w').map(({ kind, hash, rank, n, ...m }) => m as core.Message),
      history: of('h').map((r) => r.id),
    };
  }
}

/** A hit as returned: pgvector's distance made a score. */
function hitOf({ distance, score, ...hit }: Scanned): core.VectorHit {
  return { ...hit, score: distance === undefined ? (score as number) : 1 - distance };
}

/** The store's `vectors`: core's validation in front of `PostgresVectorDriver`, and `backend()`. */
export class PostgresVectors extends ValidatedVectors {
  constructor(
    private readonly vectors: PostgresVectorDriver,
    private readonly runs: <T>(operation: string, fn: () => Promise<T>) => Promise<T>,
  ) {
    super('pg', vectors, runs);
  }

  /** Whether this schema's vectors are stored with pgvector or as `real[]` (see `vectors.backend`). */
  backend(): Promise<VectorBackend> {
    return this.runs('backend', () => this.vectors.backend());
  }
}
