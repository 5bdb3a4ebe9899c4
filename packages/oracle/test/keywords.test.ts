import { type BackfillProgress, BM25, defaultKeywordAnalyzer, type KeywordQuery } from '@engram/core/driver';
import { describe, expect, it } from 'vitest';
import { OracleStore } from '../src/index.ts';
import * as ksql from '../src/keywords.ts';
import { MIGRATIONS } from '../src/migrations.ts';
import type { OracleBinds } from '../src/oracledb.ts';
import type { Session } from '../src/session.ts';
import { tableNames } from '../src/sql.ts';
import { bindsMatch, dialect, fakePool, message, parse } from './fixtures.ts';

// Unit tests only: these statements have not been run against an Oracle server here.

const d = dialect('json');

const query = (overrides: Partial<KeywordQuery> = {}): KeywordQuery => ({
  terms: ['cello', 'lesson'],
  topK: 5,
  resourceId: 'r1',
  excludeIds: [],
  ...overrides,
});

describe('keyword DDL (migration 6)', () => {
  const migration = MIGRATIONS[5];
  const ddl = (migration?.steps(tableNames('engram_'), 'clob') ?? []).map((s) => s.sql);

  it('runs on every server version, is plain DDL, and backfills', () => {
    expect(migration?.minMajorVersion).toBeUndefined();
    expect(migration?.backfill).toBeTypeOf('function');
    for (const sql of ddl) expect(parse(sql)).toEqual({ binds: [], kind: 'ddl' });
  });

  it('keys postings by (term, message), both tables cascade from the messages, the foreign key indexed', () => {
    const [postings, index, counts] = ddl;
    expect(postings).toMatch(/^CREATE TABLE engram_message_terms \(/);
    expect(postings).toContain('CONSTRAINT engram_message_terms_pk PRIMARY KEY (term, message_id)');
    expect(postings).toContain('REFERENCES engram_messages (id) ON DELETE CASCADE');
    expect(index).toBe('CREATE INDEX engram_message_terms_message_idx ON engram_message_terms (message_id)');
    expect(counts).toMatch(/^CREATE TABLE engram_message_term_counts \(/);
    expect(counts).toContain('CONSTRAINT engram_message_term_counts_pk PRIMARY KEY (message_id)');
    expect(counts).toContain('REFERENCES engram_messages (id) ON DELETE CASCADE');
  });
});

describe('keyword statements', () => {
  it('bind every placeholder by name', () => {
    const many = Array.from({ length: 1001 }, (_, i) => `x${i}`);
    const statements = [
      ksql.searchKeywords(d, query()),
      ksql.searchKeywords(d, query({ threadId: 't1', excludeIds: many })),
      ksql.selectUnindexed(d, null, 500),
      ksql.countUnindexed(d),
      ksql.deleteIndexRows(d, 'keywords', ['m1', 'm2']),
      ksql.deleteIndexRows(d, 'keywordCounts', ['m1']),
      ksql.insertTermCounts(d, [['m1', 2]]),
      ksql.insertPostings(d, [['m1', 'cello', 2]]),
    ];
    for (const statement of statements) expect(bindsMatch(statement)).toBe(true);
    expect(statements.map((s) => parse(s.sql).kind)).toEqual([
      'query',
      'query',
      'query',
      'query',
      'dml',
      'dml',
      'dml',
      'dml',
    ]);
  });

  it('search: terms and ids are binds, so query syntax and hostile ids are plain values', () => {
    const hostile = query({
      terms: ["') OR 1=1 --", 'near', 'x*y', 'a"b'],
      resourceId: "r1' OR 'x'='x",
      threadId: 't1)',
      excludeIds: ["m1'"],
    });
    const { sql, binds } = ksql.searchKeywords(d, hostile);
    for (const value of [...hostile.terms, hostile.resourceId, hostile.threadId, "m1'"]) {
      expect(sql).not.toContain(value as string);
    }
    expect(binds).toMatchObject({
      q0: "') OR 1=1 --",
      q1: 'near',
      q2: 'x*y',
      q3: 'a"b',
      resource_id: "r1' OR 'x'='x",
      thread_id: 't1)',
      x0_0: "m1'",
      top_k: 5,
    });
    expect(sql).not.toMatch(/CONTAINS|CATSEARCH/);
  });

  it('search: BM25 with k1 1.2 and b 0.75 and the idf floor, over the whole index; scope in the WHERE; the tie rule', () => {
    const { sql } = ksql.searchKeywords(d, query({ threadId: 't1', excludeIds: ['m9'] }));
    expect(BM25).toEqual({ k1: 1.2, b: 0.75 });
    expect(sql).toContain('SELECT COUNT(*) AS n, AVG(term_count) AS avgdl FROM engram_message_term_counts)');
    expect(sql).toContain(
      'SELECT term, COUNT(*) AS n FROM engram_message_terms WHERE term IN (:q0, :q1) GROUP BY term',
    );
    expect(sql).toContain('GREATEST(LN((stats.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) * p.tf * 2.2');
    expect(sql).toContain('/ (p.tf + 1.2 * (0.25 + 0.75 * c.term_count / stats.avgdl))');
    expect(sql).toContain(
      'WHERE m.resource_id = :resource_id\n  AND m.thread_id = :thread_id\n  AND m.id NOT IN (:x0_0)',
    );
    expect(sql).toMatch(/ORDER BY score DESC, m\.created_at DESC, m\.id ASC\nFETCH FIRST :top_k ROWS ONLY$/);
  });

  it('index rows: a count per message with terms, a posting per distinct term; messages without text stay out', () => {
    const rows = ksql.indexRows(
      [
        message({ id: 'a', content: 'Cello cellos, and the CELLO lesson' }),
        message({
          id: 'b',
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'c', result: 'x' }] as never,
        }),
        message({ id: 'c', content: '' }),
      ],
      defaultKeywordAnalyzer,
    );
    expect(rows.counts).toEqual([['a', 4]]);
    expect(rows.postings).toEqual([
      ['a', 'cello', 3],
      ['a', 'lesson', 1],
    ]);
  });

  it('insert rows from one JSON bind, whatever their number', () => {
    const postings = Array.from({ length: 5000 }, (_, i): [string, string, number] => [`m${i}`, 'w', 1]);
    const { sql, binds } = ksql.insertPostings(d, postings);
    expect(sql).toContain(
      "FROM JSON_TABLE(:rows_json, '$[*]' COLUMNS (message_id VARCHAR2(255 CHAR) PATH '$[0]', term VARCHAR2(255 CHAR) PATH '$[1]', tf NUMBER PATH '$[2]'))",
    );
    expect(binds.rows_json).toMatchObject({ val: JSON.stringify(postings), type: d.clobType });
  });
});

