import {
  compareHits,
  cosine,
  type EmbeddingSpace,
  type MessageVector,
  type StoredVector,
  type VectorHit,
  type VectorRunner,
  type VectorSearch,
  VectorStoreBase,
} from '@engram/core/adapter';
import type { FileAccess } from './json-store.ts';

/**
 * `JsonStore`'s vectors: one per message, in the same file as the messages, so the store's
 * deletes drop them in the same write. The file records one embedding space (core refuses any
 * other before calling these primitives); search is an exact scan of the resource's vectors.
 */
export class JsonVectors extends VectorStoreBase {
  readonly search = 'exact' as const;

  constructor(
    adapter: string,
    run: VectorRunner,
    private readonly file: FileAccess,
  ) {
    super(adapter, run);
  }

  protected async doGetSpace(): Promise<EmbeddingSpace | null> {
    return (await this.file.read()).space;
  }

  /** The first claim records its space, under the lock; later claims get the recorded one. */
  protected doClaimSpace(space: EmbeddingSpace): Promise<EmbeddingSpace> {
    return this.file.write((data) => {
      data.space ??= space;
      return data.space;
    });
  }

  /** Vectors of messages that are gone (deleted meanwhile) are skipped. */
  protected doUpsertVectors(_space: EmbeddingSpace, vectors: MessageVector[]): Promise<void> {
    return this.file.write((data) => {
      for (const { messageId, hash, vector } of vectors) {
        if (data.messages.has(messageId)) data.vectors.set(messageId, { messageId, hash, vector });
      }
    });
  }

  protected async doGetVectors(_space: EmbeddingSpace, messageIds: string[]): Promise<StoredVector[]> {
    const { vectors } = await this.file.read();
    return messageIds.flatMap((id) => {
      const stored = vectors.get(id);
      return stored ? [{ messageId: id, hash: stored.hash }] : [];
    });
  }

  protected doDeleteVectors(_space: EmbeddingSpace, messageIds: string[]): Promise<void> {
    return this.file.write((data) => {
      for (const id of messageIds) data.vectors.delete(id);
    });
  }

  /** Scope and exclusions first, then the ranking: `topK` hits whenever that many are in scope. */
  protected async doSearchVectors(args: VectorSearch): Promise<VectorHit[]> {
    const { messages, vectors } = await this.file.read();
    const excluded = new Set(args.excludeIds);
    const hits: VectorHit[] = [];
    for (const { messageId, hash, vector } of vectors.values()) {
      const message = messages.get(messageId);
      if (!message || message.resourceId !== args.resourceId || excluded.has(messageId)) continue;
      if (args.threadId !== undefined && message.threadId !== args.threadId) continue;
      const { threadId, createdAt } = message;
      hits.push({ messageId, threadId, hash, score: cosine(vector, args.vector), createdAt });
    }
    return hits.sort(compareHits).slice(0, args.topK);
  }
}
