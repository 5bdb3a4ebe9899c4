import { MemoryError } from '../errors.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import type { KeywordHit, KeywordStore } from '../storage/keywords.ts';
import type { Message } from '../storage/records.ts';
import { MAX_TOP_K } from '../storage/vector-store.ts';
import { compareHits, type EmbeddingSpace, type VectorHit, type VectorStore } from '../storage/vectors.ts';
import { threadPages } from '../storage/walk.ts';
import { throwIfAborted } from './abort.ts';
import {
  describeSpace,
  type EmbeddingModelLike,
  type EmbeddingUsage,
  embedAll,
  embedderId,
  normalize,
} from './embedder.ts';
import { messageText, textHash } from './text.ts';

/** How recall ranks: by vectors (an embedder), by keywords (BM25), or both fused. */
export type RecallMode = 'vector' | 'keyword' | 'hybrid';

/** Minimum scores: cosine similarity for vector hits, BM25 for keyword hits. */
export interface RecallThreshold {
  readonly vector?: number;
  readonly keyword?: number;
}

/**
 * How hybrid recall fuses its two lists (weighted reciprocal-rank fusion): a hit at rank r (from
 * 1) of a list adds `weight / (rankConstant + r)` for that list.
 */
export interface RecallFusion {
  /** Damps the lead of the first ranks: larger evens them out. Default 60 (`RRF_K`). */
  readonly rankConstant: number;
  /** Weight of each list. Default 1 each. */
  readonly weights: { readonly vector: number; readonly keyword: number };
}

/** Semantic recall settings with every default filled in. */
export interface ResolvedSemanticRecall {
  /** `undefined`: chosen by `Memory` from the embedder and the store's domains. */
  readonly mode?: RecallMode;
  readonly threshold: RecallThreshold;
  /** Hybrid mode's fusion of the two lists; `undefined`: chosen by `Memory` from the embedder (`defaultFusion`). */
  readonly fusion?: RecallFusion;
  readonly topK: number;
  /** Messages added before each hit, from the hit's own thread. */
  readonly before: number;
  /** Messages added after each hit, from the hit's own thread. */
  readonly after: number;
  readonly scope: 'resource' | 'thread';
}

/** One recalled message with its neighbours. */
export interface RecallHit {
  /** The message that matched. */
  message: Message;
  /** The thread it belongs to (compare with the current thread to label it). */
  threadId: string;
  /**
   * The ranking score of the mode: cosine similarity in [-1, 1] (vector), BM25 (keyword), or
   * the (weighted) reciprocal-rank-fusion score (hybrid).
   */
  score: number;
  /** The hit's score in each list that found it (a hybrid hit may be in one list only). */
  scores: { vector?: number; keyword?: number };
  /**
   * The hit and up to `before`/`after` neighbours of its own thread, oldest first, without
   * messages of the recent history or of an earlier (better-scored) hit's window.
   */
  window: Message[];
}

/** What a semantic recall returns. */
export interface RecallResult {
  /** Best first. */
  hits: RecallHit[];
  /** Tokens spent embedding the query (0 when it came from the cache). */
  usage: EmbeddingUsage;
}

/** Progress of `reindex`. */
export interface ReindexProgress {
  /** Messages looked at so far. */
  scanned: number;
  /** Messages embedded so far (new or changed text). */
  embedded: number;
  /** Threads done so far, of `threads`. */
  threadsDone: number;
  threads: number;
}

/** Queries whose vectors are kept, so a repeated query (each agent step) is embedded once. */
const QUERY_CACHE = 32;
/** Reciprocal-rank fusion's constant: a hit at rank r (from 1) of a list adds 1 / (RRF_K + r). */
export const RRF_K = 60;

/** Plain reciprocal-rank fusion: `RRF_K`, both lists weighted 1. Hybrid recall's default fusion. */
export const DEFAULT_FUSION: RecallFusion = Object.freeze({
  rankConstant: RRF_K,
  weights: Object.freeze({ vector: 1, keyword: 1 }),
});

/**
 * Hybrid recall's default fusion with core's lexical embedder (`createLexicalEmbedder`): its
 * vectors know only the words the keyword list already ranks by BM25, so the keyword list leads
 * (weight 3, rank constant 1) and the vector list orders what it ties and adds what it misses.
 * On the retrieval bench it keeps keyword recall's R@1, where plain RRF lost 12 points to
 * distractors ranked high by both lists.
 */