/**
 * A session over an in-test table of messages and of indexed ids, answering the backfill's
 * statements the way the server would.
 */
function backfillSession(messages: number) {
  const ids = Array.from({ length: messages }, (_, i) => `m${String(i).padStart(5, '0')}`);
  const indexed = new Set<string>();
  const events: string[] = [];
  const session = {
    connection: { commit: async () => void events.push('commit') },
    count: async () => ids.filter((id) => !indexed.has(id)).length,
    rows: async ({ sql, binds }: { sql: string; binds: OracleBinds }) => {
      if (sql.startsWith('SELECT m.id FROM')) {
        const after = binds.after_id as string | null;
        return ids
          .filter((id) => (after === null || id > after) && !indexed.has(id))
          .slice(0, binds.row_limit as number)
          .map((id) => ({ ID: id }));
      }
      expect(sql).toMatch(/ FOR UPDATE$/);
      return Object.values(binds).map((id) => ({
        ID: id,
        THREAD_ID: 't1',
        RESOURCE_ID: 'r1',
        MESSAGE_ROLE: 'user',
        MESSAGE_TYPE: 'text',
        CONTENT: JSON.stringify(id === 'm00007' ? '' : `fact ${id}`),
        CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
      }));
    },
    run: async ({ sql, binds }: { sql: string; binds: OracleBinds }) => {
      if (sql.startsWith(`INSERT INTO ${d.names.keywordCounts}`)) {
        const rows = JSON.parse((binds.rows_json as { val: string }).val ?? binds.rows_json) as [string][];
        for (const [id] of rows) indexed.add(id);
      }
      return 1;
    },
  } as unknown as Session;
  return { session, indexed, events };
}

