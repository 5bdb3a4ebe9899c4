import type { EmbeddingModelLike, EmbeddingSpace } from '@engram/core';

/**
 * The one embedding space every recall check uses: a store records one space per database, so
 * checks sharing a database must agree on it.
 */
export const SPACE: EmbeddingSpace = { id: 'engram:conformance', dimensions: 8 };

/** Deterministic pseudo-random numbers (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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
