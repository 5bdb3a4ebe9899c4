import { MemoryError } from '../errors.ts';
import type { EmbeddingModelLike } from './embedder.ts';

/** Options of `createLexicalEmbedder`. */
export interface LexicalEmbedderOptions {
  /** Vector length. Default 256. */
  dimensions?: number;
}

/** What `createLexicalEmbedder` returns: an AI SDK–shaped embedding model. */
export interface LexicalEmbedder extends EmbeddingModelLike {
  readonly specificationVersion: 'v3';
  readonly provider: 'engram';
  readonly modelId: string;
  readonly maxEmbeddingsPerCall: number;
  readonly supportsParallelCalls: true;
  readonly dimensions: number;
  doEmbed(options: { values: string[]; abortSignal?: AbortSignal }): Promise<{
    embeddings: number[][];
    usage: { tokens: number };
    warnings: [];
  }>;
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Lower-cased runs of letters and digits (any script). */
function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function embedOne(text: string, dimensions: number): number[] {
  const v = new Array<number>(dimensions).fill(0);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    v[h % dimensions] = (v[h % dimensions] as number) + (h & 0x80000000 ? -weight : weight);
  };
  for (const word of words(text)) {
    add(`w:${word}`, 1);
    const padded = `^${word}$`;
    for (let i = 0; i + 3 <= padded.length; i++) add(`g:${padded.slice(i, i + 3)}`, 0.5);
  }
  const norm = Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  return norm === 0 ? v : v.map((x) => x / norm);
}

/**
 * A deterministic, offline embedder for tests, examples and demos: each text becomes a vector of
 * hashed words and character trigrams, L2-normalised. It is **lexical, not semantic**: texts that
 * share words (or word fragments) score high, synonyms and paraphrases do not. For real recall
 * pass a provider's embedding model instead, e.g. `openai.embedding('text-embedding-3-small')`.
 * Usage counts one token per word. Text without letters or digits embeds to a zero vector.
 */
export function createLexicalEmbedder(options: LexicalEmbedderOptions = {}): LexicalEmbedder {
  const dimensions = options.dimensions ?? 256;
  if (!Number.isInteger(dimensions) || dimensions < 2 || dimensions > 16_384) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `dimensions must be an integer from 2 to 16384, got ${dimensions}`,
    );
  }
  return {
    specificationVersion: 'v3',
    provider: 'engram',
    modelId: `lexical-${dimensions}`,
    maxEmbeddingsPerCall: 256,
    supportsParallelCalls: true,
    dimensions,
    async doEmbed({ values }) {
      return {
        embeddings: values.map((text) => embedOne(text, dimensions)),
        usage: { tokens: values.reduce((sum, text) => sum + words(text).length, 0) },
        warnings: [],
      };
    },
  };
}
