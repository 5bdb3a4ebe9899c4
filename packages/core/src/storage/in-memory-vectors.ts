import type { Message } from './records.ts';
import { cosine, type VectorRunner, VectorStoreBase } from './vector-base.ts';
import {
  compareHits,
  type EmbeddingSpace,
  type MessageVector,
  type StoredVector,
  type VectorHit,
  type VectorSearch,
} from './vectors.ts';

interface Row {
  hash: string;
  vector: Float32Array;
}

/**
 * The in-memory store's vectors: an exact scan in double precision, the oracle of the suite's
 * differential recall checks. Rows live next to the store's messages, and the store removes them
 * in the same synchronous step that deletes their messages (`forget`).
 */
export class InMemoryVectors extends VectorStoreBase {
  readonly search = 'exact' as const;
  private space: EmbeddingSpace | null = null;
  /** space id → message id → row. */
  private readonly rows = new Map<string, Map<string, Row>>();

  constructor(
    adapter: string,
    run: VectorRunner,
    private readonly messages: ReadonlyMap<string, Message>,
  ) {
    super(adapter, run);
  }

  /** Drops the vectors of these messages in every space (called by the store's deletes). */
  forget(messageIds: Iterable<string>): void {
    for (const id of messageIds) for (const rows of this.rows.values()) rows.delete(id);
  }

  protected async doGetSpace(): Promise<EmbeddingSpace | null> {
    return this.space ? { ...this.space } : null;
  }

  protected async doClaimSpace(space: EmbeddingSpace): Promise<EmbeddingSpace> {
    this.space ??= { ...space };
    return { ...this.space };
  }

  protected async doUpsertVectors(space: EmbeddingSpace, vectors: MessageVector[]): Promise<void> {
    const rows = this.rowsOf(space);
    for (const v of vectors) {
      if (this.messages.has(v.messageId))
        rows.set(v.messageId, { hash: v.hash, vector: Float32Array.from(v.vector) });
    }
  }

  protected async doGetVectors(space: EmbeddingSpace, messageIds: string[]): Promise<StoredVector[]> {
    const rows = this.rowsOf(space);
    return messageIds.flatMap((id) => {
      const row = rows.get(id);
      return row ? [{ messageId: id, hash: row.hash }] : [];
    });
  }

  protected async doDeleteVectors(space: EmbeddingSpace, messageIds: string[]): Promise<void> {
    const rows = this.rowsOf(space);
    for (const id of messageIds) rows.delete(id);
  }

  protected async doSearchVectors(args: VectorSearch): Promise<VectorHit[]> {
    const excluded = new Set(args.excludeIds);
    const hits: VectorHit[] = [];
    for (const [id, row] of this.rowsOf(args.space)) {
      const m = this.messages.get(id);
      if (!m || m.resourceId !== args.resourceId || excluded.has(id)) continue;
      if (args.threadId !== undefined && m.threadId !== args.threadId) continue;
      hits.push({
        messageId: id,
        threadId: m.threadId,
        hash: row.hash,
        score: cosine(row.vector, args.vector),
        createdAt: new Date(m.createdAt),
      });
    }
    return hits.sort(compareHits).slice(0, args.topK);
  }

  private rowsOf(space: EmbeddingSpace): Map<string, Row> {
    const key = `${space.id}\u0000${space.dimensions}`;
    let rows = this.rows.get(key);
    if (!rows) {
      rows = new Map();
      this.rows.set(key, rows);
    }
    return rows;
  }
}
