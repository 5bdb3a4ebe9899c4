import * as core from '@engram/core/adapter';
import { errorCode } from './errors.ts';
import { fromTimestampText } from './mapping.ts';
import type { Session } from './session.ts';
import { chunks, type Dialect } from './sql.ts';
import * as vsql from './vector-sql.ts';

/** What the store lends its vectors: the migrated dialect, sessions and transactions. */
export interface OracleVectorAccess {
  dialect(): Promise<Dialect>;
  read<T>(fn: (session: Session) => Promise<T>): Promise<T>;
  write<T>(fn: (session: Session) => Promise<T>): Promise<T>;
}

/**
 * Vectors in `<prefix>message_vectors` (`VECTOR(*, FLOAT32)`, one row per message and space),
 * next to the messages. The foreign key cascades from the messages, so `deleteMessages` and
 * `deleteThread` remove the vectors in the same statement, inside their transaction.
 *
 * Search is exact: the scope is in the `WHERE` clause and rows are ranked by
 * `VECTOR_DISTANCE(…, COSINE)` with `FETCH FIRST :top_k ROWS ONLY`, so a scoped query returns
 * `topK` hits whenever that many exist. Needs Oracle 23ai; older servers get `UNSUPPORTED`.
 */
export class OracleVectors extends core.VectorStoreBase {
  readonly search = 'exact' as const;

  constructor(
    private readonly access: OracleVectorAccess,
    run: core.VectorRunner,
  ) {
    super('oracle', run);
  }

  /** The dialect, or `UNSUPPORTED` when the server has no `VECTOR` type. */
  private async dialect(): Promise<Dialect> {
    const d = await this.access.dialect();
    if (!d.vectors) {
      throw new core.MemoryError(
        'UNSUPPORTED',
        'oracle: semantic recall needs Oracle Database 23ai or later (the VECTOR type); this server is older',
        { adapter: 'oracle' },
      );
    }
    return d;
  }

  protected async doGetSpace(): Promise<core.EmbeddingSpace | null> {
    const d = await this.dialect();
    const rows = await this.access.read((s) =>
      s.rows<{ EMBEDDER: string; DIMENSIONS: number }>(vsql.selectVectorSpace(d)),
    );
    const row = rows[0];
    return row ? { id: row.EMBEDDER, dimensions: Number(row.DIMENSIONS) } : null;
  }

  protected async doClaimSpace(space: core.EmbeddingSpace): Promise<core.EmbeddingSpace> {
    const d = await this.dialect();
    await this.access.write((s) => s.upsert(vsql.claimVectorSpace(d, space.id, space.dimensions)));
    return (await this.doGetSpace()) as core.EmbeddingSpace;
  }

  protected async doUpsertVectors(space: core.EmbeddingSpace, vectors: core.MessageVector[]): Promise<void> {
    const d = await this.dialect();
    await this.access.write(async (s) => {
      for (const v of vectors) {
        try {
          await s.upsert(vsql.upsertVector(d, space.id, v.messageId, v.hash, v.vector));
        } catch (error) {
          // The message was deleted by a session that committed after this MERGE read it:
          // Oracle rolls back just this statement, and the vector is skipped like any absent one.
          if (errorCode(error) !== 'ORA-02291') throw error;
        }
      }
    });
  }

  protected async doGetVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.StoredVector[]> {
    const d = await this.dialect();
    return this.access.read(async (s) => {
      const out: core.StoredVector[] = [];
      for (const part of chunks(ids)) {
        const rows = await s.rows<{ MESSAGE_ID: string; HASH: string }>(
          vsql.selectVectors(d, space.id, part),
        );
        for (const row of rows) out.push({ messageId: row.MESSAGE_ID, hash: row.HASH });
      }
      return out;
    });
  }

  protected async doDeleteVectors(space: core.EmbeddingSpace, ids: string[]): Promise<void> {
    const d = await this.dialect();
    await this.access.write(async (s) => {
      for (const part of chunks(ids)) await s.run(vsql.deleteVectors(d, space.id, part));
    });
  }

  protected async doSearchVectors(args: core.VectorSearch): Promise<core.VectorHit[]> {
    const d = await this.dialect();
    const statement = vsql.searchVectors(d, {
      space: args.space.id,
      vector: args.vector,
      topK: args.topK,
      resourceId: args.resourceId,
      threadId: args.threadId,
      excludeIds: args.excludeIds ?? [],
    });
    const rows = await this.access.read((s) => s.rows<vsql.VectorHitRow>(statement));
    return rows.map((row) => ({
      messageId: row.ID,
      threadId: row.THREAD_ID,
      hash: row.HASH,
      score: Number(row.SCORE),
      createdAt: fromTimestampText(row.CREATED_AT_TEXT),
    }));
  }
}