export const LEXICAL_FUSION: RecallFusion = Object.freeze({
  rankConstant: 1,
  weights: Object.freeze({ vector: 1, keyword: 3 }),
});

/** The fusion hybrid recall uses when none is given: `LEXICAL_FUSION` with core's lexical embedder, else `DEFAULT_FUSION`. */
export function defaultFusion(embedder: EmbeddingModelLike | undefined): RecallFusion {
  const lexical = embedder?.provider === 'engram' && embedder.modelId.startsWith('lexical-');
  return lexical ? LEXICAL_FUSION : DEFAULT_FUSION;
}

/** What recall searches with: the store's domains and the embedder the mode needs. */
export interface RecallSources {
  vectors?: VectorStore;
  keywords?: KeywordStore;
  embedder?: EmbeddingModelLike;
}

interface Ranked {
  message: Message;
  score: number;
  scores: { vector?: number; keyword?: number };
}

/** A hit to show: its id and thread as found, and (vector hits) the hash of the text it was made from. */
interface Candidate {
  messageId: string;
  threadId: string;
  hash?: string;
  score: number;
  scores: { vector?: number; keyword?: number };
}

/**
 * Core's half of recall. Vector mode: embeds message text (outside any storage transaction, in
 * batches, once per distinct text), stores the vectors through the store's primitives, and
 * ranks by cosine similarity; one space per store (a different embedder or dimension is refused,
 * naming both spaces). Keyword mode: the store's keyword index ranks by BM25 (the store keeps it
 * with the messages; nothing to embed). Hybrid: both lists, fused by reciprocal rank. Every mode
 * turns hits into windows the same way.
 */
/** What `RecallEngine.recall` searches for: a turn's query in a thread of a resource, and the overrides. */
export interface RecallQuery {
  threadId: string;
  resourceId: string;
  query: string;
  topK?: number;
  scope?: 'resource' | 'thread';
  before?: number;
  after?: number;
  signal?: AbortSignal;
}

/**
 * The history still to read, to leave out of recall: the newest `last` messages of `threadId`,
 * read with the search where the store can (`historyInSearch`, vector mode), else by `read` beside
 * it; `read` also answers when that read found none (it checks the thread).
 */
export interface HistoryToRead {
  history: { threadId: string; last: number };
  read: () => Promise<ReadonlySet<string>>;
}

export class RecallEngine {
  private space: EmbeddingSpace | null = null;
  private readonly queries = new Map<string, Float32Array>();
  /** Every embedding call of this engine, summed. */
  readonly usage: EmbeddingUsage = { tokens: 0, calls: 0 };
  private readonly vectorStore: VectorStore | undefined;
  private readonly keywords: KeywordStore | undefined;
  private readonly model: EmbeddingModelLike | undefined;

  constructor(
    private readonly storage: MemoryStorage,
    sources: RecallSources,
    /** The settings, `mode` resolved. */
    readonly config: ResolvedSemanticRecall & { readonly mode: RecallMode; readonly fusion: RecallFusion },
  ) {
    const usesVectors = config.mode !== 'keyword';
    this.vectorStore = usesVectors ? sources.vectors : undefined;
    this.model = usesVectors ? sources.embedder : undefined;
    this.keywords = config.mode === 'vector' ? undefined : sources.keywords;
  }

  /** Whether saves are embedded (vector and hybrid modes). */
  get embeds(): boolean {
    return this.model !== undefined && this.vectorStore !== undefined;
  }

  private get vectors(): VectorStore {
    if (!this.vectorStore)
      throw new MemoryError('UNSUPPORTED', `${this.storage.name}: recall mode has no vectors`);
    return this.vectorStore;
  }

  private get embedder(): EmbeddingModelLike {
    if (!this.model) throw new MemoryError('UNSUPPORTED', 'recall mode has no embedder');
    return this.model;
  }

