import type {
  EmbeddingSpace,
  MessageVector,
  StoredVector,
  VectorDriver,
  VectorHit,
  VectorSearch,
} from '@engram/core/driver';
import type { Connection } from './connection.ts';
import { type Executor, exec, type Result } from './embedded.ts';
import { IN_LIST, type Statement, TABLES } from './sql.ts';
import { BUMP_SEQ, eraseRemovals, floats, logRemoval, NEXT_SEQ, VectorCache } from './vector-cache.ts';

const { messages, vectors, vectorSpace } = TABLES;
/** The ANN opt-in's copy of the vectors, one per text: `F32_BLOB(n)` with a rowid, as `libsql_vector_idx` needs. */
const annTable = 'engram_vector_ann';
const annIndex = `${annTable}_idx`;

/** Vector options of `LibSQLStore`. */
export interface LibSQLVectorOptions {
  /**
   * Opt-in approximate search through libSQL's ANN index (`libsql_vector_idx`); default: exact
   * scans. The index ranks the whole database first, so a search fetches the `topK × overFetch`
   * nearest (plus the history it leaves out) and keeps those in scope, ranked exactly; with too
   * few, the exact scan answers. Writes get much slower and the file far larger (see the README).
   */
  index?: boolean | { overFetch?: number };
  /**
   * Exact search ranks copies of each searched resource's vectors kept in this process, checked
   * against the database before every search (the vectors written since are read and merged in;
   * after a delete or a move the resource is read again). `maxBytes` bounds the copies (default
   * 256 MiB; least recently searched resources go first; a larger resource is scanned in SQL);
   * `false` ranks every search in SQL.
   */
  cache?: false | { maxBytes?: number };
}

/** Candidates fetched from the index per hit wanted, by default. */
export const DEFAULT_OVER_FETCH = 10;

/** A string as an SQL literal (for the trigger conditions, which take no parameters). */
const sqlString = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Deletes the vectors of these messages, in `space` or in every space, and logs it. */
const deleteVectors = (ids: string[], space?: EmbeddingSpace): (Statement | string)[] => [
  ...logRemoval({ messageIds: ids }),
  {
    sql: `DELETE FROM ${vectors} WHERE message_id ${IN_LIST}${space ? ' AND space = ?' : ''}`,
    args: [JSON.stringify(ids), ...(space ? [space.id] : [])],
  },
];

/** A `Float32Array` as the little-endian blob `vector32(?)` reads. */
const blob = (vector: Float32Array) => new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);

/**
 * Vectors in `engram_message_vectors`, deleted with their messages by the hooks core calls in the
 * deleting write. Search ranks every vector of the scope's messages (by `resource_id`, or
 * `thread_id`) exactly, in process over a kept copy (`vector-cache.ts`) or in SQL, so a scoped
 * query gets `topK` hits whenever that many exist.
 */
export class LibSQLVectors implements VectorDriver<Executor> {
  readonly search: 'exact' | 'index';
  /** Set once the ANN table, its index and triggers exist (the `index` option only). */
  private annReady?: Promise<void>;

  /** Kept copies of searched resources' vectors; `null` with `cache: false`. */
  private readonly cache: VectorCache | null;

  /**
   * `overFetch`: candidates per hit wanted from the ANN index, `null` without it; `cacheBytes`:
   * the kept copies' bound, `null` for none.
   */
  constructor(
    private readonly connection: Connection,
    private readonly overFetch: number | null,
    cacheBytes: number | null,
  ) {
    this.search = overFetch === null ? 'exact' : 'index';
    this.cache = cacheBytes === null ? null : new VectorCache(connection, cacheBytes);
  }

  private async rows(statement: Statement | string): Promise<Result['rows']> {
    return (await this.connection.use((c) => c.execute(statement))).rows;
  }

  async getSpace(): Promise<EmbeddingSpace | null> {
    const [row] = await this.rows(`SELECT embedder, dimensions FROM ${vectorSpace} WHERE id = 1`);
    return row ? { id: String(row.embedder), dimensions: Number(row.dimensions) } : null;
  }

  /** Records `space` unless one is recorded; returns the recorded one, in one statement. */
  async claimSpace(space: EmbeddingSpace): Promise<EmbeddingSpace> {
    const [row] = await this.rows({
      sql: `INSERT INTO ${vectorSpace} (id, embedder, dimensions) VALUES (1, ?, ?)
            ON CONFLICT (id) DO UPDATE SET id = id RETURNING embedder, dimensions`,
      args: [space.id, space.dimensions],
    });
    const recorded = { id: String(row?.embedder), dimensions: Number(row?.dimensions) };
    if (this.overFetch !== null) await this.ensureAnn(recorded);
    return recorded;
  }

