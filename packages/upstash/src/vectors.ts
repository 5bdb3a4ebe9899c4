import {
  compareHits,
  type EmbeddingSpace,
  type VectorDriver,
  type VectorSearch,
  type WindowedHits,
  type WindowedSearch,
} from '@engram/core/driver';
import type { UpstashTx } from './driver.ts';
import { type Frame, list, records, text, toMessage } from './mapping.ts';
import type { Call } from './scripts.ts';

/** Vectors one search scans at most, by default (see `UpstashStoreOptions.vectorScanLimit`). */
export const DEFAULT_VECTOR_SCAN_LIMIT = 5_000;

export type UpstashVectors = VectorDriver<UpstashTx>;

/**
 * Vectors next to the messages (`vector-scripts.ts`), dropped in the commit that deletes their
 * message. A search is one Lua script ranking the scope exactly, newest messages first, reading at
 * most `scanLimit` vectors: a larger resource is searched over its newest ones, and the script
 * (which blocks the server while it runs) stays bounded.
 */
export function upstashVectors(call: Call, scanLimit: number): UpstashVectors {
  return {
    search: 'exact',
    getSpace: async () => {
      const reply = await call('space', {});
      return reply === null ? null : toSpace(reply);
    },
    claimSpace: async (space) =>
      toSpace(await call('space', { space: space.id, dimensions: space.dimensions })),
    upsertVectors: async (space, vectors) => {
      // The float32 values as JSON numbers, which the script decodes back to the same values.
      const rows = vectors.map((v) => ({ id: v.messageId, hash: v.hash, values: Array.from(v.vector) }));
      await call('upsertVectors', { space: space.id, dimensions: space.dimensions, vectors: rows });
    },
    getVectors: async (space, ids) =>
      list(await call('getVectors', { space: space.id, ids })).map((pair) => {
        const [messageId, hash] = list(pair).map(text);
        return { messageId: messageId as string, hash: hash as string };
      }),
    readVectors: async (space, ids) =>
      list(await call('readVectors', { space: space.id, dimensions: space.dimensions, ids })).map((row) => {
        const [messageId = '', hash = '', numbers = ''] = list(row).map(text);
        return { messageId, hash, vector: Float32Array.from(numbers.split(' '), Number) };
      }),
    deleteVectors: async (space, ids) => {
      await call('deleteVectors', { space: space.id, ids });
    },
    searchVectors: async (args) => (await search(call, scanLimit, args)).hits,
    // The history and the windows are read by the search's own script, before and after the ranking.
    historyInSearch: true,
    searchWithWindows: (args) => search(call, scanLimit, args),
    deleteByThread: async (tx, threadId) => {
      tx.ops.push({ op: 'dropThreadVectors', id: threadId });
    },
    deleteByMessages: async (tx, ids) => {
      tx.ops.push({ op: 'dropVectors', ids });
    },
  };
}

/** One search script: the hits and, with `before`/`after`, their windows; with `history`, its ids. */
async function search(
  call: Call,
  scanLimit: number,
  {
    space,
    vector,
    excludeIds,
    ...scope
  }: VectorSearch & Partial<Pick<WindowedSearch, 'before' | 'after' | 'history'>> & { excludeIds: string[] },
): Promise<WindowedHits> {
  const dims = { space: space.id, dimensions: space.dimensions };
  const args = { ...scope, ...dims, scanLimit, exclude: excludeIds, query: Array.from(vector) };
  const [ranked, , windows, history] = list(await call('searchVectors', args));
  const hits = list(ranked).map((frame) => {
    const [messageId = '', threadId = '', createdAt, hash = '', score] = list(frame).map(text);
    return { messageId, threadId, createdAt: new Date(Number(createdAt)), hash, score: Number(score) };
  });
  // Re-sorted here: Lua compares ids with the server's collation, core's rule is UTF-8 bytes.
  const found = { hits: hits.sort(compareHits), windows: records(windows, toMessage) };
  return scope.history ? { ...found, history: list(history).map((id) => text(id) as string) } : found;
}

function toSpace(frame: Frame): EmbeddingSpace {
  const [id, dimensions] = list(frame).map(text);
  return { id: id as string, dimensions: Number(dimensions) };
}
