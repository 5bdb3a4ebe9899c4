import * as core from '@engram/core/driver';
import type { OracleDriver } from './driver.ts';
import { fromTimestampText, type MessageRow, rowToMessage, TIMESTAMP_FORMAT, textBind } from './mapping.ts';
import type { Session } from './session.ts';
import { chunks, type Dialect, inList, type Statement, selectMessagesByIds } from './sql.ts';

/**
 * The keyword index: postings in `<prefix>message_terms` (one row per message and term, with the
 * term's count in the message) and each indexed message's term count in
 * `<prefix>message_term_counts`. The terms are core's (folded, stemmed, stop words out), so
 * every backend indexes the same terms; both tables cascade from the messages, so deleting
 * messages or a thread needs no hook.
 *
 * Ranking is Okapi BM25 computed in SQL from those statistics (k1 1.2, b 0.75, idf floored at
 * 1e-6, over the whole index): the formula of the in-memory reference, PostgreSQL's and SQLite
 * FTS5's `bm25()`. Not Oracle Text: a `CONTEXT` index tokenises with its own lexer, ranks by
 * its own formula (not BM25), treats words such as `NEAR` or `ABOUT` as operators, needs the
 * `CTXAPP` role and is synchronised apart from the transaction that wrote the row. Plain tables
 * work on every server version (19c and later) inside the write that saves the message.
 */

/** What the keyword statements need of the dialect: the table names and the CLOB bind type (also before `open()` made one). */
export type KeywordDialect = Pick<Dialect, 'names' | 'clobType'>;

/** The index rows of these messages: `[id, term count]` per message with terms, `[id, term, tf]` per posting. */
export function indexRows(
  written: readonly Pick<core.Message, 'id' | 'role' | 'content'>[],
  analyzer: core.KeywordAnalyzer,
): { counts: [string, number][]; postings: [string, string, number][] } {
  const counts: [string, number][] = [];
  const postings: [string, string, number][] = [];
  for (const m of written) {
    const terms = core.keywordTerms(m, analyzer);
    if (terms.length === 0) continue;
    counts.push([m.id, terms.length]);
    for (const [term, tf] of core.termCounts(terms)) postings.push([m.id, term, tf]);
  }
  return { counts, postings };
}

/** `DELETE` of the index rows of at most 1,000 messages from one of the two tables. */
export function deleteIndexRows(
  d: KeywordDialect,
  table: 'keywords' | 'keywordCounts',
  ids: string[],
): Statement {
  const list = inList('m', ids);
  return { sql: `DELETE FROM ${d.names[table]} WHERE message_id IN (${list.sql})`, binds: list.binds };
}

/** `INSERT` of rows given as one JSON array of arrays (a single CLOB bind, whatever their number). */
function insertJson(
  d: KeywordDialect,
  table: string,
  columns: Array<[string, string]>,
  rows: unknown[][],
): Statement {
  const names = columns.map(([name]) => name).join(', ');
  const paths = columns.map(([name, type], i) => `${name} ${type} PATH '$[${i}]'`).join(', ');
  return {
    sql: `INSERT INTO ${table} (${names})
SELECT ${names} FROM JSON_TABLE(:rows_json, '$[*]' COLUMNS (${paths}))`,
    binds: { rows_json: textBind(JSON.stringify(rows), d.clobType) },
  };
}

/** `INSERT` of the term counts of the messages with terms. */
export const insertTermCounts = (d: KeywordDialect, rows: [string, number][]): Statement =>
  insertJson(
    d,
    d.names.keywordCounts,
    [
      ['message_id', 'VARCHAR2(255 CHAR)'],
      ['term_count', 'NUMBER'],
    ],
    rows,
  );

/** `INSERT` of postings. */
export const insertPostings = (d: KeywordDialect, rows: [string, string, number][]): Statement =>
  insertJson(
    d,
    d.names.keywords,
    [
      ['message_id', 'VARCHAR2(255 CHAR)'],
      ['term', 'VARCHAR2(255 CHAR)'],
      ['tf', 'NUMBER'],
    ],
    rows,
  );

/**
 * Makes the index match these messages as just written (inside the write that wrote them, after
 * the messages): their rows out, the rows of those with terms in.
 */
export async function indexMessages(
  s: Session,
  d: KeywordDialect,
  written: readonly Pick<core.Message, 'id' | 'role' | 'content'>[],
  analyzer: core.KeywordAnalyzer,
): Promise<void> {
  for (const part of chunks(written.map((m) => m.id))) {
    await s.run(deleteIndexRows(d, 'keywords', part));
    await s.run(deleteIndexRows(d, 'keywordCounts', part));
  }
  const { counts, postings } = indexRows(written, analyzer);
  if (counts.length === 0) return;
  await s.run(insertTermCounts(d, counts));
  await s.run(insertPostings(d, postings));
}

/** Messages not indexed yet (`after`: only ids above it, in binary order), at most `limit`. */
export function selectUnindexed(d: KeywordDialect, after: string | null, limit: number): Statement {
  const { messages, keywordCounts } = d.names;
  return {
    sql: `SELECT m.id FROM ${messages} m
WHERE (:after_id IS NULL OR m.id > :after_id)
  AND NOT EXISTS (SELECT 1 FROM ${keywordCounts} k WHERE k.message_id = m.id)
ORDER BY m.id
FETCH FIRST :row_limit ROWS ONLY`,
    binds: { after_id: after, row_limit: limit },
  };
}

