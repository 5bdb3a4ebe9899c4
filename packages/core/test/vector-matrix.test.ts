import { describe, expect, it } from 'vitest';
import { compareHits, cosine, type VectorHit, VectorMatrix } from '../src/driver.ts';

/** A small deterministic generator (a linear congruential one is enough for test vectors). */
function numbers(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31 - 0.5;
  };
}

const D = 8;

interface Row {
  messageId: string;
  threadId: string;
  hash: string;
  createdAt: number;
  vector: Float32Array;
}

/** What an exact search must return: every row scored with `cosine`, sorted, cut to `topK`. */
function reference(
  rows: Map<string, Row>,
  query: Float32Array,
  topK: number,
  threadId?: string,
  exclude: string[] = [],
) {
  const hits: VectorHit[] = [...rows.values()]
    .filter((r) => (threadId === undefined || r.threadId === threadId) && !exclude.includes(r.messageId))
    .map((r) => ({
      messageId: r.messageId,
      threadId: r.threadId,
      hash: r.hash,
      score: cosine(r.vector, query),
      createdAt: new Date(r.createdAt),
    }));
  return hits.sort(compareHits).slice(0, topK);
}

describe('VectorMatrix', () => {
  it('ranks as the exact reference (same scores to the bit, the tie rule) through appends and replacements', () => {
    const next = numbers(5);
    const vector = () => Float32Array.from({ length: D }, next);
    const matrix = new VectorMatrix(D);
    const rows = new Map<string, Row>();
    const tie = vector();
    for (let step = 0; step < 400; step++) {
      const replace = rows.size > 0 && next() > 0.2;
      const id = replace ? ([...rows.keys()][Math.floor((next() + 0.5) * rows.size)] ?? 'm0') : `m${step}`;
      const row: Row = {
        messageId: id,
        threadId: next() > 0 ? 't1' : 't2',
        hash: `h${step}`,
        createdAt: Math.floor((next() + 0.5) * 50),
        vector: step % 7 === 0 ? tie : vector(),
      };
      rows.set(id, row);
      matrix.set(row);
      if (step % 10 !== 9) continue;
      for (const query of [vector(), tie]) {
        for (const [topK, threadId, exclude] of [
          [5, undefined, []],
          [3, 't2', []],
          [1_000, undefined, []],
          [4, 't1', [...rows.keys()].slice(0, 3)],
        ] as const) {
          const got = matrix.search({ vector: query, topK, threadId, excludeIds: [...exclude] });
          expect(got).toEqual(reference(rows, query, topK, threadId, [...exclude]));
        }
      }
    }
    expect(matrix.size).toBe(rows.size);
  });

  it('refuses a vector of another length', () => {
    const matrix = new VectorMatrix(D);
    expect(() =>
      matrix.set({ messageId: 'm', threadId: 't', hash: 'h', createdAt: 0, vector: new Float32Array(D + 1) }),
    ).toThrow(/9 numbers in a matrix of 8/);
  });
});
