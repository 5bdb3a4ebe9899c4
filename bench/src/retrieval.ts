import {
  createKeywordAnalyzer,
  type EmbeddingModelLike,
  Memory,
  type MemoryStorage,
  type RecallMode,
  type SemanticRecallOptions,
} from '@engram/core';
import { Bm25Index } from './bm25.ts';
import {
  CATEGORIES,
  type Category,
  type Conversation,
  type Question,
  type RetrievalDataset,
} from './retrieval-data.ts';

/** The cut-offs recall is reported at. */
export const CUTOFFS = [1, 5, 10] as const;
const TOP_K = Math.max(...CUTOFFS);

/** One way of asking: a recall mode, and for hybrid its fusion. */
export interface RecallRun {
  /** The row's label in the results. */
  label: string;
  mode: RecallMode;
  fusion?: SemanticRecallOptions['fusion'];
}

/**
 * What every adapter is asked in: each mode with its defaults (hybrid's fusion is the
 * embedder's default: keyword-led with the lexical embedder, plain RRF with another), and
 * hybrid again with each of the two fusions set.
 */
export const RUNS: readonly RecallRun[] = [
  { label: 'keyword', mode: 'keyword' },
  { label: 'vector', mode: 'vector' },
  { label: 'hybrid', mode: 'hybrid' },
  {
    label: 'hybrid, plain RRF (k 60)',
    mode: 'hybrid',
    fusion: { rankConstant: 60, weights: { keyword: 1, vector: 1 } },
  },
  {
    label: 'hybrid, keyword ×3, k 1',
    mode: 'hybrid',
    fusion: { rankConstant: 1, weights: { keyword: 3, vector: 1 } },
  },
];

/** Mean recall of the evidence turns at each cut-off (0–1). */
export type RecallAt = Record<`r${(typeof CUTOFFS)[number]}`, number>;

/** Recall over every question and per category, and the median time of one query. */
export interface Scores {
  all: RecallAt;
  byCategory: Partial<Record<Category, RecallAt>>;
  /** Median milliseconds of one query (recall call, or the reference's search). */
  medianMs: number;
}

export interface RetrievalAdapterResult {
  adapter: string;
  skipped?: string;
  /** The store's keyword ranking (`KeywordStore.ranking`). */
  ranking?: string;
  /** Seconds to load the dataset through `Memory` (threads, messages, vectors, keyword index). */
  loadSeconds?: number;
  /** Scores per run, by its label (`RUNS`). */
  modes: Record<string, Scores>;
  /**
   * Keyword mode against the reference: the mean share of the reference's top 10 that keyword
   * mode's top 10 holds too (1 = the same sets).
   */
  keywordOverlap?: number;
  /** The reference corpus with the statistics the store's ranking uses. */
  referenceCorpus?: ReferenceCorpus;
}

/** Where the reference takes its statistics from. */
export type ReferenceCorpus = 'conversation' | 'all';

/**
 * Ranks every question of `data` with the in-process BM25 reference over core's analyzed terms
 * of every turn, searching the question's conversation (one resource); statistics from that
 * conversation alone, or from all conversations (as a store holding them all in one index does).
 */
export function referenceRankings(
  data: RetrievalDataset,
  corpus: ReferenceCorpus,
): { ranked: Map<string, string[]>; scores: Scores } {
  const analyzer = createKeywordAnalyzer();
  const ranked = new Map<string, string[]>();
  const times: number[] = [];
  const build = (cs: Conversation[]) => {
    const index = new Bm25Index();
    for (const c of cs)
      for (const s of c.sessions)
        for (const t of s.turns) index.add(t.id, t.createdAt, analyzer.terms(t.text));
    return index;
  };
  const whole = corpus === 'all' ? build(data.conversations) : undefined;
  for (const c of data.conversations) {
    const index = whole ?? build([c]);
    const own = (id: string) => id.startsWith(`${c.id}-`);
    for (const q of c.questions) {
      const started = performance.now();
      ranked.set(q.id, index.search(analyzer.terms(q.text), TOP_K, own));
      times.push(performance.now() - started);
    }
  }
  return { ranked, scores: score(questions(data), ranked, times) };
}

const questions = (data: RetrievalDataset) => data.conversations.flatMap((c) => c.questions);

