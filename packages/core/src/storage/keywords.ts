import { MemoryError } from '../errors.ts';
import { keysOf } from '../known-keys.ts';
import type { KeywordAnalyzer } from '../recall/analyzer.ts';
import { messageText } from '../recall/text.ts';
import { assertArgs } from './arguments.ts';
import type { DomainHooks, DomainRunner } from './domains.ts';
import type { Message } from './records.ts';
import { assertId, assertIds, describe } from './validate.ts';
import { MAX_TOP_K } from './vector-store.ts';
import { compareHits } from './vectors.ts';

/**
 * The keyword index a store may declare (`MemoryStorage.keywords`) so `Memory` can recall by
 * words, without an embedder, or fuse words and vectors (hybrid recall).
 *
 * Rules every implementation keeps:
 * - The index holds the terms of each message with text (`keywordTerms`: user and assistant
 *   text, analyzed by the store's `analyzer`); a message without terms is not in it.
 * - It changes in the same write as the message: a save (new, replaced or moved message), an
 *   update, a delete or a thread delete is visible to the next search at once. Saves and updates
 *   are the driver's own (`messages.put` and its fast paths); deletes go through the cascade
 *   hooks core calls inside the write, as for every domain.
 * - Scope is applied before ranking: a search never returns a message of another resource (or,
 *   with `threadId`, of another thread) and returns `topK` hits whenever that many match.
 * - Ranking is Okapi BM25 over the whole index (`bm25Score`), the score as the backend computes
 *   it; `ranking` says when a backend ranks otherwise.
 */

/** BM25's parameters, as SQLite FTS5's `bm25()` fixes them. */
export const BM25 = Object.freeze({ k1: 1.2, b: 0.75 });

/**
 * The `ranking` of a store scoring `bm25Score` with the statistics of the resource searched
 * instead of the whole index (Upstash, MongoDB): another tenant's text never changes a score.
 */
export const RESOURCE_BM25 = 'bm25 (statistics per resource)';

/** At most this many distinct query terms are searched (the first ones of the query). */
export const MAX_QUERY_TERMS = 64;

/** `search` arguments of the store; ids are validated by core. */
export interface KeywordSearch {
  /** The query text, analyzed with the store's analyzer (no search syntax: every word is a word). */
  query: string;
  /** How many hits at most (1–1000). */
  topK: number;
  /** Only messages of this resource. */
  resourceId: string;
  /** When given, only messages of this thread. */
  threadId?: string;
  /** Messages never to return. */
  excludeIds?: string[];
}

const SEARCH_KEYS = keysOf<KeywordSearch>({
  query: true,
  topK: true,
  resourceId: true,
  threadId: true,
  excludeIds: true,
});

/** What a driver's `search` receives: the distinct query terms instead of the text. */
export interface KeywordQuery {
  /** Distinct, non-empty, at most `MAX_QUERY_TERMS`. */
  terms: string[];
  topK: number;
  resourceId: string;
  threadId?: string;
  excludeIds: string[];
}

/** One keyword hit. */
export interface KeywordHit {
  messageId: string;
  /** The message's current thread. */
  threadId: string;
  /** BM25 score (> 0); higher is better. */
  score: number;
  /** The message's `createdAt`, for the tie rule. */
  createdAt: Date;
}

/** The keyword index of a store, as applications and `Memory` see it. */
export interface KeywordStore {
  /** How text becomes terms in this store (the index and queries alike). */
  readonly analyzer: KeywordAnalyzer;
  /**
   * `'bm25'`: exactly `bm25Score` over the whole index; another value names the backend's ranking
   * (Upstash: `'bm25 (statistics per resource)'`, the same formula with the resource's statistics).
   */
  readonly ranking: string;
  /** The `topK` best matches in scope, ordered by score, then newer first, then id. */
  search(args: KeywordSearch): Promise<KeywordHit[]>;
}

/**
 * The keyword domain of a driver: search on analyzed terms, plus the cascade hooks.
 *
 * With `analyzer` `NO_KEYWORD_INDEX` (a store created with `keywords: false`) the index is kept
 * but not filled: writes take a message's terms out and put none in, the cascade hooks run, and
 * the store offers no search (`store.keywords` is undefined; core never calls `search`). Such a
 * driver records, when it opens, that the index is incomplete, and the next open with an analyzer
 * indexes every stored message again (the adapter's keyword backfill, from the start) before the
 * store serves.
 */
export interface KeywordDriver<Tx = unknown> extends DomainHooks<Tx> {
  readonly analyzer: KeywordAnalyzer;
  readonly ranking: string;
  search(query: KeywordQuery): Promise<KeywordHit[]>;
}

/** The terms a keyword index holds for `message` (`[]`: the message is not indexed). */
export function keywordTerms(
  message: Pick<Message, 'role' | 'content'>,
  analyzer: KeywordAnalyzer,
): string[] {
  const text = messageText(message);
  return text === '' ? [] : analyzer.terms(text);
}

/** Statistics of a whole index for `bm25Score`. */
export interface IndexStats {
  /** Messages in the index. */
  documents: number;
  /** Sum of their term counts. */
  terms: number;
  /** How many messages contain each query term. */
  containing: ReadonlyMap<string, number>;
}

