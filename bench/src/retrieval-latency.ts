import { createLexicalEmbedder, Memory, type MemoryStorage, type Message } from '@engram/core';
import { percentile, time } from './measure.ts';
import { DIMENSIONS } from './recall.ts';
import { FULL, generateDataset } from './retrieval-data.ts';
import type { RawKeywords } from './target.ts';

/** Median and 95th percentile of one side, in milliseconds. */
export interface Latency {
  samples: number;
  median: number;
  p95: number;
}

export interface LatencyRow {
  messages: number;
  engram: Latency;
  raw?: Latency;
  /** `memory.recall` in hybrid mode (keyword and vector lists fused), when the store has vectors. */
  hybrid?: Latency;
  /** Mean hits per query over the dataset's first 20 questions (each side), a check that each searched. */
  meanHits: { engram: number; raw?: number; hybrid?: number };
}

export interface LatencyAdapterResult {
  adapter: string;
  skipped?: string;
  /** The raw query, in words. */
  raw?: string;
  note?: string;
  rows: LatencyRow[];
  setup: { step: string; seconds: number }[];
}

export interface LatencySettings {
  sizes: number[];
  /** The largest size this adapter runs (its fixture cap), and why. */
  cap?: { messages: number; reason: string } | null;
  iterations: number;
  budgetMs: number;
}

const THREADS = 10;
const TOP_K = 10;
const BATCH = 250;

const dataset = generateDataset(FULL);
const TEXTS = dataset.conversations.flatMap((c) => c.sessions.flatMap((s) => s.turns.map((t) => t.text)));
const QUERIES = dataset.conversations.flatMap((c) => c.questions.map((q) => q.text));

function summary(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  return { samples: sorted.length, median: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) };
}

/**
 * Grows one resource to each size (messages saved through `Memory` in hybrid mode with core's
 * lexical embedder, so the keyword index and, where the store has vectors, the vectors are
 * written as in use), then times keyword searches of the dataset's questions: engram's
 * `keywords.search` and the raw full-text query alternately, after 10 untimed rounds, and
 * `memory.recall` in hybrid mode (the query embedded by the lexical embedder, both lists, fusion,
 * the hits' messages; `messageRange: 0`, no history).
 */
export async function benchKeywordLatency(
  adapter: string,
  storage: MemoryStorage,
  raw: RawKeywords | undefined,
  settings: LatencySettings,
  settle?: () => Promise<void>,
): Promise<LatencyAdapterResult> {
  const keywords = storage.keywords;
  if (!keywords) return { adapter, skipped: 'the store has no keyword index', rows: [], setup: [] };
  const result: LatencyAdapterResult = { adapter, raw: raw?.describe, rows: [], setup: [] };
  const hybrid = storage.vectors
    ? new Memory({
        storage,
        embedder: createLexicalEmbedder({ dimensions: DIMENSIONS }),
        options: { lastMessages: 0, semanticRecall: { mode: 'hybrid', topK: TOP_K, messageRange: 0 } },
      })
    : null;
  const tag = `kl${Date.now().toString(36)}`;
  const resourceId = `${tag}-r`;
  const threads = Array.from({ length: THREADS }, (_, i) => `${tag}-t${i}`);
  const now = new Date();
  for (const id of threads)
    await storage.createThread({ id, resourceId, title: id, metadata: {}, createdAt: now, updatedAt: now });
  let written = 0;
  const sizes = settings.sizes.filter((n) => !settings.cap || n <= settings.cap.messages);
  if (sizes.length < settings.sizes.length && settings.cap)
    result.note = `ran ${sizes.join(' and ')} messages, not ${settings.sizes.filter((n) => !sizes.includes(n)).join(', ')}: ${settings.cap.reason}`;
  if (!hybrid)
    result.note = `${result.note ? `${result.note} ` : ''}No hybrid row: the store has no vectors.`;
  for (const size of sizes) {
    const started = performance.now();
    while (written < size) {
      const batch: Message[] = [];
      for (let k = 0; k < BATCH && written < size; k++, written++) {
        batch.push({
          id: `${tag}-m${written}`,
          threadId: threads[written % THREADS] as string,
          resourceId,
          role: written % 2 ? 'assistant' : 'user',
          content: { format: 2, parts: [{ type: 'text', text: TEXTS[written % TEXTS.length] as string }] },
          type: 'text',
          createdAt: new Date(1_767_000_000_000 + written * 1000),
        });
      }
      await (hybrid ? hybrid.saveMessages({ messages: batch }) : storage.saveMessages(batch));
    }
    await settle?.();
    result.setup.push({ step: `grow to ${size} messages`, seconds: (performance.now() - started) / 1000 });
    const engramSide = (i: number) =>
      keywords.search({ query: QUERIES[i % QUERIES.length] as string, topK: TOP_K, resourceId });
    const rawSide = raw
      ? (i: number) =>
          raw.search(resourceId, keywords.analyzer.terms(QUERIES[i % QUERIES.length] as string), TOP_K)
      : undefined;
    const hybridSide = hybrid
      ? async (i: number) =>
          (
            await hybrid.recall({
              threadId: threads[0] as string,
              resourceId,
              query: QUERIES[i % QUERIES.length] as string,
            })
          ).hits
      : undefined;
    const sides: ((i: number) => Promise<unknown[]>)[] = [engramSide, ...(rawSide ? [rawSide] : [])];
    if (hybridSide) sides.push(hybridSide);
    const samples: number[][] = sides.map(() => []);
    const begun = performance.now();
    for (let i = 0; i < 10; i++) for (const side of sides) await side(i + 1_000);
    const timedFrom = performance.now();
    for (let i = 0; i < settings.iterations; i++) {
      if (i >= 6 && performance.now() - timedFrom > settings.budgetMs) break;
      for (let k = 0; k < sides.length; k++) {
        const at = (i + k) % sides.length;
        (samples[at] as number[]).push(await time(() => (sides[at] as (i: number) => Promise<unknown[]>)(i)));
      }
    }
    console.error(
      `  ${adapter}: ${size} messages, ${samples[0]?.length} rounds, ${((performance.now() - begun) / 1000).toFixed(1)} s`,
    );
    const mean = async (side: (i: number) => Promise<unknown[]>) => {
      let n = 0;
      for (let i = 0; i < 20; i++) n += (await side(i)).length;
      return n / 20;
    };
    result.rows.push({
      messages: size,
      meanHits: {
        engram: await mean(engramSide),
        ...(rawSide ? { raw: await mean(rawSide) } : {}),
        ...(hybridSide ? { hybrid: await mean(hybridSide) } : {}),
      },
      engram: summary(samples[0] as number[]),
      ...(rawSide ? { raw: summary(samples[1] as number[]) } : {}),
      ...(hybridSide ? { hybrid: summary(samples.at(-1) as number[]) } : {}),
    });
  }
  return result;
}