  /**
   * Creates the ANN table for `space`, its index and the triggers that keep it in step with
   * `engram_message_vectors`, and copies the vectors stored before, in one write transaction (a
   * concurrent vector is copied by a trigger or by the copy). Once per store. One indexed row per
   * distinct text (`hash`), not per message: many identical vectors ("ok") break the index's
   * graph. A search joins a text's row back to every message with that text.
   */
  private ensureAnn(space: EmbeddingSpace): Promise<void> {
    if (this.annReady) return this.annReady;
    const inSpace = sqlString(space.id);
    const copy = `INSERT OR IGNORE INTO ${annTable} (hash, embedding)`;
    // Not `OR IGNORE` in a trigger: the statement firing it (the upsert) overrides the policy,
    // so a text already indexed failed the write with a UNIQUE error.
    const add = `INSERT INTO ${annTable} (hash, embedding) SELECT NEW.hash, NEW.embedding
      WHERE NOT EXISTS (SELECT 1 FROM ${annTable} WHERE hash = NEW.hash);`;
    const orphan = `DELETE FROM ${annTable} WHERE hash = OLD.hash
      AND NOT EXISTS (SELECT 1 FROM ${vectors} WHERE space = ${inSpace} AND hash = OLD.hash);`;
    // Renamed when their bodies change: a database keeps the triggers of the version that made them.
    const trigger = (name: string, event: string, row: 'NEW' | 'OLD', body: string) => [
      `DROP TRIGGER IF EXISTS ${annTable}_on_${name}`,
      `CREATE TRIGGER IF NOT EXISTS ${annTable}_${name}_2 AFTER ${event} ON ${vectors}
        WHEN ${row}.space = ${inSpace} BEGIN ${body} END`,
    ];
    this.annReady = this.connection
      .write((tx) =>
        tx.batch([
          `CREATE TABLE IF NOT EXISTS ${annTable} (id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE,
            embedding F32_BLOB(${space.dimensions}) NOT NULL)`,
          `CREATE INDEX IF NOT EXISTS ${annIndex} ON ${annTable} (libsql_vector_idx(embedding, 'metric=cosine'))`,
          `CREATE INDEX IF NOT EXISTS ${annTable}_by_hash ON ${vectors} (space, hash)`,
          ...trigger('insert', 'INSERT', 'NEW', add),
          ...trigger('update', 'UPDATE OF hash, embedding', 'NEW', add + orphan),
          ...trigger('delete', 'DELETE', 'OLD', orphan),
          { sql: `${copy} SELECT hash, embedding FROM ${vectors} WHERE space = ?`, args: [space.id] },
        ]),
      )
      .then(() => undefined);
    // A failed creation is tried again by the next call.
    this.annReady.catch(() => {
      this.annReady = undefined;
    });
    return this.annReady;
  }

  async upsertVectors(space: EmbeddingSpace, rows: MessageVector[]): Promise<void> {
    if (this.overFetch !== null) await this.ensureAnn(space);
    // One write transaction; rows of messages that do not exist (any more) select nothing.
    const upserts = rows.map((v) => ({
      sql: `INSERT INTO ${vectors} (message_id, space, hash, embedding, seq)
            SELECT id, ?, ?, vector32(?), ${NEXT_SEQ} FROM ${messages} WHERE id = ?
            ON CONFLICT (message_id, space) DO UPDATE
              SET hash = excluded.hash, embedding = excluded.embedding, seq = excluded.seq`,
      args: [space.id, v.hash, blob(v.vector), v.messageId],
    }));
    await this.connection.write((tx) => tx.batch([BUMP_SEQ, ...upserts]));
  }

  async getVectors(space: EmbeddingSpace, ids: string[]): Promise<StoredVector[]> {
    const rows = await this.rows({
      sql: `SELECT message_id, hash FROM ${vectors} WHERE space = ? AND message_id ${IN_LIST}`,
      args: [space.id, JSON.stringify(ids)],
    });
    return rows.map((row) => ({ messageId: String(row.message_id), hash: String(row.hash) }));
  }

  async readVectors(space: EmbeddingSpace, ids: string[]): Promise<MessageVector[]> {
    const rows = await this.rows({
      sql: `SELECT message_id, hash, embedding FROM ${vectors} WHERE space = ? AND message_id ${IN_LIST}`,
      args: [space.id, JSON.stringify(ids)],
    });
    return rows.map((row) => ({
      messageId: String(row.message_id),
      hash: String(row.hash),
      vector: floats(row.embedding),
    }));
  }