describe('keyword backfill', () => {
  it('indexes every message in committed batches of 500, reporting after each', async () => {
    const { session, indexed, events } = backfillSession(1201);
    const reports: BackfillProgress[] = [];
    await ksql.backfillKeywords(session, d, defaultKeywordAnalyzer, (p) => reports.push(p));
    expect(reports).toEqual([
      { backfill: 'keyword index', done: 500, total: 1201 },
      { backfill: 'keyword index', done: 1000, total: 1201 },
      { backfill: 'keyword index', done: 1201, total: 1201 },
    ]);
    expect(events).toEqual(['commit', 'commit', 'commit']);
    // The message without text is looked at and stays out of the index.
    expect(indexed.size).toBe(1200);
    expect(indexed.has('m00007')).toBe(false);
  });

  it('stopped after a batch, resumes with the messages left', async () => {
    const { session, indexed } = backfillSession(1201);
    const stop = new Error('stopped');
    const first = ksql.backfillKeywords(session, d, defaultKeywordAnalyzer, () => {
      throw stop;
    });
    await expect(first).rejects.toBe(stop);
    expect(indexed.size).toBe(499);
    const reports: BackfillProgress[] = [];
    await ksql.backfillKeywords(session, d, defaultKeywordAnalyzer, (p) => reports.push(p));
    expect(reports.map((r) => [r.done, r.total])).toEqual([
      [500, 702],
      [702, 702],
    ]);
    expect(indexed.size).toBe(1200);
  });

  it('reports once, with done 0, when nothing is left', async () => {
    const { session } = backfillSession(0);
    const reports: BackfillProgress[] = [];
    await ksql.backfillKeywords(session, d, defaultKeywordAnalyzer, (p) => reports.push(p));
    expect(reports).toEqual([{ backfill: 'keyword index', done: 0, total: 0 }]);
  });
});

describe('OracleStore keywords (fake connection)', () => {
  it('declares exact BM25 keywords on every server version, searching with analyzed terms', async () => {
    for (const version of [1_919_000_000, 2_304_000_000]) {
      const fake = fakePool(version, (sql) =>
        sql.startsWith('WITH stats')
          ? { rows: [{ ID: 'm1', THREAD_ID: 't1', CREATED_AT_TEXT: '2024-05-01T10:20:30.123', SCORE: 1.5 }] }
          : { rows: [], rowsAffected: 1 },
      );
      const store = new OracleStore({ pool: fake.pool, keywords: { stopWords: ['the'] } });
      await store.init();
      expect(store.keywords?.ranking).toBe('bm25');
      const hits = await store.keywords?.search({
        query: 'The CELLOS: NEAR (the) lessons!',
        topK: 3,
        resourceId: 'r1',
      });
      expect(hits).toEqual([
        { messageId: 'm1', threadId: 't1', score: 1.5, createdAt: new Date('2024-05-01T10:20:30.123Z') },
      ]);
      const search = fake.sent.find((s) => s.sql.startsWith('WITH stats'));
      expect(search?.binds).toMatchObject({
        q0: 'cello',
        q1: 'near',
        q2: 'lesson',
        resource_id: 'r1',
        top_k: 3,
      });
    }
  });

  it('refuses an onBackfillProgress that is not a function', () => {
    const { pool } = fakePool();
    expect(() => new OracleStore({ pool, onBackfillProgress: 'log' as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/onBackfillProgress/),
      }),
    );
  });
});
