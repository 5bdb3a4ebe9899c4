import {
  type AgentMessage,
  type EmbeddingSpace,
  type EmbeddingUsage,
  formatRecall,
  latestUserText,
  type Memory,
  MemoryError,
  type Message,
  RECALL_SOURCE,
  SemanticRecall,
  type Thread,
} from '@engram/core';

/** Longest query the inspector sends to the embedder (characters). */
export const MAX_QUERY = 10_000;

/**
 * Semantic recall as configured for the inspected memory. `configured` is true when the
 * `Memory` was built with an `embedder` and `options.semanticRecall` (core then guarantees a
 * store with vectors); `settings` are its resolved defaults.
 */
export interface RecallStatus {
  configured: boolean;
  /** Why recall is unavailable; `''` when configured. */
  reason: string;
  settings?: RecallSettings;
}

/** The recall settings the agent uses (or a query's overrides of them). */
export interface RecallSettings {
  topK: number;
  /** Messages before and after each hit, from the hit's own thread. */
  before: number;
  after: number;
  scope: 'resource' | 'thread';
}

/** A query from the page: the text and optional overrides of the configured settings. */
export interface RecallRequest {
  query: string;
  topK?: number;
  scope?: 'resource' | 'thread';
  messageRange?: number | { before: number; after: number };
}

/** One hit as the page shows it. */
export interface RecallHitView {
  /** The thread the hit comes from, and its title (`null` when it vanished meanwhile). */
  threadId: string;
  threadTitle: string | null;
  /** True when the hit is from the thread the query was made for. */
  current: boolean;
  /** Cosine similarity to the query, in [-1, 1]. */
  score: number;
  message: Message;
  /** The hit with its neighbours from its own thread, oldest first, as the agent gets it. */
  window: Message[];
}

/** What a recall query returns: core's hits for the thread, and the system message they make. */
export interface RecallView {
  threadId: string;
  resourceId: string;
  query: string;
  settings: RecallSettings;
  /** The store's recorded embedding space (`null`: nothing was embedded yet). */
  space: EmbeddingSpace | null;
  /** Best first. */
  hits: RecallHitView[];
  /** The system message the `SemanticRecall` processor adds for these hits (`''` for none). */
  prompt: string;
  /** Tokens spent embedding the query (0 when core had it cached). */
  usage: EmbeddingUsage;
  /** Why there can be no hits, when that is known without searching. */
  note?: string;
}

/**
 * The recall system message of the agent's next step for a thread, as the `SemanticRecall`
 * processor composes it from the thread's recent history (its latest user message is the
 * query). `error` holds core's refusal (for example an embedding-space mismatch).
 */
export type TurnRecall =
  | { query: string; text: string; note?: string }
  | { query: string; error: string; code?: string };

const NOTHING_EMBEDDED =
  'no message of this store has been embedded yet (no embedding space is recorded): save messages through a Memory with semantic recall, or run memory.reindex()';

const REQUEST_KEYS = new Set(['query', 'topK', 'scope', 'messageRange']);

/** The recall status of a memory. */
export function recallStatus(memory: Memory): RecallStatus {
  const config = memory.options.semanticRecall;
  if (!config) {
    return {
      configured: false,
      reason: memory.storage.vectors
        ? 'semantic recall is not configured for this memory (it needs an embedder and options.semanticRecall)'
        : `semantic recall is not configured for this memory (and the ${memory.storage.name} store declares no vectors)`,
    };
  }
  const { topK, before, after, scope } = config;
  return { configured: true, reason: '', settings: { topK, before, after, scope } };
}

/**
 * Recalls for `thread` exactly as the agent layer does: `memory.recall` with the query (core
 * ranks, builds the windows and leaves out the recent history) and `formatRecall` for the
 * system message. `UNSUPPORTED` when recall is not configured, `INVALID_ARGUMENT` for a bad
 * request; core's own errors (a space mismatch) pass through unchanged. Never writes: when the
 * store has no embedding space yet, it answers no hits instead of letting core record one.
 */