/** How many messages are not indexed yet (the `total` of a backfill). */
export function countUnindexed(d: KeywordDialect): Statement {
  const { messages, keywordCounts } = d.names;
  return {
    sql: `SELECT COUNT(*) AS total FROM ${messages} m
WHERE NOT EXISTS (SELECT 1 FROM ${keywordCounts} k WHERE k.message_id = m.id)`,
    binds: {},
  };
}

/**
 * Indexes every message not indexed yet, one transaction per batch of `KEYWORD_BACKFILL_BATCH`,
 * reporting after each. Stopped, it resumes at the next open with what is left (messages
 * without terms are looked at again, and stay out). Each batch row-locks its messages and reads
 * them again, so a concurrent save's newer text is never replaced by older terms.
 */
export async function backfillKeywords(
  s: Session,
  d: KeywordDialect,
  analyzer: core.KeywordAnalyzer,
  progress: core.BackfillListener,
): Promise<void> {
  const total = await s.count(countUnindexed(d));
  let after: string | null = null;
  await core.runBackfill(core.KEYWORD_BACKFILL, core.KEYWORD_BACKFILL_BATCH, progress, async () => {
    const batch = await s.rows<{ ID: string }>(selectUnindexed(d, after, core.KEYWORD_BACKFILL_BATCH));
    const ids: string[] = batch.map((r) => r.ID);
    if (ids.length > 0) {
      const read = selectMessagesByIds(d, ids);
      const rows = await s.rows<MessageRow>({ sql: `${read.sql} FOR UPDATE`, binds: read.binds });
      await indexMessages(s, d, rows.map(rowToMessage), analyzer);
      await s.connection.commit();
      after = ids.at(-1) ?? after;
    }
    return { read: ids.length, total };
  });
}

/**
 * The search: BM25 of the scope's messages (resource, thread, exclusions in the `WHERE`) that
 * hold a query term, with the statistics of the whole index (`stats`: message count and mean
 * length; `df`: messages per query term), ordered by score, then `created_at` descending, then
 * `id`; `FETCH FIRST :top_k` returns `topK` hits whenever that many match.
 */
export function searchKeywords(d: KeywordDialect, q: core.KeywordQuery): Statement {
  const { k1, b } = core.BM25;
  const { messages, keywords, keywordCounts } = d.names;
  const terms = inList('q', q.terms);
  const where = ['m.resource_id = :resource_id'];
  const binds: Statement['binds'] = { ...terms.binds, resource_id: q.resourceId, top_k: q.topK };
  if (q.threadId !== undefined) {
    where.push('m.thread_id = :thread_id');
    binds.thread_id = q.threadId;
  }
  chunks(q.excludeIds).forEach((part, i) => {
    const list = inList(`x${i}_`, part);
    where.push(`m.id NOT IN (${list.sql})`);
    Object.assign(binds, list.binds);
  });
  return {
    sql: `WITH stats AS (SELECT COUNT(*) AS n, AVG(term_count) AS avgdl FROM ${keywordCounts}),
df AS (SELECT term, COUNT(*) AS n FROM ${keywords} WHERE term IN (${terms.sql}) GROUP BY term)
SELECT m.id, m.thread_id, TO_CHAR(m.created_at, '${TIMESTAMP_FORMAT}') AS created_at_text,
  SUM(GREATEST(LN((stats.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) * p.tf * ${k1 + 1}
    / (p.tf + ${k1} * (${1 - b} + ${b} * c.term_count / stats.avgdl))) AS score
FROM df
JOIN ${keywords} p ON p.term = df.term
JOIN ${messages} m ON m.id = p.message_id
JOIN ${keywordCounts} c ON c.message_id = p.message_id
CROSS JOIN stats
WHERE ${where.join('\n  AND ')}
GROUP BY m.id, m.thread_id, m.created_at
ORDER BY score DESC, m.created_at DESC, m.id ASC
FETCH FIRST :top_k ROWS ONLY`,
    binds,
  };
}

export type KeywordHitRow = Record<'ID' | 'THREAD_ID' | 'CREATED_AT_TEXT', string> & { SCORE: number };

/** The keyword domain of `OracleDriver` (every server version); saves index through `indexMessages`. */
export function oracleKeywords(
  driver: OracleDriver,
  analyzer: core.KeywordAnalyzer,
): core.KeywordDriver<Session> {
  return {
    analyzer,
    ranking: 'bm25',
    search: async (query) => {
      const statement = searchKeywords(driver.dialect, query);
      const rows = await driver.read((s) => s.rows<KeywordHitRow>(statement));
      return rows.map((row) => ({
        messageId: row.ID,
        threadId: row.THREAD_ID,
        score: Number(row.SCORE),
        createdAt: fromTimestampText(row.CREATED_AT_TEXT),
      }));
    },
    // Both tables cascade from the messages (ON DELETE CASCADE).
    deleteByThread: async () => {},
    deleteByMessages: async () => {},
  };
}
