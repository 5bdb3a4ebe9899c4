import { isMemoryError } from '@engram/core';
import { describe, expect, it } from 'vitest';
import * as sql from '../src/sql.ts';
import { at, bindKeys, bindsMatch, dialect, message, oracledb, parse, thread } from './fixtures.ts';

const d = dialect('json');
const c = dialect('clob');
const AT = '2024-05-01T10:20:30.123';

describe('table names', () => {
  it('applies the prefix to every table, lower-cased', () => {
    expect(sql.tableNames('App_')).toEqual({
      prefix: 'app_',
      threads: 'app_threads',
      messages: 'app_messages',
      resources: 'app_resources',
      migrations: 'app_migrations',
      vectors: 'app_message_vectors',
      vectorSpace: 'app_vector_space',
      observations: 'app_observations',
      settings: 'app_settings',
      turns: 'app_turns',
      keywords: 'app_message_terms',
      keywordCounts: 'app_message_term_counts',
      backfills: 'app_backfills',
    });
  });

  it.each(['', '1abc', 'a-b', 'x; DROP TABLE t', 'a"b', `a${'b'.repeat(30)}`])(
    'rejects the prefix %j with INVALID_ARGUMENT',
    (prefix) => {
      expect(() => sql.tableNames(prefix)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', adapter: 'oracle' }),
      );
    },
  );

  it('uses the prefix in statements', () => {
    const s = sql.selectThread(dialect('json', 'tenant7_'), 't1');
    expect(s.sql).toContain('FROM tenant7_threads t');
    expect(s.sql).not.toContain('engram_');
  });
});

