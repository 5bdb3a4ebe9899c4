import type { Message } from '@engram/core';
import { createKeywordAnalyzer, type MessageQuery, queryTerms } from '@engram/core/driver';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { searchKeywords } from '../src/keywords.ts';
import * as sql from '../src/sql.ts';
import { createDatabase, describePg, sentText, type TestDatabase } from './env.ts';

/** A node of `EXPLAIN (FORMAT JSON)` output. */
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

const THREAD_SIZE = 10_000;

describePg('query plans on a thread of 10,000 messages', (url) => {
  let db: TestDatabase;
  let store: PostgresStore;
  const threadId = 'busy-thread';
  const resourceId = 'r1';
  const names = sql.names('public', 'engram_');

  beforeAll(async () => {
    db = await createDatabase(url);
    store = new PostgresStore({ connectionString: db.url });
    await store.init();
    const at = new Date('2024-01-01T00:00:00.000Z');
    for (const id of [threadId, 'neighbour-a', 'neighbour-z']) {
      await store.saveThread({ id, resourceId, title: id, metadata: {}, createdAt: at, updatedAt: at });
    }
    const batch = (thread: string, from: number, count: number): Message[] =>
      Array.from({ length: count }, (_, i) => ({
        id: `${thread}-m${String(from + i).padStart(6, '0')}`,
        threadId: thread,
        resourceId,
        role: 'user',
        content: `message ${from + i}`,
        type: 'text',
        createdAt: new Date(at.getTime() + (from + i) * 1000),
      }));
    for (let from = 0; from < THREAD_SIZE; from += 2_000) {
      await store.saveMessages(batch(threadId, from, 2_000));
    }
    await store.saveMessages(batch('neighbour-a', 0, 500));
    await store.saveMessages(batch('neighbour-z', 0, 500));
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  async function explain(statement: sql.Statement): Promise<PlanNode[]> {
    const rows = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
      statement.values,
    );
    return nodes(rows[0]!['QUERY PLAN'][0].Plan);
  }

  function expectIndexOnly(plan: PlanNode[], maxRows: number): void {
    const types = plan.map((n) => n['Node Type']);
    // The kept counts a page reads its total from may be scanned whole while the table is tiny.
    const seqScans = plan.filter((n) => n['Node Type'] === 'Seq Scan');
    expect(seqScans.map((n) => n['Relation Name'])).toEqual(seqScans.map(() => 'engram_message_counts'));
    expect(types).not.toContain('Sort');
    expect(types).not.toContain('Bitmap Heap Scan');
    const scans = plan.filter((n) => n['Node Type'] === 'Index Scan' || n['Node Type'] === 'Index Only Scan');
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      if (scan['Index Name'] === 'engram_messages_thread_idx') {
        expect(scan['Actual Rows']).toBeLessThanOrEqual(maxRows);
      }
    }
    expect(scans.some((s) => s['Index Name'] === 'engram_messages_thread_idx')).toBe(true);
  }

  const newest20: MessageQuery = { threadId, page: 0, perPage: 20, direction: 'DESC', include: [] };

  // Planned with statistics, as autovacuum keeps them. (Right after a bulk load, before the first
  // ANALYZE, PostgreSQL guesses a thread holds a few dozen rows and may sort them instead.)
  it('the newest-20 page is an index scan that reads 20 rows, with no sort', async () => {
    await db.query('ANALYZE');
    const statement = sql.pageMessages(names, newest20);
    expectIndexOnly(await explain(statement), 20);
    expectIndexOnly(await explain(sql.pageMessages(names, { ...newest20, resourceId })), 20);
    expectIndexOnly(await explain(sql.pageMessages(names, { ...newest20, direction: 'ASC' })), 20);
  });

  it('include windows are bounded index scans of the target thread', async () => {
    await db.query('ANALYZE');
    const statement = sql.includeWindows(names, {
      ...newest20,
      include: [{ id: `${threadId}-m005000`, withPreviousMessages: 5, withNextMessages: 5 }],
    });
    expectIndexOnly(await explain(statement), 5);
  });

  it('the newest 20 reads its total from the kept count, in the page statement: one round trip, no count(*); windows alone and a page of threads carry their totals too', async () => {
    await db.query('ANALYZE');
    const count = sql.countMessages(names, newest20);
    expect(count.text).not.toMatch(/count\(\*\)/i);
    const plan = await explain(count);
    expect(plan.filter((node) => node['Relation Name'] === 'engram_messages')).toEqual([]);
    expect(plan.some((node) => node['Relation Name'] === 'engram_message_counts')).toBe(true);
    const withResource = await explain(sql.countMessages(names, { ...newest20, resourceId }));
    expect(withResource.filter((node) => node['Relation Name'] === 'engram_messages')).toEqual([]);

    // What the store sends for the call, recorded on every connection of its pool.
    const sent: string[] = [];
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // The test database is dropped WITH (FORCE): a client still closing then hears its backend end.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          sent.push(sentText(args[0]));
          return query(...args);
        },
      });
    });
    const recorded = new PostgresStore({ pool });
    try {
      await recorded.init();
      sent.length = 0;
      const page = await recorded.listMessages({ threadId, perPage: 20, direction: 'DESC' });
      expect(page.total).toBe(THREAD_SIZE);
      expect(page.messages).toHaveLength(20);
      expect(Object.keys(page.messages[0]!).sort()).toEqual([
        'content',
        'createdAt',
        'id',
        'resourceId',
        'role',
        'threadId',
        'type',
      ]);
      expect(sent.length).toBe(1);
      expect(sent.filter((text) => /count\(\*\)/i.test(text))).toEqual([]);
      // A date range still counts its rows.
      sent.length = 0;
      const ranged = await recorded.listMessages({
        threadId,
        perPage: 20,
        dateRange: { start: new Date('2024-01-01T02:00:00.000Z') },
      });
      expect(ranged.total).toBe(THREAD_SIZE - 7_200);
      expect(sent.some((text) => /count\(\*\)/i.test(text))).toBe(true);
      // Windows alone (as recall reads them) carry the total too: one statement.
      sent.length = 0;
      const windows = await recorded.listMessages({
        threadId,
        perPage: 0,
        include: [{ id: `${threadId}-m005000`, withPreviousMessages: 1, withNextMessages: 1 }],
      });
      expect(windows.messages.map((m) => m.id.slice(-4))).toEqual(['4999', '5000', '5001']);
      expect([windows.total, sent.length]).toEqual([THREAD_SIZE, 1]);
      expect(Object.keys(windows.messages[0] ?? {})).not.toContain('page_total');
      // A page of threads carries its total too: one statement; an empty page counts apart.
      sent.length = 0;
      const threads = await recorded.listThreads({ resourceId, perPage: 2 });
      expect(threads.total).toBe(3);
      expect(threads.threads.map((t) => Object.keys(t).sort().join())).toEqual([
        'createdAt,id,metadata,resourceId,title,updatedAt',
        'createdAt,id,metadata,resourceId,title,updatedAt',
      ]);
      expect(sent.length).toBe(1);
      const beyond = await recorded.listThreads({ resourceId, page: 5, perPage: 2 });
      expect([beyond.threads.length, beyond.total]).toEqual([0, 3]);
    } finally {
      await recorded.close();
      await pool.end();
    }
  });

  it('the store returns the newest 20 in order', async () => {
    const page = await store.listMessages({ threadId, perPage: 20, direction: 'DESC' });
    expect(page.total).toBe(THREAD_SIZE);
    expect(page.messages.map((m) => m.id)).toEqual(
      Array.from({ length: 20 }, (_, i) => `${threadId}-m${String(THREAD_SIZE - 1 - i).padStart(6, '0')}`),
    );
    const window = await store.listMessages({
      threadId,
      perPage: 0,
      include: [{ id: `${threadId}-m005000`, withPreviousMessages: 2, withNextMessages: 2 }],
    });
    expect(window.messages.map((m) => m.id.slice(-4))).toEqual(['4998', '4999', '5000', '5001', '5002']);
  });

  // Every message holds the word "message": the worst case, a term in all 11,000 rows.
  it("a keyword search counts each term's documents once per statement, not once per hit", async () => {
    await db.query('ANALYZE');
    const terms = queryTerms('message 5000', createKeywordAnalyzer());
    expect(terms).toHaveLength(2);
    const plan = await explain(searchKeywords(names, { terms, resourceId, topK: 5, excludeIds: [] }));
    const termScans = plan.filter((node) => node['Index Name'] === 'engram_message_terms_lexemes_idx');
    expect(termScans.length).toBeGreaterThan(0);
    for (const scan of termScans) expect(scan['Actual Loops']).toBeLessThanOrEqual(terms.length);
    const started = performance.now();
    const hits = await store.keywords!.search({ query: 'message 5000', resourceId, topK: 1 });
    console.log(
      `keyword search over 11,000 matching messages: ${(performance.now() - started).toFixed(1)} ms`,
    );
    expect(hits.map((hit) => hit.messageId)).toEqual([`${threadId}-m005000`]);
  });
});
