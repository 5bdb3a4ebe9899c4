import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { createLexicalEmbedder, type EmbeddingModelLike } from '@engram/core';
import { DIMENSIONS } from './recall.ts';
import { benchRetrieval, referenceRankings } from './retrieval.ts';
import { datasetShape, FULL, generateDataset, QUICK } from './retrieval-data.ts';
import { benchKeywordLatency, type LatencyAdapterResult } from './retrieval-latency.ts';
import {
  type LatencyRun,
  latencyMarkdown,
  type RetrievalRun,
  retrievalMarkdown,
} from './retrieval-report.ts';
import type { RecallTarget } from './target.ts';
import { loadTarget } from './targets.ts';
import { createWordVectorEmbedder, loadWordVectors } from './word-vectors.ts';

const machine = () => `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;

/**
 * Opens each adapter's recall target in turn and runs `fn` on it; an adapter that cannot run
 * here, or fails, is recorded with the reason and the others still run.
 */
async function eachAdapter<T>(
  adapters: string[],
  fn: (name: string, opened: RecallTarget) => Promise<T>,
  skipped: (name: string, reason: string) => T,
): Promise<T[]> {
  const out: T[] = [];
  for (const name of adapters) {
    const target = await loadTarget(name);
    const reason = target.unavailable() ?? (target.openRecall ? null : 'no recall target');
    if (reason) {
      console.log(`${name}: skipped — ${reason}`);
      out.push(skipped(name, reason));
      continue;
    }
    const started = performance.now();
    try {
      const opened = await (target.openRecall as NonNullable<typeof target.openRecall>)();
      try {
        out.push(await fn(name, opened));
      } finally {
        await opened.close();
      }
    } catch (error) {
      console.error(error);
      out.push(skipped(name, `failed: ${(error as Error).message}`));
    } finally {
      await target.dispose?.();
    }
    console.log(`${name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  return out;
}

function write(out: string, stamp: string, run: unknown, markdown: string): void {
  mkdirSync(out, { recursive: true });
  writeFileSync(`${out}/${stamp}.json`, `${JSON.stringify(run, null, 2)}\n`);
  writeFileSync(`${out}/${stamp}.md`, markdown);
  console.log(`\n${markdown}`);
}

/**
 * `--retrieval`: recall@1/5/10 of keyword, vector and hybrid recall on the generated
 * conversations (`--quick`: 3 of the 10), next to the BM25 reference. The vector list comes
 * from core's lexical embedder, or with `wordVectors` (a path) from GloVe word vectors. Writes
 * `<date>[-quick]-retrieval[-word-vectors].json` and `.md`.
 */
export async function runRetrieval(
  adapters: string[],
  quick: boolean,
  out: string,
  wordVectors?: string,
): Promise<void> {
  let embedder: EmbeddingModelLike = createLexicalEmbedder({ dimensions: DIMENSIONS });
  if (wordVectors) {
    console.error(`loading word vectors from ${wordVectors}`);
    embedder = createWordVectorEmbedder(loadWordVectors(wordVectors));
  }
  const data = generateDataset(quick ? QUICK : FULL);
  const perConversation = referenceRankings(data, 'conversation');
  const overAll = referenceRankings(data, 'all');
  const date = new Date().toISOString();
  const results = await eachAdapter(
    adapters,
    (name, opened) =>
      benchRetrieval(
        name,
        opened.storage,
        data,
        {
          conversation: perConversation.ranked,
          all: overAll.ranked,
        },
        embedder,
      ),
    (adapter, skipped) => ({ adapter, skipped, modes: {} }),
  );
  const run: RetrievalRun = {
    date,
    machine: machine(),
    quick,
    embedder: wordVectors ? 'word-vectors' : 'lexical',
    dataset: datasetShape(data),
    reference: { conversation: perConversation.scores, all: overAll.scores },
    results,
  };
  const stamp = `${date.slice(0, 10)}${quick ? '-quick' : ''}-retrieval${wordVectors ? '-word-vectors' : ''}`;
  write(out, stamp, run, retrievalMarkdown(run));
}

/**
 * `--retrieval-latency`: keyword search at 1k, 10k and 100k messages (`--quick`: 1k and 10k) in
 * one resource, engram against the backend's own full-text query, and hybrid `memory.recall`. Writes `<date>[-quick]-retrieval-latency.json` and `.md`.
 */
export async function runRetrievalLatency(adapters: string[], quick: boolean, out: string): Promise<void> {
  const settings = {
    sizes: quick ? [1_000, 10_000] : [1_000, 10_000, 100_000],
    iterations: quick ? 40 : 120,
    budgetMs: quick ? 6_000 : 20_000,
  };
  const date = new Date().toISOString();
  const results = await eachAdapter<LatencyAdapterResult>(
    adapters,
    async (name, opened) =>
      benchKeywordLatency(
        name,
        opened.storage,
        opened.rawKeywords,
        { ...settings, cap: await (await loadTarget(name)).fixtureCap?.() },
        opened.settle,
      ),
    (adapter, skipped) => ({ adapter, skipped, rows: [], setup: [] }),
  );
  const run: LatencyRun = { date, machine: machine(), quick, sizes: settings.sizes, results };
  write(out, `${date.slice(0, 10)}${quick ? '-quick' : ''}-retrieval-latency`, run, latencyMarkdown(run));
}
