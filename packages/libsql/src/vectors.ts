import type * as core from '@engram/core/adapter';
import { VectorStoreBase } from '@engram/core/adapter';
import type { Connection } from './connection.ts';
import { ADAPTER } from './errors.ts';
import { chunks, placeholders, TABLES } from './sql.ts';

const { messages, vectors, vectorSpace } = TABLES;

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
 * hits when that many exist. libSQL's ANN index (`libsql_vector_idx` / `vector_top_k`) is not
 * used: it ranks before it filters, and its index grew a test database about 40×.
 */
export class LibSQLVectors extends VectorStoreBase {
  readonly search = 'exact' as const;

  constructor(
    private readonly connection: Connection,
    run: core.VectorRunner,
  ) {
    super(ADAPTER, run);
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
    return (await this.doGetSpace()) as core.EmbeddingSpace;
  }

  protected async doUpsertVectors(space: core.EmbeddingSpace, rows: core.MessageVector[]): Promise<void> {
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
    const exclude = args.excludeIds ?? [];
    const scope = args.threadId === undefined ? '' : 'AND m.thread_id = ?';
    // One JSON array parameter, however long the list (SQLite caps the number of parameters).
    const notIn = exclude.length ? 'AND m.id NOT IN (SELECT value FROM json_each(?))' : '';
    const result = await this.connection.use((c) =>
      c.execute({
        sql: `SELECT m.id, m.thread_id, m.created_at, v.hash,
                1 - vector_distance_cos(v.embedding, vector32(?)) AS score
              FROM ${messages} m JOIN ${vectors} v ON v.message_id = m.id AND v.space = ?
              WHERE m.resource_id = ? ${scope} ${notIn}
              ORDER BY score DESC, m.created_at DESC, m.id ASC
              LIMIT ?`,
        args: [
          blob(args.vector),
          args.space.id,
          args.resourceId,
          ...(args.threadId === undefined ? [] : [args.threadId]),
          ...(exclude.length ? [JSON.stringify(exclude)] : []),
          args.topK,
        ],
      }),
    );
    return result.rows.map((row) => ({
      messageId: String(row.id),
      threadId: String(row.thread_id),
      hash: String(row.hash),
      score: Number(row.score),
      createdAt: new Date(Number(row.created_at)),
    }));
  }
}