  /**
   * Embeds the messages whose text has no vector yet, or changed since, and stores their
   * vectors; removes the vectors of messages that no longer have text. Returns how many were
   * embedded. Throws when embedding fails (the messages keep no or a stale vector, which
   * `reindex` and stale-hit filtering handle).
   */
  async index(messages: Message[], signal?: AbortSignal): Promise<number> {
    const items: { id: string; text: string; hash: string }[] = [];
    const textless: string[] = [];
    for (const m of messages) {
      const text = messageText(m);
      if (text === '') textless.push(m.id);
      else items.push({ id: m.id, text, hash: textHash(text) });
    }
    let space = await this.resolveSpace();
    const stored = space
      ? await this.vectors.getVectors(
          space,
          messages.map((m) => m.id),
        )
      : [];
    const storedHash = new Map(stored.map((v) => [v.messageId, v.hash]));
    const todo = items.filter((item) => storedHash.get(item.id) !== item.hash);
    const drop = textless.filter((id) => storedHash.has(id));
    if (todo.length > 0) {
      const raw = await embedAll(
        this.embedder,
        todo.map((item) => item.text),
        this.usage,
        signal,
      );
      const claimed = await this.claim(lengthOf(raw, this.embedder));
      space = claimed;
      const rows = todo.flatMap((item, i) => {
        const vector = normalize(raw[i] as number[]);
        if (!vector) {
          if (storedHash.has(item.id)) drop.push(item.id);
          return [];
        }
        return [{ messageId: item.id, hash: item.hash, vector }];
      });
      await this.vectors.upsertVectors(claimed, rows);
    }
    if (space && drop.length > 0) await this.vectors.deleteVectors(space, drop);
    return todo.length;
  }

  /**
   * Gives copies of messages (`copies`: source id → copy id, same text) the sources' stored
   * vectors, where the store reads vectors back, so indexing the copies embeds only what had none.
   * Returns how many vectors were copied.
   */
  async copyVectors(copies: ReadonlyMap<string, string>): Promise<number> {
    const read = this.vectorStore?.readVectors?.bind(this.vectorStore);
    if (!this.embeds || !read || copies.size === 0) return 0;
    const space = await this.resolveSpace();
    if (!space) return 0;
    const rows = (await read(space, [...copies.keys()])).flatMap((v) => {
      const messageId = copies.get(v.messageId);
      return messageId === undefined ? [] : [{ ...v, messageId }];
    });
    if (rows.length > 0) await this.vectors.upsertVectors(space, rows);
    return rows.length;
  }

  /**
   * Recalls messages similar to `query` for a turn in `threadId` of `resourceId`. The searches
   * (both lists at once in hybrid mode) run beside the read of the history when `exclude` is
   * still pending. With one list, its hits' messages come with their windows in one read; in
   * hybrid mode both lists' messages are read in one call before fusion, then the windows.
   */
  async recall(
    args: RecallQuery & {
      /**
       * Ids already in the model's context (the recent history); never returned. Either known, or
       * still being read (`pending`, at most `atMost` ids): the searches then ask for `atMost` more
       * hits and drop the history's after, so they need not wait for the read. Or the history still
       * to read (`HistoryToRead`).
       */
      exclude:
        | ReadonlySet<string>
        | { pending: Promise<ReadonlySet<string>>; atMost: number }
        | HistoryToRead;
    },
  ): Promise<RecallResult> {
    const given = args.exclude;
    if ('history' in given) {
      // A longer history than a search takes hits is read the usual way (which also bounds it).
      if (this.config.mode === 'vector' && this.vectors.historyInSearch && given.history.last <= MAX_TOP_K) {
        return this.recallWithHistory({ ...args, exclude: given });
      }
      return this.recall({ ...args, exclude: { pending: given.read(), atMost: given.history.last } });
    }
    const usage: EmbeddingUsage = { tokens: 0, calls: 0 };
    const topK = args.topK ?? this.config.topK;
    const scope = args.scope ?? this.config.scope;
    const before = args.before ?? this.config.before;
    const after = args.after ?? this.config.after;
    const mode = this.config.mode;
    // Hybrid looks deeper into each list, so a hit ranked just below `topK` in both can win.
    const depth = mode === 'hybrid' ? Math.min(MAX_TOP_K, Math.max(20, topK * 4)) : topK;
    let known = 'pending' in given ? undefined : given;
    const pending = 'pending' in given ? given : undefined;
    if (pending && depth + pending.atMost > MAX_TOP_K) known = await pending.pending;
    const asked = known ? depth : depth + (pending?.atMost ?? 0);
    const search = {
      resourceId: args.resourceId,
      threadId: scope === 'thread' ? args.threadId : undefined,
      excludeIds: known ? [...known] : [],
      topK: asked,
    };
    // One list of vectors: its hits' windows may come with the search (`searchWithWindows`).
    const windows = mode === 'vector' ? { before, after } : undefined;
    const [vectorFound, keywordFound, exclude] = await Promise.all([
      mode === 'keyword'
        ? { hits: [], windows: undefined }
        : this.vectorSearch(args.query, search, usage, windows, args.signal),
      mode === 'vector' ? [] : this.keywordSearch(args.query, search),
      known ?? (pending as { pending: Promise<ReadonlySet<string>> }).pending,
    ]);
    const outside = <H extends { messageId: string }>(hits: H[]) =>
      hits.filter((h) => !exclude.has(h.messageId)).slice(0, depth);
    if (mode !== 'hybrid') {
      // One list: its hits are the answer, so their messages come with the windows' read.
      const hits: Candidate[] =
        mode === 'vector'
          ? outside(vectorFound.hits).map((h) => ({ ...h, scores: { vector: h.score } }))
          : outside(keywordFound).map((h) => ({ ...h, scores: { keyword: h.score } }));
      const read = { resourceId: args.resourceId, before, after, exclude, messages: vectorFound.windows };
      return { hits: await this.withWindows(hits, read), usage };
    }
    const [byVector, byKeyword] = await this.withMessages(outside(vectorFound.hits), outside(keywordFound));
    const ranked = fuse(byVector, byKeyword, this.config.fusion)
      .slice(0, topK)
      .map(({ message, score, scores }) => ({
        messageId: message.id,
        threadId: message.threadId,
        score,
        scores,
      }));
    return {
      hits: await this.withWindows(ranked, { resourceId: args.resourceId, before, after, exclude }),
      usage,
    };
  }

