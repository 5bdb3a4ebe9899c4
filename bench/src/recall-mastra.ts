import type { EmbeddingModelLike, Message, MessageVector } from '@engram/core';
import type { MastraCompositeStore } from '@mastra/core/storage';
import type { MastraVector } from '@mastra/core/vector';
import { Memory } from '@mastra/memory';
import { mastraPeer } from './mastra.ts';
import type { RecallPeer } from './target.ts';

/** Mastra's index name for vectors of `dimensions` (as its `Memory` names it). */
const index = (dimensions: number) => `memory_messages_${dimensions}`;

/**
 * Mastra 1.x semantic recall on the same database: `Memory` from `@mastra/memory` with a vector
 * store (`LibSQLVector` or `PgVector`) and engram's lexical embedder (an AI SDK v3 embedding
 * model, which Mastra's `embedMany` accepts as is), configured like engram's side (last 10
 * messages, top `topK`, ±`range`, resource scope).
 *
 * The fixture is written the way Mastra's `Memory.saveMessages` would store it, minus the
 * embedding: messages through its store's memory domain, and vectors (the same ones engram
 * stores) with `vector.upsert` under Mastra's index name and metadata
 * (`message_id`, `thread_id`, `resource_id`, `role`, `content`, `created_at`).
 */
export async function mastraRecallPeer(options: {
  store: MastraCompositeStore;
  vector: MastraVector;
  embedder: EmbeddingModelLike;
  dimensions: number;
  name: string;
  /** How its vector query runs on this backend, for the report. */
  search: string;
  topK: number;
  range: number;
  cap?: RecallPeer['cap'];
}): Promise<RecallPeer & { close(): Promise<void> }> {
  const { store, vector, embedder, topK, range } = options;
  const indexName = index(options.dimensions);
  const messages = await mastraPeer(store, options.name, '');
  const memory = new Memory({
    storage: store,
    vector,
    embedder: embedder as never,
    options: { lastMessages: 10, semanticRecall: { topK, messageRange: range, scope: 'resource' } },
  });
  // What Memory does before its first upsert or query (table, vector index, metadata indexes).
  // (`metadataIndexes` is passed by Memory but missing from the public parameter type.)
  await vector.createIndex({
    indexName,
    dimension: options.dimensions,
    metadataIndexes: ['thread_id', 'resource_id'],
  } as Parameters<MastraVector['createIndex']>[0]);
  return {
    name: options.name,
    ...(options.cap ? { cap: options.cap } : {}),
    describe: `searchVectors row: \`vector.query({ indexName, queryVector, topK, filter: { resource_id } })\` with the precomputed query vector (${options.search}); memory.recall row: \`memory.recall({ threadId, resourceId, vectorSearchString })\` with the query's embedding in Mastra's own embedding cache (an LRU keyed by the text's hash), so no embedding is timed: thread check, index check, the vector query, the last 10 messages and the hits' windows`,
    createThread: (threadId, resourceId) => messages.createThread(threadId, resourceId),
    async write(batch: Message[], vectors: MessageVector[]) {
      await messages.saveMessages(batch);
      await vector.upsert({
        indexName,
        vectors: vectors.map((v) => Array.from(v.vector)),
        metadata: batch.map((m) => ({
          message_id: m.id,
          thread_id: m.threadId,
          resource_id: m.resourceId,
          role: m.role,
          content: m.content,
          created_at: m.createdAt.toISOString(),
        })),
      });
    },
    async search(resourceId, query, k) {
      const hits = await vector.query({
        indexName,
        queryVector: Array.from(query),
        topK: k,
        filter: { resource_id: resourceId },
      });
      return hits.map((h) => ({ id: String(h.metadata?.message_id) }));
    },
    async recall(threadId, resourceId, query) {
      return memory.recall({ threadId, resourceId, vectorSearchString: query });
    },
    close: () => messages.close(),
  };
}