describe('threads', () => {
  it('selects one thread by a named bind, with dates as UTC text', () => {
    const s = sql.selectThread(d, 't1');
    expect(s.binds).toEqual({ thread_id: 't1' });
    expect(s.sql).toMatch(/WHERE t\.id = :thread_id$/);
    expect(s.sql).toContain(`TO_CHAR(t.created_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') AS created_at_text`);
    expect(s.sql).toContain(`TO_CHAR(t.updated_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') AS updated_at_text`);
    expect(parse(s.sql).kind).toBe('query');
    expect(bindsMatch(s)).toBe(true);
  });

  it('serialises JSON-type metadata to CLOB text, and reads a CLOB column as is', () => {
    expect(sql.selectThread(d, 't1').sql).toContain('JSON_SERIALIZE(t.metadata RETURNING CLOB) AS metadata');
    const clob = sql.selectThread(c, 't1').sql;
    expect(clob).toContain('t.metadata AS metadata');
    expect(clob).not.toContain('JSON_SERIALIZE');
  });

  it('locks the row for an update, without a row limit (ORA-02014)', () => {
    expect(sql.selectThread(d, 't1').sql).not.toContain('FOR UPDATE');
    const s = sql.selectThread(d, 't1', true);
    expect(s.sql).toMatch(/WHERE t\.id = :thread_id FOR UPDATE$/);
    expect(s.sql).not.toMatch(/FETCH|OFFSET/);
    expect(bindsMatch(s)).toBe(true);
  });

  it('creates with a plain INSERT (a taken id is ORA-00001, never an update), binding every value', () => {
    const s = sql.insertThread(c, thread({ id: "x' OR '1'='1", metadata: { workingMemory: 'w' } }));
    expect(s.sql).toMatch(
      /^INSERT INTO engram_threads \(id, resource_id, title, metadata, created_at, updated_at\)\nVALUES \(:thread_id, :resource_id, :title, :metadata, TO_TIMESTAMP\(:created_at, /,
    );
    expect(s.sql).not.toMatch(/MERGE|UPDATE|OR '1'='1/);
    expect(parse(s.sql).kind).toBe('dml');
    expect(s.binds).toMatchObject({
      thread_id: "x' OR '1'='1",
      resource_id: 'r1',
      title: 'Title',
      created_at: AT,
      updated_at: AT,
    });
    expect(bindsMatch(s)).toBe(true);
  });

  it('upserts with MERGE, binding every value', () => {
    const s = sql.upsertThread(d, thread({ id: "x' OR '1'='1", metadata: { k: 'v' } }));
    expect(s.sql).toMatch(
      /^MERGE INTO engram_threads t\nUSING \(SELECT :thread_id AS id FROM dual\) s\nON \(t\.id = s\.id\)/,
    );
    expect(s.sql).toContain('WHEN MATCHED THEN UPDATE SET');
    expect(s.sql).toContain(
      'WHEN NOT MATCHED THEN INSERT (id, resource_id, title, metadata, created_at, updated_at)',
    );
    expect(s.sql).toContain(`TO_TIMESTAMP(:created_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF3')`);
    expect(s.sql).not.toContain("OR '1'='1");
    expect(s.binds).toEqual({
      thread_id: "x' OR '1'='1",
      resource_id: 'r1',
      title: 'Title',
      metadata: '{"k":"v"}',
      created_at: AT,
      updated_at: AT,
    });
    expect(parse(s.sql).kind).toBe('dml');
    expect(bindsMatch(s)).toBe(true);
  });

  it("binds an empty title as NULL (Oracle's '') and a long one as a CLOB", () => {
    expect(sql.upsertThread(d, thread({ title: '' })).binds.title).toBeNull();
    const long = '€'.repeat(1400); // 1,400 characters, 4,200 UTF-8 bytes
    expect(sql.upsertThread(d, thread({ title: long })).binds.title).toEqual({
      val: long,
      type: oracledb.DB_TYPE_CLOB,
    });
  });

  it('refuses a date outside years 1-9999 before building anything', () => {
    let error: unknown;
    try {
      sql.upsertThread(d, thread({ createdAt: new Date('+010000-01-01T00:00:00.000Z') }));
    } catch (e) {
      error = e;
    }
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(String(error)).toMatch(/thread\.createdAt/);
  });

  it('deletes the thread row; the foreign keys cascade to its messages and their vectors', () => {
    expect(sql.deleteThread(d, 't1')).toEqual({
      sql: 'DELETE FROM engram_threads WHERE id = :thread_id',
      binds: { thread_id: 't1' },
    });
  });

  it('lists a page with OFFSET/FETCH NEXT bounds as binds, ordered with id as tie-breaker', () => {
    const s = sql.listThreads(
      d,
      { resourceId: 'r1', orderBy: 'createdAt', direction: 'DESC' },
      { offset: 20, limit: 10 },
    );
    expect(s.sql).toMatch(
      /WHERE t\.resource_id = :resource_id ORDER BY t\.created_at DESC, t\.id DESC OFFSET :row_offset ROWS FETCH NEXT :row_limit ROWS ONLY$/,
    );
    expect(s.binds).toEqual({ resource_id: 'r1', row_offset: 20, row_limit: 10 });
    expect(bindsMatch(s)).toBe(true);
  });

  it('orders by updated_at ascending and returns every row when there is no limit', () => {
    const s = sql.listThreads(d, { orderBy: 'updatedAt', direction: 'ASC' }, undefined);
    expect(s.sql).toMatch(/FROM engram_threads t ORDER BY t\.updated_at ASC, t\.id ASC$/);
    expect(s.binds).toEqual({});
    expect(bindsMatch(s)).toBe(true);
  });

  it('counts with the same filter', () => {
    expect(sql.countThreads(d, { resourceId: 'r1' })).toEqual({
      sql: 'SELECT COUNT(*) AS total FROM engram_threads t WHERE t.resource_id = :resource_id',
      binds: { resource_id: 'r1' },
    });
    expect(sql.countThreads(d, {}).sql).toBe('SELECT COUNT(*) AS total FROM engram_threads t');
  });

  it('filters threads on created_at by a date range, bounds outside years 1-9999 resolved', () => {
    const start = new Date('2026-01-02T03:04:05.678Z');
    const s = sql.listThreads(
      d,
      {
        dateRange: { start, end: new Date(8.64e15), endExclusive: true },
        orderBy: 'createdAt',
        direction: 'ASC',
      },
      { offset: 0, limit: 5 },
    );
    expect(s.sql).toContain(' WHERE t.created_at >= ');
    expect(s.sql).not.toContain('range_end');
    expect(s.binds).toMatchObject({ range_start: expect.any(String) });
    expect(bindsMatch(s)).toBe(true);
    const none = sql.countThreads(d, { resourceId: 'r1', dateRange: { start: new Date(8.64e15) } });
    expect(none.sql).toBe(
      'SELECT COUNT(*) AS total FROM engram_threads t WHERE t.resource_id = :resource_id AND 1 = 0',
    );
  });

  it('locks owners and bumps updated_at through IN lists of named binds', () => {
    const owners = sql.selectForUpdate(d, 'threads', ['a', 'b']);
    expect(owners.sql).toBe('SELECT id, resource_id FROM engram_threads WHERE id IN (:t0, :t1) FOR UPDATE');
    expect(owners.binds).toEqual({ t0: 'a', t1: 'b' });
    const touch = sql.touchThreads(d, ['a', 'b', 'c'], at);
    expect(touch.sql).toContain('WHERE id IN (:t0, :t1, :t2)');
    // Raised, never set back: a write reaching the row late keeps a later stored stamp.
    expect(touch.sql).toContain('SET updated_at = GREATEST(updated_at, TO_TIMESTAMP(:updated_at');
    expect(touch.binds.updated_at).toBe(AT);
    expect(bindsMatch(owners) && bindsMatch(touch)).toBe(true);
  });
});

describe('IN lists', () => {
  it('holds 1 to 1,000 values (ORA-01795) and chunks split longer lists', () => {
    expect(() => sql.inList('m', [])).toThrow();
    expect(() =>
      sql.inList(
        'm',
        Array.from({ length: 1001 }, (_, i) => `${i}`),
      ),
    ).toThrow(/1000/);
    const ids = Array.from({ length: 2500 }, (_, i) => `id${i}`);
    const parts = sql.chunks(ids);
    expect(parts.map((p) => p.length)).toEqual([1000, 1000, 500]);
    expect(parts.flat()).toEqual(ids);
    const s = sql.selectMessagesByIds(d, parts[0]!);
    expect(Object.keys(s.binds)).toHaveLength(1000);
    expect(bindsMatch(s)).toBe(true);
  });
});

describe('messages', () => {
  it('upserts with MERGE; a message saved with another thread id of its resource moves', () => {
    const s = sql.upsertMessage(
      d,
      message({ content: { format: 2, parts: [{ type: 'text', text: 'hi' }] } }),
    );
    expect(s.sql).toMatch(/^MERGE INTO engram_messages m\nUSING \(SELECT :message_id AS id FROM dual\) s/);
    expect(s.sql).toContain('WHEN MATCHED THEN UPDATE SET m.thread_id = :thread_id,');
    expect(parse(s.sql).kind).toBe('dml');
    expect(s.binds).toEqual({
      message_id: 'm1',
      thread_id: 't1',
      resource_id: 'r1',
      message_role: 'user',
      message_type: 'text',
      content: '{"format":2,"parts":[{"type":"text","text":"hi"}]}',
      created_at: AT,
    });
    expect(bindsMatch(s)).toBe(true);
  });

  it('leaves a stored message of another resource alone: the update is conditional on the resource, which it never sets', () => {
    const s = sql.upsertMessage(d, message({ resourceId: 'bob' }));
    const [matched, notMatched] = s.sql.split('WHEN NOT MATCHED');
    expect(matched).toMatch(/\n {2}WHERE m\.resource_id = :resource_id\n$/);
    expect(matched?.split('WHERE')[0]).not.toContain('m.resource_id =');
    expect(notMatched).toContain('VALUES (s.id, :thread_id, :resource_id,');
    expect(s.binds.resource_id).toBe('bob');
    expect(bindsMatch(s)).toBe(true);
  });

  it("binds content as JSON text (a string is quoted, never '') and an empty type as NULL", () => {
    const s = sql.upsertMessage(d, message({ content: '', type: '' }));
    expect(s.binds.content).toBe('""');
    expect(s.binds.message_type).toBeNull();
    expect(sql.upsertMessage(d, message({ content: null })).binds.content).toBe('null');
  });

  it('locks the messages a write touches and deletes by id', () => {
    const lock = sql.selectForUpdate(d, 'messages', ['m1', 'm2']);
    expect(lock.sql).toBe(
      'SELECT id, thread_id, resource_id FROM engram_messages WHERE id IN (:m0, :m1) FOR UPDATE',
    );
    expect(parse(lock.sql).kind).toBe('query');
    expect(sql.deleteMessagesByIds(d, ['m1']).sql).toBe('DELETE FROM engram_messages WHERE id IN (:m0)');
    expect(bindsMatch(lock)).toBe(true);
  });

  it('pages by (created_at, id) with the thread, resource and date range as binds', () => {
    const filter: sql.MessageFilter = {
      threadId: 't1',
      resourceId: 'r1',
      dateRange: { start: at, end: new Date('2024-06-01T00:00:00.000Z'), endExclusive: true },
    };
    const s = sql.listMessages(d, filter, 'DESC', { offset: 40, limit: 40 });
    expect(s.sql).toContain(
      `WHERE m.thread_id = :thread_id AND m.resource_id = :resource_id AND m.created_at >= TO_TIMESTAMP(:range_start, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') AND m.created_at < TO_TIMESTAMP(:range_end, 'YYYY-MM-DD"T"HH24:MI:SS.FF3')`,
    );
    expect(s.sql).toMatch(
      /ORDER BY m\.created_at DESC, m\.id DESC OFFSET :row_offset ROWS FETCH NEXT :row_limit ROWS ONLY$/,
    );
    expect(s.binds).toMatchObject({
      range_start: AT,
      range_end: '2024-06-01T00:00:00.000',
      row_offset: 40,
      row_limit: 40,
    });
    expect(bindsMatch(s)).toBe(true);
    const count = sql.countMessages(d, filter);
    expect(count.sql).toMatch(/^SELECT COUNT\(\*\) AS total FROM engram_messages m WHERE /);
    expect(count.sql).not.toMatch(/ORDER BY|FETCH/);
    expect(bindsMatch(count)).toBe(true);
  });

  it('uses strict comparisons for exclusive bounds', () => {
    const s = sql.countMessages(d, {
      threadId: 't1',
      dateRange: { start: at, startExclusive: true, end: at },
    });
    expect(s.sql).toContain('m.created_at > TO_TIMESTAMP(:range_start');
    expect(s.sql).toContain('m.created_at <= TO_TIMESTAMP(:range_end');
  });

  it('resolves range bounds outside years 1-9999 without binding them', () => {
    const early = new Date('-000100-01-01T00:00:00.000Z');
    const late = new Date('+020000-01-01T00:00:00.000Z');
    const open = sql.countMessages(d, { threadId: 't1', dateRange: { start: early, end: late } });
    expect(open.sql).toBe('SELECT COUNT(*) AS total FROM engram_messages m WHERE m.thread_id = :thread_id');
    const none = sql.countMessages(d, { threadId: 't1', dateRange: { start: late } });
    expect(none.sql).toContain('1 = 0');
    expect(bindsMatch(open) && bindsMatch(none)).toBe(true);
  });

  it('reads include windows with one index-ordered branch per side, bounded by FETCH FIRST', () => {
    const target = message({ id: 'm5', threadId: 'other' });
    const s = sql.selectWindows(d, [
      { target, before: 2, after: 3 },
      { target: message({ id: 'm9' }), before: 0, after: 1 },
    ])!;
    const branches = s.sql.split('\nUNION ALL\n');
    expect(branches).toHaveLength(3);
    expect(branches[0]).toContain('m.thread_id = :w0_thread');
    expect(branches[0]).toContain(
      `(m.created_at < TO_TIMESTAMP(:w0_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') OR (m.created_at = TO_TIMESTAMP(:w0_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') AND m.id < :w0_id))`,
    );
    expect(branches[0]).toMatch(
      /ORDER BY m\.created_at DESC, m\.id DESC FETCH FIRST :w0_before ROWS ONLY\)$/,
    );
    expect(branches[1]).toMatch(/ORDER BY m\.created_at ASC, m\.id ASC FETCH FIRST :w0_after ROWS ONLY\)$/);
    expect(branches[2]).toContain('FETCH FIRST :w1_after ROWS ONLY');
    expect(s.binds).toMatchObject({
      w0_thread: 'other',
      w0_at: AT,
      w0_id: 'm5',
      w0_before: 2,
      w0_after: 3,
      w1_after: 1,
    });
    expect(s.binds).not.toHaveProperty('w1_before');
    expect(parse(s.sql).kind).toBe('query');
    expect(bindsMatch(s)).toBe(true);
  });

  it('restricts windows to the resource, and skips the query when no window has neighbours', () => {
    const s = sql.selectWindows(d, [{ target: message(), before: 1, after: 0 }], 'r1')!;
    expect(s.sql).toContain('m.thread_id = :w0_thread AND m.resource_id = :resource_id AND');
    expect(bindsMatch(s)).toBe(true);
    expect(sql.selectWindows(d, [{ target: message(), before: 0, after: 0 }])).toBeNull();
  });
});

describe('resources', () => {
  it('creates a missing row with MERGE … WHEN NOT MATCHED only', () => {
    const s = sql.insertMissingResource(d, 'r1', at);
    expect(s.sql).toMatch(
      /^MERGE INTO engram_resources r\nUSING \(SELECT :resource_id AS id FROM dual\) s\nON \(r\.id = s\.id\)\n/,
    );
    expect(s.sql).not.toContain('WHEN MATCHED');
    expect(s.sql).toContain("VALUES (s.id, NULL, 0, '{}',");
    expect(s.binds).toEqual({ resource_id: 'r1', created_at: AT });
    expect(bindsMatch(s)).toBe(true);
  });

  it('locks the resource row for the read-modify-write', () => {
    expect(sql.selectResource(c, 'r1').sql).not.toContain('FOR UPDATE');
    const s = sql.selectResource(c, 'r1', true);
    expect(s.sql).toMatch(/FROM engram_resources r WHERE r\.id = :resource_id FOR UPDATE$/);
    expect(s.sql).toContain('r.working_memory, r.working_memory_empty, r.metadata AS metadata');
    expect(bindsMatch(s)).toBe(true);
    expect(sql.selectResource(d, 'r1').sql).toContain(
      'JSON_SERIALIZE(r.metadata RETURNING CLOB) AS metadata',
    );
  });

  it('pages resource ids after a cursor in binary order (resources.list)', () => {
    const first = sql.selectResourceIds(d, null, 100);
    expect(first.sql).toBe(
      'SELECT id FROM engram_resources WHERE :after_id IS NULL OR id > :after_id ORDER BY id FETCH FIRST :row_limit ROWS ONLY',
    );
    expect(first.binds).toEqual({ after_id: null, row_limit: 100 });
    expect(parse(first.sql).kind).toBe('query');
    expect(sql.selectResourceIds(d, "r'1", 5).binds).toEqual({ after_id: "r'1", row_limit: 5 });
    expect(sql.selectResourceIds(d, "r'1", 5).sql).not.toContain("r'1");
  });

  it("stores '' working memory as NULL with the empty flag set, and null with it clear", () => {
    const empty = sql.updateResourceRow(d, { id: 'r1', workingMemory: '', metadata: {}, updatedAt: at });
    expect(empty.binds).toMatchObject({ working_memory: null, working_memory_empty: 1, metadata: '{}' });
    const none = sql.updateResourceRow(d, { id: 'r1', workingMemory: null, metadata: {}, updatedAt: at });
    expect(none.binds).toMatchObject({ working_memory: null, working_memory_empty: 0 });
    const text = sql.updateResourceRow(d, {
      id: 'r1',
      workingMemory: '# Me',
      metadata: { x: [1] },
      updatedAt: at,
    });
    expect(text.binds).toEqual({
      resource_id: 'r1',
      working_memory: '# Me',
      working_memory_empty: 0,
      metadata: '{"x":[1]}',
      updated_at: AT,
    });
    expect(bindKeys(text.binds)).toEqual([
      'METADATA',
      'RESOURCE_ID',
      'UPDATED_AT',
      'WORKING_MEMORY',
      'WORKING_MEMORY_EMPTY',
    ]);
    expect(bindsMatch(text)).toBe(true);
  });
});

describe('the bind check itself', () => {
  it('fails on a missing or an unknown bind, and ignores colons inside string literals', () => {
    expect(bindsMatch({ sql: 'SELECT :a FROM dual', binds: {} })).toBe(false);
    expect(bindsMatch({ sql: 'SELECT 1 FROM dual', binds: { a: 1 } })).toBe(false);
    expect(bindsMatch({ sql: "SELECT TO_CHAR(SYSDATE, 'HH24:MI:SS'), :a FROM dual", binds: { a: 1 } })).toBe(
      true,
    );
  });
});

describe('session setup', () => {
  it('sets binary id order and comparison in one bind-free ALTER SESSION', () => {
    expect(sql.SESSION_SETUP.sql).toBe('ALTER SESSION SET NLS_SORT = BINARY NLS_COMP = BINARY');
    expect(parse(sql.SESSION_SETUP.sql).binds).toEqual([]);
    expect(sql.SESSION_SETUP.binds).toEqual({});
  });
});