  /**
   * Vector-mode recall where the store reads the history with the search (`historyInSearch`): the
   * history, the hits and their windows in one call. When it lists no history (an empty thread,
   * or another resource's), `read` answers, and checks the thread.
   */
  private async recallWithHistory(args: RecallQuery & { exclude: HistoryToRead }): Promise<RecallResult> {
    const usage: EmbeddingUsage = { tokens: 0, calls: 0 };
    const topK = args.topK ?? this.config.topK;
    const before = args.before ?? this.config.before;
    const after = args.after ?? this.config.after;
    const search = {
      resourceId: args.resourceId,
      threadId: (args.scope ?? this.config.scope) === 'thread' ? args.threadId : undefined,
      excludeIds: [],
      topK,
    };
    const windows = { before, after, history: args.exclude.history };
    const found = await this.vectorSearch(args.query, search, usage, windows, args.signal);
    const exclude = found.history?.length ? new Set(found.history) : await args.exclude.read();
    const hits: Candidate[] = found.hits
      .filter((h) => !exclude.has(h.messageId))
      .map((h) => ({ ...h, scores: { vector: h.score } }));
    const read = { resourceId: args.resourceId, before, after, exclude, messages: found.windows };
    return { hits: await this.withWindows(hits, read), usage };
  }

  /**
   * Vector hits above the threshold, best first (their text not checked yet); with `windows`, and
   * where the store reads them with the search (`searchWithWindows`), every hit's window too, and
   * with `windows.history` the history's ids (`historyInSearch`).
   */
  private async vectorSearch(
    query: string,
    search: { resourceId: string; threadId?: string; excludeIds: string[]; topK: number },
    usage: EmbeddingUsage,
    windows: { before: number; after: number; history?: { threadId: string; last: number } } | undefined,
    signal?: AbortSignal,
  ): Promise<{ hits: VectorHit[]; windows?: Message[]; history?: string[] }> {
    const vector = await this.queryVector(query, usage, signal);
    if (!vector) return { hits: [] };
    const space = await this.claim(vector.length);
    const windowed = this.vectors.searchWithWindows;
    const found =
      windows && windowed
        ? await windowed({ space, vector, ...search, ...windows })
        : { hits: await this.vectors.searchVectors({ space, vector, ...search }) };
    const min = this.config.threshold.vector;
    return min === undefined ? found : { ...found, hits: found.hits.filter((h) => h.score >= min) };
  }