/** Recall of each question's evidence in its ranking, averaged over all and per category. */
export function score(qs: Question[], ranked: Map<string, string[]>, times: number[]): Scores {
  const at = (subset: Question[]): RecallAt => {
    const out = {} as RecallAt;
    for (const k of CUTOFFS) {
      let sum = 0;
      for (const q of subset) {
        const top = new Set((ranked.get(q.id) ?? []).slice(0, k));
        sum += q.evidence.filter((id) => top.has(id)).length / q.evidence.length;
      }
      out[`r${k}`] = subset.length === 0 ? Number.NaN : sum / subset.length;
    }
    return out;
  };
  const byCategory: Partial<Record<Category, RecallAt>> = {};
  for (const cat of CATEGORIES) {
    const subset = qs.filter((q) => q.category === cat);
    if (subset.length > 0) byCategory[cat] = at(subset);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { all: at(qs), byCategory, medianMs: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN };
}

/**
 * Loads `data` into `storage` through `Memory` (hybrid mode with `embedder`, so every message
 * gets its vector and its keyword terms), then asks every question in each of `RUNS` with
 * `memory.recall` (resource scope, `messageRange: 0`, nothing left out as history (`last: 0`), top 10).
 */
export async function benchRetrieval(
  adapter: string,
  storage: MemoryStorage,
  data: RetrievalDataset,
  /** The reference's rankings with each corpus, to compare keyword mode with the one the store's ranking uses. */
  reference: Record<ReferenceCorpus, Map<string, string[]>>,
  embedder: EmbeddingModelLike,
): Promise<RetrievalAdapterResult> {
  if (!storage.keywords) return { adapter, skipped: 'the store has no keyword index', modes: {} };
  const memoryIn = (mode: RecallMode, fusion?: RecallRun['fusion']) =>
    new Memory({
      storage,
      embedder,
      options: { semanticRecall: { mode, topK: TOP_K, messageRange: 0, ...(fusion ? { fusion } : {}) } },
    });
  const tag = `rt${Date.now().toString(36)}`;
  const resourceOf = (cid: string) => `${tag}-${cid}`;
  const ownId = (id: string) => `${tag}-${id}`;
  const loader = memoryIn('hybrid');
  const started = performance.now();
  for (const c of data.conversations) {
    for (const s of c.sessions) {
      await loader.createThread({ resourceId: resourceOf(c.id), threadId: ownId(s.id), title: s.id });
      await loader.saveMessages({
        messages: s.turns.map((t) => ({
          id: ownId(t.id),
          threadId: ownId(s.id),
          resourceId: resourceOf(c.id),
          role: t.role,
          content: { format: 2, parts: [{ type: 'text', text: t.text }] },
          createdAt: t.createdAt,
        })),
      });
    }
    console.error(`  ${adapter}: loaded ${c.id}`);
  }
  const loadSeconds = (performance.now() - started) / 1000;
  const result: RetrievalAdapterResult = {
    adapter,
    ranking: storage.keywords.ranking,
    loadSeconds,
    modes: {},
  };
  const qs = questions(data);
  for (const run of RUNS) {
    const memory = memoryIn(run.mode, run.fusion);
    const ranked = new Map<string, string[]>();
    const times: number[] = [];
    for (const c of data.conversations) {
      const threadId = ownId((c.sessions.at(-1) as { id: string }).id);
      for (const q of c.questions) {
        const t0 = performance.now();
        const { hits } = await memory.recall({
          threadId,
          resourceId: resourceOf(c.id),
          query: q.text,
          topK: TOP_K,
          scope: 'resource',
          messageRange: 0,
          last: 0,
        });
        times.push(performance.now() - t0);
        ranked.set(
          q.id,
          hits.map((h) => h.message.id.slice(tag.length + 1)),
        );
      }
    }
    result.modes[run.label] = score(qs, ranked, times);
    if (run.mode === 'keyword') {
      // Upstash and MongoDB take BM25 statistics per resource, libSQL and pg over the whole index.
      result.referenceCorpus = storage.keywords.ranking === 'bm25' ? 'all' : 'conversation';
      result.keywordOverlap = overlap(qs, ranked, reference[result.referenceCorpus]);
    }
    console.error(`  ${adapter}: ${run.label} R@5 ${result.modes[run.label]?.all.r5.toFixed(3)}`);
  }
  return result;
}

function overlap(qs: Question[], a: Map<string, string[]>, b: Map<string, string[]>): number {
  let sum = 0;
  for (const q of qs) {
    const x = new Set(a.get(q.id) ?? []);
    const y = b.get(q.id) ?? [];
    const size = Math.max(x.size, y.length);
    sum += size === 0 ? 1 : y.filter((id) => x.has(id)).length / size;
  }
  return sum / qs.length;
}
