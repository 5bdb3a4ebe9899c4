import { MemoryError } from '../errors.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import { requireDomain } from '../storage/domains.ts';
import type { EmbeddingModelLike } from './embedder.ts';
import { defaultFusion, RecallEngine, type RecallMode, type ResolvedSemanticRecall } from './engine.ts';

/**
 * The recall engine of a `Memory`, its mode chosen and checked at construction: an explicit
 * mode needs what it names (`INVALID_ARGUMENT` without the embedder it needs, `UNSUPPORTED` on a
 * storage without the domain); without one, `'hybrid'` when there is an embedder and the storage
 * has vectors and a keyword index, `'vector'` with an embedder and vectors only, `'keyword'`
 * without an embedder. Without a fusion, hybrid mode fuses as `defaultFusion(embedder)`.
 */
export function recallEngine(
  storage: MemoryStorage,
  embedder: EmbeddingModelLike | undefined,
  config: ResolvedSemanticRecall,
): RecallEngine {
  const mode: RecallMode =
    config.mode ?? (embedder ? (storage.vectors && storage.keywords ? 'hybrid' : 'vector') : 'keyword');
  if (mode !== 'keyword' && !embedder) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `options.semanticRecall mode '${mode}' needs an embedder: new Memory({ storage, embedder, options }), or mode 'keyword'`,
    );
  }
  const vectors = mode === 'keyword' ? undefined : requireDomain(storage, 'vectors');
  if (mode === 'keyword' && !config.mode && !storage.keywords) {
    throw new MemoryError(
      'UNSUPPORTED',
      `options.semanticRecall without an embedder ranks by keywords, and ${JSON.stringify(storage.name)} has no keyword index: give an embedder (new Memory({ storage, embedder, options })) or use a store with one (one created without keywords: false)`,
      { adapter: storage.name, details: { domain: 'keywords' } },
    );
  }
  const keywords = mode === 'vector' ? undefined : requireDomain(storage, 'keywords');
  const fusion = config.fusion ?? defaultFusion(embedder);
  return new RecallEngine(storage, { vectors, keywords, embedder }, { ...config, mode, fusion });
}
