import {
  KEYWORD_BACKFILL_BATCH,
  type KeywordAnalyzer,
  type KeywordDriver,
  type KeywordHit,
  type KeywordQuery,
  keywordTerms,
  type Message,
} from '@engram/core/driver';
import type { Connection } from './connection.ts';
import type { Executor, Transaction } from './embedded.ts';
import { IN_LIST, type Statement, TABLES } from './sql.ts';

/**
 * The keyword index: an FTS5 table of the analyzed terms of each message with text, its rowid
 * the message's `seq` in `engram_messages` (the message's rowid before schema 15). Core's analyzer
 * makes the terms (folded, stemmed, stop words out) and FTS5's `ascii` tokenizer splits them at
 * the spaces only, so the index holds exactly core's terms and `bm25()` (k1 1.2, b 0.75) ranks as
 * the in-memory reference. `seq`, not the rowid: a message's rowid is not part of its row, and a
 * logical copy of the database (`sqlite3 .dump` and a restore) renumbers it, while the index's
 * own rows keep theirs: keyed by rowid, every keyword hit then named another message.
 */
export const KEYWORDS = 'engram_message_terms';

const { messages } = TABLES;

/** The migration's statement: the FTS5 table (core's terms need no tokenizer of their own). */
export const CREATE_KEYWORDS = `CREATE VIRTUAL TABLE ${KEYWORDS} USING fts5(terms, tokenize = 'ascii')`;

/**
 * The column of `engram_messages` the index's rows are keyed by: `seq`, or `rowid` in a schema
 * older than the column (tests build such schemas; the upgrade sets `seq` to the rowid).
 */
export type MessageKey = 'seq' | 'rowid';

/**
 * The statements that make the index match these messages as just written (inside the write
 * that wrote them): their old rows out, the rows of those with terms in, by message `key`.
 * `fresh`: every message was new to the store (the one-statement save refuses a stored id), and
 * a message's rows go with it, so there are no old rows to take out.
 */
export function indexStatements(
  written: readonly Message[],
  analyzer: KeywordAnalyzer,
  fresh = false,
  key: MessageKey = 'seq',
): Statement[] {
  if (written.length === 0) return [];
  const rows = written.flatMap((m) => {
    const terms = keywordTerms(m, analyzer);
    return terms.length === 0 ? [] : [[m.id, terms.join(' ')]];
  });
  const statements: Statement[] = fresh
    ? []
    : [
        {
          sql: `DELETE FROM ${KEYWORDS} WHERE rowid IN (SELECT ${key} FROM ${messages} WHERE id ${IN_LIST})`,
          args: [JSON.stringify(written.map((m) => m.id))],
        },
      ];
  if (rows.length > 0) {
    statements.push({
      // A row without `seq` (written by other software) stays out: FTS5 would give it a rowid of
      // its own, which the next message's `seq` then collides with.
      sql: `INSERT INTO ${KEYWORDS} (rowid, terms)
        SELECT m.${key}, json_extract(j.value, '$[1]') FROM json_each(?) j
        JOIN ${messages} m ON m.id = json_extract(j.value, '$[0]') WHERE m.${key} IS NOT NULL`,
      args: [JSON.stringify(rows)],
    });
  }
  return statements;
}

/**
 * One batch of the keyword backfill, in the caller's write transaction (which no other write
 * can interleave with, so the messages are indexed as stored): indexes the messages after
 * `lastId` in id order (at most `KEYWORD_BACKFILL_BATCH`, a message indexed already is replaced) and
 * returns how many it read and the last id. Messages without terms are read and left out.
 */
export async function indexBatch(
  tx: Executor,
  analyzer: KeywordAnalyzer,
  lastId: string,
  key: MessageKey,
): Promise<{ read: number; lastId: string }> {
  const { rows } = await tx.execute({
    sql: `SELECT id, role, content FROM ${messages} WHERE id > ? ORDER BY id LIMIT ${KEYWORD_BACKFILL_BATCH}`,
    args: [lastId],
  });
  const batch = rows.map((row) => ({
    id: String(row.id),
    role: String(row.role),
    content: JSON.parse(String(row.content)),
  })) as Message[];
  for (const statement of indexStatements(batch, analyzer, false, key)) await tx.execute(statement);
  return { read: batch.length, lastId: batch.at(-1)?.id ?? lastId };
}

/** How many messages come after `lastId` in id order: what a keyword backfill from there has to do. */
export async function messagesAfter(tx: Executor, lastId: string): Promise<number> {
  const { rows } = await tx.execute({
    sql: `SELECT count(*) AS n FROM ${messages} WHERE id > ?`,
    args: [lastId],
  });
  return Number(rows[0]?.n ?? 0);
}

/** FTS5 query text: each term a quoted string (quotes doubled), OR-ed: no operator survives. */
export function matchExpression(terms: readonly string[]): string {
  return terms.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR ');
}

/** The keyword domain of `LibSQLDriver`; saves index through `indexStatements`. */
export class LibSQLKeywords implements KeywordDriver<Transaction> {
  readonly ranking = 'bm25';

  constructor(
    private readonly connection: Connection,
    readonly analyzer: KeywordAnalyzer,
  ) {}

  async search(query: KeywordQuery): Promise<KeywordHit[]> {
    const args: (string | number)[] = [matchExpression(query.terms), query.resourceId];
    let where = '';
    if (query.threadId !== undefined) {
      where += ' AND m.thread_id = ?';
      args.push(query.threadId);
    }
    if (query.excludeIds.length > 0) {
      where += ` AND m.id NOT ${IN_LIST}`;
      args.push(JSON.stringify(query.excludeIds));
    }
    args.push(query.topK);
    const statement = {
      sql: `SELECT m.id, m.thread_id, m.created_at, -bm25(${KEYWORDS}) AS score
        FROM ${KEYWORDS} JOIN ${messages} m ON m.seq = ${KEYWORDS}.rowid
        WHERE ${KEYWORDS} MATCH ? AND m.resource_id = ?${where}
        ORDER BY bm25(${KEYWORDS}), m.created_at DESC, m.id LIMIT ?`,
      args,
    };
    const { rows } = await this.connection.use((client) => client.execute(statement));
    return rows.map((row) => ({
      messageId: String(row.id),
      threadId: String(row.thread_id),
      score: Number(row.score),
      createdAt: new Date(Number(row.created_at)),
    }));
  }

  async deleteByThread(tx: Transaction, threadId: string): Promise<void> {
    await tx.execute({
      sql: `DELETE FROM ${KEYWORDS} WHERE rowid IN (SELECT seq FROM ${messages} WHERE thread_id = ?)`,
      args: [threadId],
    });
  }

  async deleteByMessages(tx: Transaction, ids: string[]): Promise<void> {
    await tx.execute({
      sql: `DELETE FROM ${KEYWORDS} WHERE rowid IN (SELECT seq FROM ${messages} WHERE id ${IN_LIST})`,
      args: [JSON.stringify(ids)],
    });
  }
}