  /** Keyword hits above the threshold, best first. */
  private async keywordSearch(
    query: string,
    search: { resourceId: string; threadId?: string; excludeIds: string[]; topK: number },
  ): Promise<KeywordHit[]> {
    if (!this.keywords) return [];
    const found = await this.keywords.search({ query, ...search });
    const min = this.config.threshold.keyword;
    return min === undefined ? found : found.filter((h) => h.score >= min);
  }

  /**
   * The hits of both lists with their messages, read in one call: a vector hit only while its
   * message exists and still has the text the vector was made from, a keyword hit while its
   * message exists.
   */
  private async withMessages(byVector: VectorHit[], byKeyword: KeywordHit[]): Promise<[Ranked[], Ranked[]]> {
    const ids = [...new Set([...byVector, ...byKeyword].map((h) => h.messageId))];
    if (ids.length === 0) return [[], []];
    const messages = await this.storage.listMessagesById({ ids });
    const byId = new Map(messages.map((m) => [m.id, m]));
    const vector: Ranked[] = [];
    for (const hit of byVector) {
      const message = byId.get(hit.messageId);
      if (message && textHash(messageText(message)) === hit.hash)
        vector.push({ message, score: hit.score, scores: { vector: hit.score } });
    }
    const keyword = byKeyword.flatMap((hit): Ranked[] => {
      const message = byId.get(hit.messageId);
      return message ? [{ message, score: hit.score, scores: { keyword: hit.score } }] : [];
    });
    return [vector, keyword];
  }

  /**
   * Embeds every message (of `resourceId`, or of the whole store) whose vector is missing or
   * stale, thread by thread. Returns the final progress.
   */
  async reindex(args: {
    resourceId?: string;
    onProgress?: (progress: ReindexProgress) => void;
    signal?: AbortSignal;
  }): Promise<ReindexProgress> {
    const threadIds: string[] = [];
    for await (const threads of threadPages(this.storage, args.resourceId, 100))
      threadIds.push(...threads.map((t) => t.id));
    const progress: ReindexProgress = { scanned: 0, embedded: 0, threadsDone: 0, threads: threadIds.length };
    for (const threadId of threadIds) {
      throwIfAborted(args.signal);
      const { messages } = await this.storage.listMessages({ threadId, perPage: false });
      for (let at = 0; at < messages.length; at += 200) {
        const batch = messages.slice(at, at + 200);
        progress.embedded += await this.index(batch, args.signal);
        progress.scanned += batch.length;
      }
      progress.threadsDone++;
      args.onProgress?.({ ...progress });
    }
    return progress;
  }

  /** The query's vector (cached per text); `null` when it has no text to embed. */
  private async queryVector(query: string, usage: EmbeddingUsage, signal?: AbortSignal) {
    if (query.trim() === '') return null;
    const cached = this.queries.get(query);
    if (cached) return cached;
    const before = { ...this.usage };
    const [raw] = await embedAll(this.embedder, [query], this.usage, signal);
    usage.tokens += this.usage.tokens - before.tokens;
    usage.calls += this.usage.calls - before.calls;
    const vector = normalize(raw ?? []);
    if (!vector) return null;
    this.queries.set(query, vector);
    if (this.queries.size > QUERY_CACHE) this.queries.delete(this.queries.keys().next().value as string);
    return vector;
  }

  /**
   * The store's space for this embedder. With `dimensions` (a vector in hand), records it when
   * none is; without, returns the recorded one or `null`. `INVALID_ARGUMENT` naming both spaces
   * when the recorded space is another embedder's or has another dimension.
   */
  private async resolveSpace(dimensions?: number): Promise<EmbeddingSpace | null> {
    const id = embedderId(this.embedder);
    if (!this.space) {
      const recorded = await this.vectors.getSpace();
      if (recorded) this.check(recorded, { id, dimensions: dimensions ?? recorded.dimensions });
      else if (dimensions !== undefined) {
        this.check(await this.vectors.claimSpace({ id, dimensions }), { id, dimensions });
      }
      this.space = recorded ?? (dimensions === undefined ? null : { id, dimensions });
      if (!this.space) return null;
    }
    this.check(this.space, { id, dimensions: dimensions ?? this.space.dimensions });
    return this.space;
  }

