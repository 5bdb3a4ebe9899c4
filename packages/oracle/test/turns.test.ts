import type { TurnRow } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { OracleStore } from '../src/index.ts';
import { MIGRATIONS } from '../src/migrations.ts';
import type { OracleBinds, OracleResult } from '../src/oracledb.ts';
import { tableNames } from '../src/sql.ts';
import * as tsql from '../src/turns.ts';
import { bindsMatch, dialect, driverBinds, fakePool, parse } from './fixtures.ts';

// Unit tests only: these statements have not been run against an Oracle server here.

const d = dialect('json');
const ODD = '{"a":"\u0000 b \\"q\\" \\\\ 📅 \u{10FFFF}"}';
const AT = new Date('2026-12-01T12:00:00.123Z');

function turn(id = 'm1', body = ODD): TurnRow {
  return { id, threadId: 't1', resourceId: 'r1', createdAt: AT, body };
}

const columns = (row: TurnRow) => ({
  ID: row.id,
  THREAD_ID: row.threadId,
  RESOURCE_ID: row.resourceId,
  CREATED_AT: row.createdAt.getTime(),
  BODY: JSON.stringify(row.body),
});

describe('turn DDL (migration 5)', () => {
  const migration = MIGRATIONS[4];
  const ddl = (migration?.steps(tableNames('engram_'), 'clob') ?? []).map((s) => s.sql);

  it('runs on every server version and is plain DDL', () => {
    expect(migration?.minMajorVersion).toBeUndefined();
    expect(ddl).toHaveLength(2);
    for (const sql of ddl) expect(parse(sql)).toEqual({ binds: [], kind: 'ddl' });
  });

  it('keys the table by id, the body a CLOB, created_at epoch ms, indexed by (thread_id, created_at, id)', () => {
    const [table, index] = ddl;
    expect(table).toMatch(/^CREATE TABLE engram_turns \(/);
    expect(table).toContain('thread_id VARCHAR2(255 CHAR) NOT NULL');
    expect(table).toContain('created_at NUMBER(16) NOT NULL');
    expect(table).toContain('body CLOB NOT NULL');
    expect(table).toContain('CONSTRAINT engram_turns_pk PRIMARY KEY (id)');
    expect(index).toBe('CREATE INDEX engram_turns_thread_idx ON engram_turns (thread_id, created_at, id)');
  });
});

describe('turn statements', () => {
  it('bind every placeholder by name', () => {
    const statements = [
      tsql.mergeTurn(d, turn()),
      tsql.selectTurn(d, 'm1'),
      tsql.selectTurns(d, 't1', 10, null),
      tsql.selectTurns(d, 't1', 10, { createdAt: AT, id: 'm9' }),
      tsql.deleteTurnsOfThread(d, 't1'),
      tsql.deleteTurnsByIds(d, ['a', 'b']),
    ];
    for (const statement of statements) expect(bindsMatch(statement)).toBe(true);
    expect(statements.map((s) => parse(s.sql).kind)).toEqual([
      'dml',
      'query',
      'query',
      'query',
      'dml',
      'dml',
    ]);
  });

  it('list newest first, strictly older than the cursor, a page at most', () => {
    const first = tsql.selectTurns(d, 't1', 10, null);
    expect(first.sql).toMatch(
      /WHERE thread_id = :thread_id\nORDER BY created_at DESC, id DESC\nFETCH FIRST :limit ROWS ONLY$/,
    );
    expect(first.binds).toEqual({ thread_id: 't1', limit: 10 });
    const next = tsql.selectTurns(d, 't1', 5, { createdAt: AT, id: 'm9' });
    expect(next.sql).toContain(
      'AND (created_at < :before_at OR (created_at = :before_at AND id < :before_id))',
    );
    expect(next.binds).toEqual({ thread_id: 't1', limit: 5, before_at: AT.getTime(), before_id: 'm9' });
  });

  it('store the body as a JSON string literal (never NULL), a CLOB past 4,000 bytes, created_at as ms', async () => {
    expect(tsql.mergeTurn(d, turn('m1', '')).binds.body).toBe('""');
    const merge = tsql.mergeTurn(d, turn());
    expect(merge.sql).toMatch(
      /^MERGE INTO engram_turns t\nUSING \(SELECT :id AS id FROM dual\) s\nON \(t\.id = s\.id\)/,
    );
    expect(merge.binds).toMatchObject({
      id: 'm1',
      thread_id: 't1',
      created_at: AT.getTime(),
      body: JSON.stringify(ODD),
    });
    const big = tsql.mergeTurn(d, turn('m1', '中'.repeat(1_400)));
    const types = Object.fromEntries((await driverBinds(big.binds)).map((b) => [b.name, b.type]));
    expect(types.body).toBe('DB_TYPE_CLOB');
    expect(types.created_at).toBe('DB_TYPE_NUMBER');
  });

  it('read a row back exactly', () => {
    expect(tsql.rowToTurn(columns(turn()))).toEqual(turn());
  });
});

/** A store on a fake pool, opened, with what it sent while opening forgotten. */
async function storeOn(answer: (sql: string, binds: OracleBinds) => OracleResult) {
  const fake = fakePool(undefined, answer);
  const store = new OracleStore({ pool: fake.pool });
  await store.init();
  fake.sent.length = 0;
  fake.events.length = 0;
  const turns = store.turns;
  if (!turns) throw new Error('the store declares no turns');
  return { turns, store, ...fake };
}

const heads = (sent: { sql: string }[]) => sent.map((s) => s.sql.split('\n')[0]);
const duplicate = () =>
  Object.assign(new Error('ORA-00001: unique constraint violated'), { code: 'ORA-00001' });

describe('turns through the driver (fake connection)', () => {
  it('put is one MERGE under its thread row lock, committed; a concurrent insert of the id (ORA-00001) runs it again', async () => {
    let failures = 1;
    const { turns, sent, events } = await storeOn((sql) => {
      // The write locks the thread (`places`): it exists, of the row's resource.
      if (sql.includes('FOR UPDATE')) return { rows: [{ ID: 't1', RESOURCE_ID: 'r1' }] };
      // Core reads the id first (another resource's row is refused): none stored.
      if (sql.startsWith('SELECT')) return { rows: [] };
      if (failures-- > 0) throw duplicate();
      return { rowsAffected: 1 };
    });
    await turns.put(turn());
    expect(heads(sent)[0]).toMatch(/^SELECT /);
    expect(sent[1]?.sql).toBe('SELECT id, resource_id FROM engram_threads WHERE id IN (:t0) FOR UPDATE');
    expect(heads(sent).slice(2)).toEqual(['MERGE INTO engram_turns t', 'MERGE INTO engram_turns t']);
    // The read's connection released, then the write's committed and released.
    expect(events).toEqual(['release', 'commit', 'release']);
  });

  it('put into a thread the lock does not find writes nothing: NOT_FOUND, rolled back', async () => {
    const { turns, sent } = await storeOn((sql) =>
      sql.startsWith('SELECT') ? { rows: [] } : { rowsAffected: 1 },
    );
    await expect(turns.put(turn())).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(sent.some((s) => s.sql.startsWith('MERGE'))).toBe(false);
  });

  it('get and list read the rows back', async () => {
    const { turns, sent } = await storeOn(() => ({ rows: [columns(turn())] }));
    expect(await turns.get('m1')).toEqual(turn());
    expect(await turns.list('t1', 3, { createdAt: AT, id: 'm2' })).toEqual([turn()]);
    expect(sent[1]?.binds).toEqual({ thread_id: 't1', limit: 3, before_at: AT.getTime(), before_id: 'm2' });
  });

  it('deleteMessages deletes the turns of more than 1,000 messages in IN lists of 1,000', async () => {
    const ids = Array.from({ length: 1_001 }, (_, i) => `m${i}`);
    const { store, sent } = await storeOn((sql) =>
      sql.includes('FOR UPDATE')
        ? { rows: ids.map((id) => ({ ID: id, THREAD_ID: 't1', RESOURCE_ID: 'r1' })) }
        : { rowsAffected: 1 },
    );
    await store.deleteMessages(ids);
    const deletes = sent.filter((s) => s.sql.startsWith('DELETE FROM engram_turns'));
    expect(deletes.map((s) => Object.keys(s.binds).length)).toEqual([1_000, 1]);
  });
});