  deleteVectors(space: EmbeddingSpace, ids: string[]): Promise<void> {
    return this.connection.write((tx) => exec(tx, ...deleteVectors(ids, space)));
  }

  async searchVectors(args: VectorSearch): Promise<VectorHit[]> {
    if (this.overFetch === null) return this.exact(args);
    await this.ensureAnn(args.space);
    const wanted = (args.topK + (args.excludeIds?.length ?? 0)) * this.overFetch;
    const ann = await this.scan(args, wanted);
    // The index ranks the whole database before the scope filter, and its graph returns fewer
    // candidates than asked when it misses vectors (repeated texts): then the exact scan answers.
    if (ann.hits.length >= args.topK && ann.fetched >= wanted) return ann.hits;
    return this.exact(args);
  }

  /** Every vector of the scope ranked exactly: over the kept copy when there is one, else in SQL. */
  private async exact(args: VectorSearch): Promise<VectorHit[]> {
    return (await this.cache?.search(args)) ?? (await this.scan(args, null)).hits;
  }

  deleteByThread(tx: Executor, threadId: string): Promise<void> {
    const sql = `DELETE FROM ${vectors} WHERE message_id IN (SELECT id FROM ${messages} WHERE thread_id = ?)`;
    return exec(tx, ...logRemoval({ threadId }), { sql, args: [threadId] });
  }

  deleteByMessages(tx: Executor, ids: string[]): Promise<void> {
    return exec(tx, ...deleteVectors(ids));
  }

  /** The resource's vectors went with its threads; its entries in the removal log go here. */
  deleteByResource(tx: Executor, resourceId: string): Promise<void> {
    return exec(tx, ...eraseRemovals(resourceId));
  }

  /**
   * The scope's best `topK` by the exact score and the tie rule: over every vector of the scope
   * (`ann` null), or over the index's `ann` nearest of the whole database, with `fetched`, how
   * many the index returned (`0` when none of them is in scope, or without `ann`).
   */
  private async scan(
    args: VectorSearch,
    ann: number | null,
  ): Promise<{ hits: VectorHit[]; fetched: number }> {
    const rows = await this.rows(searchStatement(args, ann));
    const hits = rows.map((row) => ({
      messageId: String(row.id),
      threadId: String(row.thread_id),
      hash: String(row.hash),
      score: Number(row.score),
      createdAt: new Date(Number(row.created_at)),
    }));
    return { hits, fetched: Number(rows[0]?.fetched ?? 0) };
  }
}

/**
 * The statement of an exact search over every vector of the scope (`ann` null), or over the
 * ANN index's `ann` nearest of the whole database (with `fetched`, how many it returned).
 */
export function searchStatement(args: VectorSearch, ann: number | null): Statement {
  const vector = blob(args.vector);
  const thread = args.threadId === undefined ? [] : [args.threadId];
  return {
    sql: `${ann === null ? '' : `WITH k AS MATERIALIZED (SELECT id FROM vector_top_k('${annIndex}', vector32(?), ?))`}
          SELECT m.id, m.thread_id, m.created_at, v.hash,
            coalesce(1 - vector_distance_cos(v.embedding, vector32(?)), 0) AS score
            ${ann === null ? '' : ', (SELECT count(*) FROM k) AS fetched'}
          ${
            ann === null
              ? `FROM ${messages} m JOIN ${vectors} v ON v.message_id = m.id AND v.space = ?`
              : // CROSS JOIN fixes the order: the index's candidates outermost, each joined by
                // key; left to itself the planner may scan every vector of the space instead.
                `FROM k CROSS JOIN ${annTable} a ON a.id = k.id
                 CROSS JOIN ${vectors} v ON v.space = ? AND v.hash = a.hash
                 CROSS JOIN ${messages} m ON m.id = v.message_id`
          }
          WHERE m.resource_id = ? ${thread.length ? 'AND m.thread_id = ?' : ''} AND m.id NOT ${IN_LIST}
          ORDER BY score DESC, m.created_at DESC, m.id ASC LIMIT ?`,
    args: [
      ...(ann === null ? [] : [vector, ann]),
      vector,
      args.space.id,
      args.resourceId,
      ...thread,
      JSON.stringify(args.excludeIds ?? []),
      args.topK,
    ],
  };
}
