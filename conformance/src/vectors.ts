import type { EmbeddingModelLike, EmbeddingSpace } from '@engram/core';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/**
 * The one embedding space every recall check uses: a store records one space per database, so
 * checks sharing a database must agree on it.
 */
export const SPACE: EmbeddingSpace = { id: 'engram:conformance', dimensions: 8 };

/** Deterministic pseudo-random numbers in [0, 1) from `seed` (pure-rand's xoroshiro128+). */
export function random(seed: number): () => number {
  const generator = xoroshiro128plus(seed);
  return () => uniformFloat64(generator);
}

/** A unit vector of `SPACE.dimensions` from `next`. */
export function unit(next: () => number): Float32Array {
  const v = Float32Array.from({ length: SPACE.dimensions }, () => next() * 2 - 1);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/**
 * An embedder for the checks: text `v:<n>` embeds to the basis-like unit vector number `n`
 * (seeded), `v:<n>*<scale>` to that vector times `scale` in double precision (`v:3*1e200`,
 * `v:3*1e-310`, `v:3*0`: not unit length, as embedders may return), anything else to a seeded
 * vector of its hash. Same space id as `SPACE`.
 */
export function conformanceEmbedder(): EmbeddingModelLike {
  const embed = (text: string) => {
    let seed = 7;
    for (const ch of text) seed = Math.imul(seed ^ (ch.codePointAt(0) ?? 0), 16777619);
    const match = /^v:(\d+)(?:\*(\S+))?/.exec(text);
    const scale = match?.[2] === undefined ? 1 : Number(match[2]);
    return Array.from(unit(random(match ? Number(match[1]) + 1 : seed)), (x) => x * scale);
  };
  return {
    specificationVersion: 'v3',
    provider: 'engram',
    modelId: 'conformance',
    maxEmbeddingsPerCall: 16,
    async doEmbed({ values }) {
      return { embeddings: values.map(embed), usage: { tokens: values.length } };
    },
  };
}
