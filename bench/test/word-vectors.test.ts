import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createWordVectorEmbedder, loadWordVectors } from '../src/word-vectors.ts';

/** A file in the package's format: most frequent word first; each vector, then its norm and index. */
function vectorsFile(words: Record<string, number[]>): string {
  const names = Object.keys(words);
  const vectors = Object.fromEntries(
    names.map((w, i) => [w, [...(words[w] as number[]), Math.hypot(...(words[w] as number[])), i]]),
  );
  const dir = mkdtempSync(join(tmpdir(), 'word-vectors-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'vectors.json');
  writeFileSync(
    path,
    JSON.stringify({ precision: 4, dimensions: 3, size: names.length, words: names, vectors }),
  );
  return path;
}

const cosine = (a: number[], b: number[]) =>
  a.reduce((s, x, i) => s + x * (b[i] as number), 0) / (Math.hypot(...a) * Math.hypot(...b));

describe('word-vector embedder', () => {
  const path = vectorsFile({
    the: [5, 5, 5],
    cello: [1, 0, 0],
    violin: [0.9, 0.1, 0],
    instrument: [0.8, 0.2, 0.1],
    coffee: [0, 0, 1],
  });

  it('reads the package format: the vector without its norm and index, ranked by position', () => {
    const vectors = loadWordVectors(path);
    expect(vectors.dimensions).toBe(3);
    expect([...(vectors.words.get('cello')?.vector ?? [])]).toEqual([1, 0, 0]);
    expect(vectors.words.get('the')?.rank).toBe(1);
    expect(vectors.words.get('coffee')?.rank).toBe(5);
  });

  it('puts texts of related words close, leaves stop words and unknown tokens out', async () => {
    const embedder = createWordVectorEmbedder(loadWordVectors(path));
    const { embeddings } = await embedder.doEmbed({
      values: ['I play the cello', 'Which instrument, a violin?', 'the coffee BK-789939', 'BK-789939 the'],
    });
    const [cello, violin, coffee, unknown] = embeddings as [number[], number[], number[], number[]];
    expect(cosine(cello, violin)).toBeGreaterThan(0.9);
    expect(cosine(cello, coffee)).toBeLessThan(0.1);
    // `the` is a stop word and the code is unknown: only `coffee` counts.
    expect(cosine(coffee, [0, 0, 1])).toBeCloseTo(1, 6);
    // Nothing known: a constant direction, not a zero vector.
    expect(unknown).toEqual([1, 0, 0]);
  });
});
