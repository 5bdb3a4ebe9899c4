import type * as core from '@engram/core/adapter';
import { MemoryError, VectorStoreBase } from '@engram/core/adapter';
import type { Connection } from './connection.ts';
import { ADAPTER } from './errors.ts';
import { chunks, placeholders, TABLES } from './sql.ts';

const { messages, vectors, vectorSpace } = TABLES;
/** The ANN opt-in's copy of the vectors, one per text: `F32_BLOB(n)` with a rowid, as `libsql_vector_idx` needs. */
const annTable = 'engram_vector_ann';
const annIndex = `${annTable}_idx`;

/** Vector options of `LibSQLStore`. */
export interface LibSQLVectorOptions {
  /**
   * Opt-in approximate search through libSQL's ANN index (DiskANN, `libsql_vector_idx`) and
   * `vector_top_k`. Default off: exact scans.
   *
   * The index ranks the whole database's vectors before any scope filter, so a search fetches
   * the `topK × overFetch` nearest (plus the history it must leave out), then keeps those of
   * the resource (or thread), ranked exactly. When the index returns fewer candidates than
   * asked, or fewer than `topK` are in scope, the exact scan answers instead. Results are
   * **approximate** otherwise: a closer vector the index did not return is missed. Every vector
   * write also updates the index (much slower writes), and the index makes the file far larger.
   *
   * With it on, the store keeps a copy of each distinct text's vector in `engram_vector_ann`
   * (`F32_BLOB(n)` of the recorded dimension), maintained by triggers on
   * `engram_message_vectors` in the same statements, and indexed; created, and filled from the
   * stored vectors, at the store's first claim, write or search of vectors. Stores opened
   * without the option keep the triggers working.
   */
  index?: boolean | { overFetch?: number };
}

/** Candidates fetched from the index per hit wanted, by default. */
export const DEFAULT_OVER_FETCH = 10;