/**
 * Okapi BM25 of one message for `queryTerms` (distinct), as SQLite FTS5's `bm25()` computes it:
 * Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), idf(t) = ln((N − n + 0.5)/(n + 0.5))
 * floored at 1e-6, over the whole index (every resource). `counts`: the message's term counts.
 */
export function bm25Score(
  queryTerms: readonly string[],
  counts: ReadonlyMap<string, number>,
  length: number,
  stats: IndexStats,
): number {
  const { k1, b } = BM25;
  const avg = stats.documents === 0 ? 0 : stats.terms / stats.documents;
  let score = 0;
  for (const term of queryTerms) {
    const tf = counts.get(term) ?? 0;
    if (tf === 0) continue;
    const n = stats.containing.get(term) ?? 0;
    const idf = Math.max(Math.log((stats.documents - n + 0.5) / (n + 0.5)), 1e-6);
    score += (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * length) / avg));
  }
  return score;
}

/**
 * The exact keyword search over `(message, terms)` pairs (every indexed message of the store):
 * BM25 with statistics over all of them, then scope, exclusions and `topK`. The reference
 * stores' search; a driver keeping its index in plain data may use it too.
 */
export function searchIndexed(indexed: Iterable<IndexedMessage>, query: KeywordQuery): KeywordHit[] {
  const rows = [...indexed];
  let terms = 0;
  for (const [, row] of rows) terms += row.length;
  return rankIndexed(rows, query, { documents: rows.length, terms });
}

/** A message of a keyword index and its terms (repeats kept). */
export type IndexedMessage = readonly [
  Pick<Message, 'id' | 'threadId' | 'resourceId' | 'createdAt'>,
  readonly string[],
];

/**
 * `searchIndexed` given the index's document count and summed length (`totals`) and, of its
 * messages, at least every one holding a query term: for a driver that reads only those.
 */
export function rankIndexed(
  rows: readonly IndexedMessage[],
  query: KeywordQuery,
  totals: { documents: number; terms: number },
): KeywordHit[] {
  const containing = new Map<string, number>(query.terms.map((t) => [t, 0]));
  for (const [, row] of rows) {
    for (const t of new Set(row)) {
      const n = containing.get(t);
      if (n !== undefined) containing.set(t, n + 1);
    }
  }
  const stats = { ...totals, containing };
  const excluded = new Set(query.excludeIds);
  const hits: KeywordHit[] = [];
  for (const [m, row] of rows) {
    if (m.resourceId !== query.resourceId || excluded.has(m.id)) continue;
    if (query.threadId !== undefined && m.threadId !== query.threadId) continue;
    if (!query.terms.some((t) => row.includes(t))) continue;
    const score = bm25Score(query.terms, termCounts(row), row.length, stats);
    hits.push({ messageId: m.id, threadId: m.threadId, score, createdAt: new Date(m.createdAt) });
  }
  return hits.sort(compareHits).slice(0, query.topK);
}

/** Each term's count in `terms`. */
export function termCounts(terms: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
  return counts;
}

/** The distinct query terms of `text`, at most `MAX_QUERY_TERMS`. */
export function queryTerms(text: string, analyzer: KeywordAnalyzer): string[] {
  return [...new Set(analyzer.terms(text))].slice(0, MAX_QUERY_TERMS);
}

/** The exact order of keyword hits (the order of vector hits). */
export const compareKeywordHits: (a: KeywordHit, b: KeywordHit) => number = compareHits;

/** The store's `keywords`: validates once, analyzes the query, runs the driver's search. */
export class ValidatedKeywords implements KeywordStore {
  constructor(
    /** The store's name (unused: the driver's errors are named by the runner). */
    _adapter: string,
    private readonly driver: KeywordDriver<unknown>,
    private readonly run: DomainRunner,
  ) {}

  get analyzer(): KeywordAnalyzer {
    return this.driver.analyzer;
  }

  get ranking(): string {
    return this.driver.ranking;
  }

  async search(args: KeywordSearch): Promise<KeywordHit[]> {
    assertArgs(args, 'search', SEARCH_KEYS);
    if (typeof args.query !== 'string') throw invalid(`query must be a string, got ${describe(args.query)}`);
    if (!Number.isInteger(args.topK) || args.topK < 1 || args.topK > MAX_TOP_K) {
      throw invalid(`topK must be an integer from 1 to ${MAX_TOP_K}, got ${describe(args.topK)}`);
    }
    assertId(args.resourceId, 'resourceId');
    if (args.threadId !== undefined) assertId(args.threadId, 'threadId');
    if (args.excludeIds !== undefined) assertIds(args.excludeIds, 'excludeIds');
    const terms = queryTerms(args.query, this.driver.analyzer);
    if (terms.length === 0) return [];
    const query: KeywordQuery = {
      terms,
      topK: args.topK,
      resourceId: args.resourceId,
      threadId: args.threadId,
      excludeIds: [...(args.excludeIds ?? [])],
    };
    const hits = await this.run('searchKeywords', () => this.driver.search(query));
    return hits.map((h) => ({ ...h, createdAt: new Date(h.createdAt) }));
  }
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}
