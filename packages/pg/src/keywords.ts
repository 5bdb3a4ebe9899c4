import {
  BM25,
  KEYWORD_BACKFILL_BATCH,
  type KeywordAnalyzer,
  type KeywordDriver,
  type KeywordHit,
  type KeywordQuery,
  keywordTerms,
  type Message,
} from '@engram/core/driver';
import type { ClientBase } from 'pg';
import type { Connection } from './connection.ts';
import type { PostgresTx } from './driver.ts';
import type { Names, Statement } from './sql.ts';

/**
 * The keyword index: one row per message with text in `message_terms` — its analyzed terms
 * (`terms`, repeats kept, for term frequencies), their count (`length`) and a `tsvector` of the
 * distinct terms (`lexemes`, GIN-indexed, for matching). The terms are core's (folded, stemmed,
 * stop words out): the `tsvector` is built from them as they are, never by a text-search
 * configuration, so every backend indexes the same terms.
 *
 * Ranking is Okapi BM25 computed in SQL from the stored statistics (k1 1.2, b 0.75, idf floored
 * at 1e-6, over the whole table), the formula of the in-memory reference and of SQLite FTS5's
 * `bm25()` — not `ts_rank_cd`, which ranks by proximity and ignores how rare a term is.
 * Rows go with their message (`ON DELETE CASCADE`): deleting messages or a thread needs no hook.
 */

/** The migration's statements. */
export const keywordTable = (n: Names): string[] => [
  `CREATE TABLE ${n.keywords} (
    message_id text COLLATE "C" PRIMARY KEY REFERENCES ${n.messages} (id) ON DELETE CASCADE,
    terms text[] NOT NULL,
    length integer NOT NULL,
    lexemes tsvector NOT NULL
  )`,
  `CREATE INDEX ${n.keywordsIndex} ON ${n.keywords} USING gin (lexemes)`,
];

/** A term as a `tsquery` literal: quoted, so no character of it is an operator. */
export function lexeme(term: string): string {
  return `'${term.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/** The ids of the messages with terms, and their terms as JSON arrays (the index's parameters). */
export function indexTerms(written: readonly Message[], analyzer: KeywordAnalyzer): [string[], string[]] {
  const ids: string[] = [];
  const terms: string[] = [];
  for (const m of written) {
    const t = keywordTerms(m, analyzer);
    if (t.length === 0) continue;
    ids.push(m.id);
    terms.push(JSON.stringify(t));
  }
  return [ids, terms];
}

/**
 * The statement that makes the index match these messages as just written (same transaction):
 * rows of those without terms out, the others inserted or replaced.
 */
export function indexMessages(n: Names, written: readonly Message[], analyzer: KeywordAnalyzer) {
  const [ids, terms] = indexTerms(written, analyzer);
  return {
    text: `WITH gone AS (
        DELETE FROM ${n.keywords} WHERE message_id = ANY($1::text[]) AND NOT (message_id = ANY($2::text[]))
      )
      INSERT INTO ${n.keywords} (message_id, terms, length, lexemes)
      SELECT id, t.terms, cardinality(t.terms), array_to_tsvector(t.terms)
      FROM unnest($2::text[], $3::jsonb[]) AS w(id, json)
      CROSS JOIN LATERAL (SELECT ARRAY(SELECT jsonb_array_elements_text(w.json)) AS terms) t
      ON CONFLICT (message_id) DO UPDATE
        SET terms = EXCLUDED.terms, length = EXCLUDED.length, lexemes = EXCLUDED.lexemes`,
    values: [written.map((m) => m.id), ids, terms],
  };
}

/**
 * One batch of the keyword backfill, in the caller's transaction: indexes the messages after
 * `lastId` in id order (at most `KEYWORD_BACKFILL_BATCH`, a message indexed already is replaced) and
 * returns how many it read and the last id. The rows are read `FOR SHARE`: a save changing one
 * waits until this commits and then indexes it itself, and one that changed it first is waited
 * for and read as it left it, so the index never keeps older terms than its message.
 */
export async function indexBatch(
  client: ClientBase,
  n: Names,
  analyzer: KeywordAnalyzer,
  lastId: string,
): Promise<{ read: number; lastId: string }> {
  const { rows } = await client.query<{ id: string; role: Message['role']; content: Message['content'] }>(
    `SELECT id, role, content FROM ${n.messages} WHERE id > $1 ORDER BY id LIMIT ${KEYWORD_BACKFILL_BATCH} FOR SHARE`,
    [lastId],
  );
  if (rows.length > 0) {
    const { text, values } = indexMessages(n, rows as Message[], analyzer);
    await client.query(text, values);
  }
  return { read: rows.length, lastId: rows.at(-1)?.id ?? lastId };
}

/** How many messages come after `lastId` in id order: what a keyword backfill from there has to do. */
export async function messagesAfter(client: ClientBase, n: Names, lastId: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${n.messages} WHERE id > $1`,
    [lastId],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * The search statement: BM25 over the resource's (or thread's) messages that hold any query term.
 * The statistics (`stats`, `df`) are `MATERIALIZED`: computed once per statement. Inlined, as
 * PostgreSQL does with a CTE used once, the document frequencies were re-counted for every hit
 * and term (1.9 s for a term in 10,000 messages).
 */