export async function recallForThread(memory: Memory, thread: Thread, request: unknown): Promise<RecallView> {
  const status = recallStatus(memory);
  if (!status.configured || !status.settings) throw new MemoryError('UNSUPPORTED', status.reason);
  const args = checkRequest(request);
  const settings = effective(status.settings, args);
  const base = { threadId: thread.id, resourceId: thread.resourceId, query: args.query, settings };
  const space = await memory.storage.vectors!.getSpace();
  if (!space) {
    return { ...base, space, hits: [], prompt: '', usage: { tokens: 0, calls: 0 }, note: NOTHING_EMBEDDED };
  }
  const result = await memory.recall({
    threadId: thread.id,
    resourceId: thread.resourceId,
    query: args.query,
    topK: args.topK,
    scope: args.scope,
    messageRange: args.messageRange,
  });
  const titles = new Map<string, string | null>();
  for (const threadId of new Set(result.hits.map((h) => h.threadId))) {
    const found = await memory.storage.getThreadById({ threadId, resourceId: thread.resourceId });
    titles.set(threadId, found ? found.title : null);
  }
  return {
    ...base,
    space,
    hits: result.hits.map((hit) => ({
      threadId: hit.threadId,
      threadTitle: titles.get(hit.threadId) ?? null,
      current: hit.threadId === thread.id,
      score: hit.score,
      message: hit.message,
      window: hit.window,
    })),
    prompt: formatRecall(result.hits, thread.id),
    usage: result.usage,
  };
}

/**
 * This turn's recall system message for `thread`: the thread's recent history (the memory's
 * `lastMessages`, or `history` when given: the raw tail under observational memory) run
 * through core's `SemanticRecall` processor. `null` when recall is not configured.
 */
export async function turnRecall(
  memory: Memory,
  thread: Thread,
  history?: readonly Message[],
): Promise<TurnRecall | null> {
  if (!memory.options.semanticRecall) return null;
  history ??= await memory.getMessages({ threadId: thread.id, resourceId: thread.resourceId });
  const messages: AgentMessage[] = history.map((m) => ({ role: m.role, content: m.content }));
  const query = latestUserText(messages);
  if (query === '') return { query, text: '', note: 'the thread has no user message to recall for' };
  try {
    if (!(await memory.storage.vectors!.getSpace())) return { query, text: '', note: NOTHING_EMBEDDED };
    const out = await new SemanticRecall(memory).processInput({
      messages,
      requestContext: { threadId: thread.id, resourceId: thread.resourceId },
    });
    const added = out.find((m) => m.role === 'system' && m.source === RECALL_SOURCE);
    const text = typeof added?.content === 'string' ? added.content : '';
    return text === ''
      ? { query, text, note: 'nothing recalled for the latest user message' }
      : { query, text };
  } catch (error) {
    if (error instanceof MemoryError) return { query, error: error.message, code: error.code };
    return { query, error: error instanceof Error ? error.message : String(error) };
  }
}

function checkRequest(request: unknown): RecallRequest {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'the recall request must be an object { query, topK?, scope?, messageRange? }',
    );
  }
  const unknown = Object.keys(request).filter((key) => !REQUEST_KEYS.has(key));
  if (unknown.length > 0) {
    throw new MemoryError('INVALID_ARGUMENT', `unknown recall field ${JSON.stringify(unknown[0])}`);
  }
  const r = request as Record<string, unknown>;
  if (typeof r.query !== 'string' || r.query.trim() === '') {
    throw new MemoryError('INVALID_ARGUMENT', 'query must be a non-empty string');
  }
  if (r.query.length > MAX_QUERY) {
    throw new MemoryError('INVALID_ARGUMENT', `query must be at most ${MAX_QUERY} characters`);
  }
  // topK, scope and messageRange are checked by core (`memory.recall`), with its messages.
  return r as unknown as RecallRequest;
}

function effective(configured: RecallSettings, args: RecallRequest): RecallSettings {
  const range = args.messageRange;
  const ranged =
    typeof range === 'number'
      ? { before: range, after: range }
      : range && typeof range === 'object'
        ? { before: range.before ?? 0, after: range.after ?? 0 }
        : { before: configured.before, after: configured.after };
  return { topK: args.topK ?? configured.topK, scope: args.scope ?? configured.scope, ...ranged };
}