function overFetchOf(option: LibSQLVectorOptions['index']): number | null {
  if (option === undefined || option === false) return null;
  if (option === true) return DEFAULT_OVER_FETCH;
  const overFetch = (option as { overFetch?: unknown }).overFetch ?? DEFAULT_OVER_FETCH;
  if (typeof overFetch !== 'number' || !Number.isInteger(overFetch) || overFetch < 1 || overFetch > 1_000) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${ADAPTER}: vectors.index.overFetch must be an integer from 1 to 1000, got ${String(overFetch)}`,
      { adapter: ADAPTER },
    );
  }
  return overFetch;
}

/** A string as an SQL literal (for the trigger conditions, which take no parameters). */
function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A `Float32Array` as the little-endian blob `vector32(?)` reads. */
function blob(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/**
 * Vectors in `engram_message_vectors` (an `F32_BLOB` per message and space), next to the
 * messages. A trigger on `engram_messages` deletes a message's vectors in the same statement
 * that deletes the message (so `deleteMessages` and `deleteThread` need no extra step).
 *
 * Search is an exact scan: the messages of the scope are selected first (by `resource_id`, or
 * `thread_id`), then ranked by `1 - vector_distance_cos`, so a scoped query always gets `topK`
 * hits when that many exist. libSQL's ANN index (`libsql_vector_idx` / `vector_top_k`) only
 * with the `index` option (see `LibSQLVectorOptions`): it ranks before it filters, and its index
 * grew a test database about 40×.
 */
export class LibSQLVectors extends VectorStoreBase {
  readonly search: 'exact' | 'index';
  private readonly overFetch: number | null;
  /** Set once the ANN table, its index and triggers exist (the `index` option only). */
  private annReady?: Promise<void>;

  constructor(
    private readonly connection: Connection,
    run: core.VectorRunner,
    options: LibSQLVectorOptions = {},
  ) {
    super(ADAPTER, run);
    if (options === null || typeof options !== 'object') {
      throw new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: vectors must be an object`, {
        adapter: ADAPTER,
      });
    }
    this.overFetch = overFetchOf(options.index);
    this.search = this.overFetch === null ? 'exact' : 'index';
  }

  protected async doGetSpace(): Promise<core.EmbeddingSpace | null> {
    const result = await this.connection.use((c) =>
      c.execute(`SELECT embedder, dimensions FROM ${vectorSpace} WHERE id = 1`),
    );
    const row = result.rows[0];
    return row ? { id: String(row.embedder), dimensions: Number(row.dimensions) } : null;
  }

  protected async doClaimSpace(space: core.EmbeddingSpace): Promise<core.EmbeddingSpace> {
    await this.connection.use((c) =>
      c.execute({
        sql: `INSERT INTO ${vectorSpace} (id, embedder, dimensions) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`,
        args: [space.id, space.dimensions],
      }),
    );
    const recorded = (await this.doGetSpace()) as core.EmbeddingSpace;
    if (this.overFetch !== null) await this.ensureAnn(recorded);
    return recorded;
  }

  /**
   * Creates the ANN table for `space`, its index and the triggers that keep it in step with
   * `engram_message_vectors`, then copies the vectors stored before; in one write transaction,
   * so a vector written concurrently is copied by a trigger or by the copy. Once per store.
   *
   * One indexed row per distinct text (the vectors' `hash`), not per message: many identical
   * vectors ("ok", "thanks!") break the index's graph, which then returns a fraction of the
   * candidates asked for and misses exact matches. A search joins a text's row back to every
   * message with that text (through `engram_vector_ann_by_hash`) and scores each message's own
   * vector.
   */
  private ensureAnn(space: core.EmbeddingSpace): Promise<void> {
    this.annReady ??= this.connection
      .write(async (tx) => {
        const only = `WHEN NEW.space = ${sqlString(space.id)}`;
        const orphan = (hash: string) =>
          `DELETE FROM ${annTable} WHERE hash = ${hash}
            AND NOT EXISTS (SELECT 1 FROM ${vectors} WHERE space = ${sqlString(space.id)} AND hash = ${hash});`;
        await tx.batch([
          `CREATE TABLE IF NOT EXISTS ${annTable} (
            id INTEGER PRIMARY KEY,
            hash TEXT NOT NULL UNIQUE,
            embedding F32_BLOB(${space.dimensions}) NOT NULL
          )`,
          `CREATE INDEX IF NOT EXISTS ${annIndex} ON ${annTable} (libsql_vector_idx(embedding, 'metric=cosine'))`,
          `CREATE INDEX IF NOT EXISTS ${annTable}_by_hash ON ${vectors} (space, hash)`,
          `CREATE TRIGGER IF NOT EXISTS ${annTable}_on_insert AFTER INSERT ON ${vectors} ${only}
            BEGIN INSERT OR IGNORE INTO ${annTable} (hash, embedding) VALUES (NEW.hash, NEW.embedding); END`,
          `CREATE TRIGGER IF NOT EXISTS ${annTable}_on_update AFTER UPDATE OF hash, embedding ON ${vectors} ${only}
            BEGIN
              INSERT OR IGNORE INTO ${annTable} (hash, embedding) VALUES (NEW.hash, NEW.embedding);
              ${orphan('OLD.hash')}
            END`,
          `CREATE TRIGGER IF NOT EXISTS ${annTable}_on_delete AFTER DELETE ON ${vectors}
            WHEN OLD.space = ${sqlString(space.id)}
            BEGIN ${orphan('OLD.hash')} END`,
          {
            sql: `INSERT OR IGNORE INTO ${annTable} (hash, embedding) SELECT hash, embedding FROM ${vectors} WHERE space = ?`,
            args: [space.id],
          },
        ]);
      })
      .catch((error: unknown) => {
        this.annReady = undefined;
        throw error;
      });
    return this.annReady;
  }

  protected async doUpsertVectors(space: core.EmbeddingSpace, rows: core.MessageVector[]): Promise<void> {
    if (this.overFetch !== null) await this.ensureAnn(space);
    // One write transaction; rows of messages that do not exist (any more) select nothing.
    await this.connection.write(async (tx) => {
      await tx.batch(
        rows.map((v) => ({
          sql: `INSERT INTO ${vectors} (message_id, space, hash, embedding)
                SELECT id, ?, ?, vector32(?) FROM ${messages} WHERE id = ?
                ON CONFLICT (message_id, space) DO UPDATE SET hash = excluded.hash, embedding = excluded.embedding`,
          args: [space.id, v.hash, blob(v.vector), v.messageId],
        })),
      );
    });
  }

  protected async doGetVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.StoredVector[]> {
    const out: core.StoredVector[] = [];
    for (const part of chunks(ids)) {
      const result = await this.connection.use((c) =>
        c.execute({
          sql: `SELECT message_id, hash FROM ${vectors} WHERE space = ? AND message_id IN (${placeholders(part.length)})`,
          args: [space.id, ...part],
        }),
      );
      for (const row of result.rows) out.push({ messageId: String(row.message_id), hash: String(row.hash) });
    }
    return out;
  }

  protected async doDeleteVectors(space: core.EmbeddingSpace, ids: string[]): Promise<void> {
    await this.connection.write(async (tx) => {
      for (const part of chunks(ids)) {
        await tx.execute({
          sql: `DELETE FROM ${vectors} WHERE space = ? AND message_id IN (${placeholders(part.length)})`,
          args: [space.id, ...part],
        });
      }
    });
  }

  protected async doSearchVectors(args: core.VectorSearch): Promise<core.VectorHit[]> {
    if (this.overFetch === null) return (await this.scan(args, null)).hits;
    await this.ensureAnn(args.space);
    const wanted = (args.topK + (args.excludeIds?.length ?? 0)) * this.overFetch;
    const ann = await this.scan(args, wanted);
    // The index ranks the whole database before the scope filter, and its graph returns fewer
    // candidates than asked when it misses vectors (repeated texts): then the exact scan answers.
    if (ann.hits.length >= args.topK && ann.fetched >= wanted) return ann.hits;
    return (await this.scan(args, null)).hits;
  }

  /**
   * The scope's best `topK` by the exact score and the tie rule: over every vector of the scope
   * (`ann` null), or over the index's `ann` nearest of the whole database, with `fetched`, how
   * many the index returned (`0` when none of them is in scope, or without `ann`).
   */
  private async scan(
    args: core.VectorSearch,
    ann: number | null,
  ): Promise<{ hits: core.VectorHit[]; fetched: number }> {
    const exclude = args.excludeIds ?? [];
    const scope = args.threadId === undefined ? '' : 'AND m.thread_id = ?';
    // One JSON array parameter, however long the list (SQLite caps the number of parameters).
    const notIn = exclude.length ? 'AND m.id NOT IN (SELECT value FROM json_each(?))' : '';
    const from =
      ann === null
        ? `FROM ${messages} m JOIN ${vectors} v ON v.message_id = m.id AND v.space = ?`
        : `FROM k JOIN ${annTable} a ON a.id = k.id
            JOIN ${vectors} v ON v.space = ? AND v.hash = a.hash
            JOIN ${messages} m ON m.id = v.message_id`;
    const result = await this.connection.use((c) =>
      c.execute({
        sql: `${ann === null ? '' : `WITH k AS MATERIALIZED (SELECT id FROM vector_top_k('${annIndex}', vector32(?), ?)) `}
              SELECT m.id, m.thread_id, m.created_at, v.hash,
                coalesce(1 - vector_distance_cos(v.embedding, vector32(?)), 0) AS score
                ${ann === null ? '' : ', (SELECT count(*) FROM k) AS fetched'}
              ${from}
              WHERE m.resource_id = ? ${scope} ${notIn}
              ORDER BY score DESC, m.created_at DESC, m.id ASC
              LIMIT ?`,
        args: [
          ...(ann === null ? [] : [blob(args.vector), ann]),
          blob(args.vector),
          args.space.id,
          args.resourceId,
          ...(args.threadId === undefined ? [] : [args.threadId]),
          ...(exclude.length ? [JSON.stringify(exclude)] : []),
          args.topK,
        ],
      }),
    );
    const hits = result.rows.map((row) => ({
      messageId: String(row.id),
      threadId: String(row.thread_id),
      hash: String(row.hash),
      score: Number(row.score),
      createdAt: new Date(Number(row.created_at)),
    }));
    return { hits, fetched: Number(result.rows[0]?.fetched ?? 0) };
  }
}