export function searchKeywords(n: Names, query: KeywordQuery): Statement {
  const { k1, b } = BM25;
  const queries = query.terms.map(lexeme);
  return {
    text: `WITH q AS (SELECT * FROM unnest($1::text[], $2::text[]) AS q(term, query)),
      stats AS MATERIALIZED (
        SELECT count(*)::float8 AS n, coalesce(avg(length), 0)::float8 AS avgdl FROM ${n.keywords}
      ),
      df AS MATERIALIZED (
        SELECT q.term, (SELECT count(*) FROM ${n.keywords} k WHERE k.lexemes @@ q.query::tsquery)::float8 AS n
        FROM q
      ),
      hits AS (
        SELECT k.message_id, k.terms, k.length FROM ${n.keywords} k
        JOIN ${n.messages} m ON m.id = k.message_id
        WHERE k.lexemes @@ $3::tsquery AND m.resource_id = $4
          AND ($5::text IS NULL OR m.thread_id = $5) AND NOT (m.id = ANY($6::text[]))
      ),
      scored AS (
        SELECT h.message_id, sum(
          greatest(ln((stats.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) * c.tf * ${k1 + 1}
            / (c.tf + ${k1} * (${1 - b} + ${b} * h.length / stats.avgdl))
        ) AS score
        FROM hits h CROSS JOIN stats
        CROSS JOIN LATERAL (SELECT t AS term, count(*)::float8 AS tf FROM unnest(h.terms) t GROUP BY t) c
        JOIN df ON df.term = c.term
        GROUP BY h.message_id
      )
      SELECT m.id, m.thread_id, m.created_at, s.score FROM scored s JOIN ${n.messages} m ON m.id = s.message_id
      ORDER BY s.score DESC, m.created_at DESC, m.id LIMIT $7`,
    values: [
      query.terms,
      queries,
      queries.join(' | '),
      query.resourceId,
      query.threadId ?? null,
      query.excludeIds,
      query.topK,
    ],
  };
}

/** The keyword domain of `PostgresDriver`: BM25 in SQL; saves index through `indexMessages`. */
export class PostgresKeywordDriver implements KeywordDriver<PostgresTx> {
  readonly ranking = 'bm25';

  constructor(
    private readonly db: Connection,
    private readonly names: Names,
    readonly analyzer: KeywordAnalyzer,
  ) {}

  async search(query: KeywordQuery): Promise<KeywordHit[]> {
    const { text, values } = searchKeywords(this.names, query);
    const rows = await this.db.query<{ id: string; thread_id: string; created_at: Date; score: number }>(
      text,
      values,
    );
    return rows.map((row) => ({
      messageId: row.id,
      threadId: row.thread_id,
      score: Number(row.score),
      createdAt: new Date(row.created_at),
    }));
  }

  // Rows go with their messages (ON DELETE CASCADE).
  async deleteByThread(): Promise<void> {}
  async deleteByMessages(): Promise<void> {}
}