  /** `resolveSpace` with a vector's length in hand: never `null`. */
  private async claim(dimensions: number): Promise<EmbeddingSpace> {
    const space = await this.resolveSpace(dimensions);
    if (!space) throw new MemoryError('STORAGE', `${this.storage.name}: no embedding space recorded`);
    return space;
  }

  private check(recorded: EmbeddingSpace, ours: EmbeddingSpace): void {
    if (recorded.id === ours.id && recorded.dimensions === ours.dimensions) return;
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${this.storage.name}: this store's vectors were made by ${describeSpace(recorded)}, but the embedder is ${describeSpace(ours)}; vectors of different spaces cannot be compared. Use the same embedder, or another store (database) for the new one`,
      { adapter: this.storage.name },
    );
  }

  /**
   * Each hit with its message and up to `before`/`after` neighbours of its own thread, in one
   * read whatever the threads (a listing's windows come from each target's own thread) unless
   * `messages` came with the search, without messages of `exclude` (the history) or of an earlier
   * hit's window. A hit whose message is gone (or left the resource), or (`hash`) whose text
   * changed since its vector was made, is dropped.
   */
  private async withWindows(
    hits: Candidate[],
    read: {
      resourceId: string;
      before: number;
      after: number;
      exclude: ReadonlySet<string>;
      /** The hits' windows, oldest first, when the search returned them. */
      messages?: Message[];
    },
  ): Promise<RecallHit[]> {
    const { before, after, exclude } = read;
    const first = hits[0];
    if (!first) return [];
    const messages =
      read.messages ??
      (
        await this.storage.listMessages({
          threadId: first.threadId,
          resourceId: read.resourceId,
          perPage: 0,
          include: hits.map((h) => ({
            id: h.messageId,
            withPreviousMessages: before,
            withNextMessages: after,
          })),
        })
      ).messages;
    const byThread = new Map<string, Message[]>();
    for (const m of messages) {
      const list = byThread.get(m.threadId);
      if (list) list.push(m);
      else byThread.set(m.threadId, [m]);
    }
    const shown = new Set(exclude);
    const out: RecallHit[] = [];
    for (const { messageId, hash, score, scores } of hits) {
      if (shown.has(messageId)) continue;
      const message = messages.find((m) => m.id === messageId);
      if (!message || (hash !== undefined && textHash(messageText(message)) !== hash)) continue;
      const list = byThread.get(message.threadId) ?? [];
      const at = list.indexOf(message);
      const window = list.slice(Math.max(0, at - before), at + after + 1).filter((m) => !shown.has(m.id));
      for (const m of window) shown.add(m.id);
      out.push({ message, threadId: message.threadId, score, scores: { ...scores }, window });
    }
    return out;
  }
}

/**
 * Weighted reciprocal-rank fusion: each message scores Σ weight / (rankConstant + rank) over the
 * lists that found it (rank from 1), keeping its score in each list. Ties: newer first, then id
 * (as hits are ordered).
 */
export function fuse(byVector: Ranked[], byKeyword: Ranked[], fusion: RecallFusion): Ranked[] {
  const fused = new Map<string, Ranked>();
  const add = (list: Ranked[], weight: number) =>
    list.forEach((hit, i) => {
      const entry = fused.get(hit.message.id) ?? { message: hit.message, score: 0, scores: {} };
      entry.score += weight / (fusion.rankConstant + i + 1);
      Object.assign(entry.scores, hit.scores);
      fused.set(hit.message.id, entry);
    });
  add(byVector, fusion.weights.vector);
  add(byKeyword, fusion.weights.keyword);
  return [...fused.values()].sort((a, b) =>
    compareHits(
      { score: a.score, createdAt: a.message.createdAt, messageId: a.message.id },
      { score: b.score, createdAt: b.message.createdAt, messageId: b.message.id },
    ),
  );
}

function lengthOf(raw: number[][], embedder: EmbeddingModelLike): number {
  const n = raw[0]?.length ?? 0;
  if (n === 0 || raw.some((v) => !Array.isArray(v) || v.length !== n)) {
    throw new MemoryError(
      'VALIDATION',
      `embedder ${embedderId(embedder)} returned vectors of different or zero lengths`,
    );
  }
  return n;
}
