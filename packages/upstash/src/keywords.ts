import {
  type BackfillListener,
  BM25,
  compareKeywordHits,
  KEYWORD_BACKFILL,
  KEYWORD_BACKFILL_BATCH,
  type KeywordAnalyzer,
  type KeywordDriver,
  keywordTerms,
  type Message,
  type MessagePatch,
  RESOURCE_BM25,
} from '@engram/core/driver';
import type { UpstashTx } from './driver.ts';
import { fields, list, messageRecord, text, toMessage } from './mapping.ts';
import type { Call, Expectation } from './scripts.ts';

/** The keyword domain of `UpstashDriver`. */
export type UpstashKeywords = KeywordDriver<UpstashTx>;

/**
 * The keyword index in Redis (`keyword-scripts.ts`): an inverted index per resource, written by
 * the same script as the messages (`OP.put` takes each message's terms, analyzed here) and
 * emptied by the commit that deletes them. A search is one script: it reads the postings of the
 * query terms in the resource, scores them with Okapi BM25 (core's `BM25` parameters) and sends
 * back the best `topK` only. Statistics (document count, average length, document frequency) are
 * those of the resource, so another tenant's text never changes a score; the in-memory reference
 * computes them over the whole store, so scores agree with it only for a store of one resource.
 * The script's work grows with the postings of the query terms in the resource.
 */
export function upstashKeywords(call: Call, analyzer: KeywordAnalyzer): UpstashKeywords {
  return {
    analyzer,
    ranking: RESOURCE_BM25,
    search: async ({ terms, resourceId, threadId, topK, excludeIds }) => {
      const args = { terms, resourceId, threadId, topK, exclude: excludeIds, k1: BM25.k1, b: BM25.b };
      const hits = list(await call('searchKeywords', args)).map((frame) => {
        const [messageId = '', hitThread = '', createdAt, score] = list(frame).map(text);
        return {
          messageId,
          threadId: hitThread,
          createdAt: new Date(Number(createdAt)),
          score: Number(score),
        };
      });
      // Re-sorted here: Lua compares ids with the server's collation, core's rule is UTF-8 bytes.
      return hits.sort(compareKeywordHits);
    },
    deleteByThread: async (tx, threadId) => {
      tx.ops.push({ op: 'dropThreadKeywords', id: threadId });
    },
    deleteByMessages: async (tx, ids) => {
      tx.ops.push({ op: 'dropKeywords', ids });
    },
  };
}

/** A message as `OP.put` takes it: the stored fields and its analyzed terms (`[]`: not indexed). */
export function indexedRecord(message: Message, analyzer: KeywordAnalyzer) {
  return { ...messageRecord(message), terms: keywordTerms(message, analyzer) };
}

/**
 * The terms of each patched message whose role or content changes (the others keep theirs), from
 * the stored message read now, and what the update script must find still stored for them to
 * hold (their role and content, or their absence): else it writes nothing and the update runs again.
 */
export async function patchTerms(
  call: Call,
  analyzer: KeywordAnalyzer,
  patches: readonly MessagePatch[],
): Promise<{ terms: Map<string, string[]>; expect: Expectation[] }> {
  const changing = patches.filter((p) => p.role !== undefined || p.content !== undefined);
  const terms = new Map<string, string[]>();
  const expect: Expectation[] = [];
  if (changing.length === 0) return { terms, expect };
  const rows = list(await call('getMessages', { ids: changing.map((p) => p.id) }));
  changing.forEach((patch, i) => {
    const row = rows[i] ?? null;
    const stored = row === null ? null : toMessage(row);
    if (row === null || stored === null) {
      expect.push(['message', patch.id, 'id', false]);
      return;
    }
    const raw = fields(row);
    expect.push(['message', patch.id, 'role', raw.get('role') ?? false]);
    expect.push(['message', patch.id, 'content', raw.get('content') ?? false]);
    const role = patch.role ?? stored.role;
    const content = patch.content === undefined ? stored.content : patch.content;
    terms.set(patch.id, keywordTerms({ role, content }, analyzer));
  });
  return { terms, expect };
}

/**
 * Indexes the messages stored before the index existed (the layout migration queued their
 * threads): a batch of whole threads per round, analyzed here, written by a script that skips a
 * message changed since it was read, reporting after each batch. Resumable: the queue is the
 * cursor, so an interrupted backfill goes on at the next `open()` (its progress then counts what
 * was left).
 */
export async function backfillKeywords(
  call: Call,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
): Promise<void> {
  const total = Number(text(await call('keywordBackfillSize', {})));
  let done = 0;
  for (;;) {
    const [threads, rows] = list(await call('keywordBackfillRead', { limit: KEYWORD_BACKFILL_BATCH })).map(
      list,
    );
    if (!threads || threads.length === 0) break;
    const messages = (rows ?? []).map((row) => {
      const [id, , role, content] = list(row).map(text) as [string, string, Message['role'], string];
      return { id, role, content, terms: keywordTerms({ role, content: JSON.parse(content) }, analyzer) };
    });
    await call('keywordBackfillWrite', { threads, messages });
    done += messages.length;
    progress({ backfill: KEYWORD_BACKFILL, done, total: Math.max(total, done) });
  }
  if (done === 0) progress({ backfill: KEYWORD_BACKFILL, done, total });
}
