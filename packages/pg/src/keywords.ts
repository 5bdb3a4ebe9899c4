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
import { dollarQuote, type Names, quoteIdent, type Statement } from './sql.ts';

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

/**
 * The index's statistics, kept by the writes themselves: each statement that adds, changes or
 * removes index rows (a save, an import, a cascade from deleted messages) adds its difference in
 * documents and total length to one row of `keywordStats` that no other transaction holds
 * (`SKIP LOCKED`), or to a new row when every row is held. So no writer waits on another, the
 * rows are about as many as writers ever were at once, and a search sums them where it counted
 * the whole index (1 ms at 10,000 messages, about 10 ms at 100,000). Starts from the rows stored.
 */
export const keywordStats = (n: Names): string[] => [
  `CREATE TABLE ${n.keywordStats} (
    slot integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    documents bigint NOT NULL,
    length bigint NOT NULL
  )`,
  `INSERT INTO ${n.keywordStats} (documents, length) SELECT count(*), coalesce(sum(length), 0) FROM ${n.keywords}`,
  // `OR REPLACE`: dropping the tables of a prefix in a shared schema leaves the function behind.
  `CREATE OR REPLACE FUNCTION ${n.keywordStatsKeep}() RETURNS trigger LANGUAGE plpgsql AS ${dollarQuote(`
    DECLARE
      d bigint := 0;
      l bigint := 0;
      kept integer;
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM ${n.keywordStats};
        RETURN NULL;
      END IF;
      IF TG_OP <> 'DELETE' THEN
        SELECT count(*), coalesce(sum(length), 0) INTO d, l FROM added;
      END IF;
      IF TG_OP <> 'INSERT' THEN
        SELECT d - count(*), l - coalesce(sum(length), 0) INTO d, l FROM removed;
      END IF;
      IF d = 0 AND l = 0 THEN
        RETURN NULL;
      END IF;
      UPDATE ${n.keywordStats} SET documents = documents + d, length = length + l
        WHERE slot = (SELECT slot FROM ${n.keywordStats} LIMIT 1 FOR UPDATE SKIP LOCKED);
      GET DIAGNOSTICS kept = ROW_COUNT;
      IF kept = 0 THEN
        INSERT INTO ${n.keywordStats} (documents, length) VALUES (d, l);
      END IF;
      RETURN NULL;
    END`)}`,
  ...(
    [
      ['insert', 'INSERT', 'NEW TABLE AS added'],
      ['update', 'UPDATE', 'OLD TABLE AS removed NEW TABLE AS added'],
      ['delete', 'DELETE', 'OLD TABLE AS removed'],
    ] as const
  ).map(
    ([name, event, tables]) =>
      `CREATE TRIGGER ${quoteIdent(`${n.prefix}message_terms_stats_on_${name}`)} AFTER ${event} ON ${n.keywords}
        REFERENCING ${tables} FOR EACH STATEMENT EXECUTE FUNCTION ${n.keywordStatsKeep}()`,
  ),
  // Never done by the store; a TRUNCATE of yours (or a cascade from the messages') empties them too.
  `CREATE TRIGGER ${quoteIdent(`${n.prefix}message_terms_stats_on_truncate`)} AFTER TRUNCATE ON ${n.keywords}
    FOR EACH STATEMENT EXECUTE FUNCTION ${n.keywordStatsKeep}()`,
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
 * The document count and mean length are summed from `keywordStats`; each query term's document
 * frequency is counted through the GIN index. Both are `MATERIALIZED`: computed once per
 * statement. Inlined, as PostgreSQL does with a CTE used once, the document frequencies were
 * re-counted for every hit and term (1.9 s for a term in 10,000 messages). A hit's frequency of a
 * term is the number of its positions in the hit's `terms`.
 */
export function searchKeywords(n: Names, query: KeywordQuery): Statement {
  const { k1, b } = BM25;
  const queries = query.terms.map(lexeme);
  return {
    text: `WITH q AS (SELECT * FROM unnest($1::text[], $2::text[]) AS q(term, query)),
      stats AS MATERIALIZED (
        SELECT coalesce(sum(documents), 0)::float8 AS n,
          coalesce(sum(length)::float8 / nullif(sum(documents), 0), 0) AS avgdl FROM ${n.keywordStats}
      ),
      idf AS MATERIALIZED (
        SELECT q.term, greatest(ln((greatest(stats.n, d.n) - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
        FROM q CROSS JOIN stats
        CROSS JOIN LATERAL (
          SELECT count(*)::float8 AS n FROM ${n.keywords} k WHERE k.lexemes @@ q.query::tsquery
        ) d
      ),
      hits AS (
        SELECT k.message_id, m.thread_id, m.created_at, k.terms,
          ${k1}::float8 * (${1 - b}::float8 + ${b}::float8 * k.length / stats.avgdl) AS norm
        FROM ${n.keywords} k JOIN ${n.messages} m ON m.id = k.message_id CROSS JOIN stats
        WHERE k.lexemes @@ $3::tsquery AND m.resource_id = $4
          AND ($5::text IS NULL OR m.thread_id = $5) AND NOT (m.id = ANY($6::text[]))
      )
      SELECT h.message_id AS id, h.thread_id, h.created_at, (
          SELECT sum(idf.idf * c.tf * ${k1 + 1}::float8 / (c.tf + h.norm)) FROM idf
          CROSS JOIN LATERAL (SELECT cardinality(array_positions(h.terms, idf.term))::float8 AS tf) c
          WHERE c.tf > 0
        ) AS score
      FROM hits h
      ORDER BY score DESC, h.created_at DESC, h.message_id LIMIT $7`,
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
