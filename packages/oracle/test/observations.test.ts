import { isMemoryError, type ObservationRow } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { OracleStore } from '../src/index.ts';
import { MIGRATIONS } from '../src/migrations.ts';
import * as osql from '../src/observations.ts';
import type { OracleBinds, OracleResult } from '../src/oracledb.ts';
import { tableNames } from '../src/sql.ts';
import { bindsMatch, dialect, driverBinds, fakePool, parse } from './fixtures.ts';

// Unit tests only: these statements have not been run against an Oracle server here.

const d = dialect('json');
const ODD = 'a \u0000 b "q" \\ 📅 \u{10FFFF}';

function row(generation: number, version: number, body = ODD): ObservationRow {
  return {
    key: 'thread:t1',
    resourceId: 'r1',
    threadId: 't1',
    generation,
    version,
    body,
    updatedAt: new Date('2026-12-01T12:00:00.123Z'),
  };
}

const duplicate = () =>
  Object.assign(new Error('ORA-00001: unique constraint violated'), { code: 'ORA-00001' });

describe('observation DDL (migration 3)', () => {
  const migration = MIGRATIONS[2];
  const ddl = (migration?.steps(tableNames('engram_'), 'clob') ?? []).map((s) => s.sql);

  it('runs on every server version and is plain DDL', () => {
    expect(migration?.minMajorVersion).toBeUndefined();
    for (const sql of ddl) expect(parse(sql)).toEqual({ binds: [], kind: 'ddl' });
  });

  it('keys the table by (log_key, generation), the body a CLOB, millisecond updated_at, indexed by thread', () => {
    const [table, index] = ddl;
    expect(table).toMatch(/^CREATE TABLE engram_observations \(/);
    expect(table).toContain('log_key VARCHAR2(300 CHAR) NOT NULL');
    expect(table).toContain('thread_id VARCHAR2(255 CHAR),');
    expect(table).toContain('body CLOB NOT NULL');
    expect(table).toContain('updated_at TIMESTAMP(3) NOT NULL');
    expect(table).toContain('CONSTRAINT engram_observations_pk PRIMARY KEY (log_key, generation)');
    expect(index).toBe('CREATE INDEX engram_observations_thread_idx ON engram_observations (thread_id)');
  });

  it('is created and recorded on 19c, where the vector migration is skipped', async () => {
    const { pool, sent } = fakePool(1_919_000_000);
    await new OracleStore({ pool }).init();
    expect(sent.some((s) => s.sql.startsWith('CREATE TABLE engram_observations'))).toBe(true);
    const recorded = sent.filter((s) => s.sql.startsWith('INSERT INTO engram_migrations'));
    // Every version but the vector tables' (2).
    const versions = MIGRATIONS.map((_, i) => i + 1).filter((v) => v !== 2);
    expect(recorded.map((s) => s.binds.version)).toEqual(versions);
    expect(versions).toContain(3);
  });
});

describe('observation statements', () => {
  it('bind every placeholder by name', () => {
    const statements = [
      osql.selectObservations(d, 'thread:t1'),
      osql.selectObservations(d, 'thread:t1', true),
      osql.updateObservation(d, { generation: 1, version: 1 }, row(1, 2)),
      osql.updateObservation(d, { generation: 1, version: 1 }, row(2, 2)),
      osql.insertObservation(d, row(1, 1)),
      osql.deleteObservationsOfThread(d, 't1'),
    ];
    for (const statement of statements) expect(bindsMatch(statement)).toBe(true);
    expect(statements.map((s) => parse(s.sql).kind)).toEqual(['query', 'query', 'dml', 'dml', 'dml', 'dml']);
  });

  it('read the newest generation, or all of them oldest first, with updated_at as UTC text', () => {
    expect(osql.selectObservations(d, 'thread:t1', true).sql).toMatch(
      /ORDER BY generation DESC\nFETCH FIRST 1 ROWS ONLY$/,
    );
    const all = osql.selectObservations(d, 'thread:t1');
    expect(all.sql).toMatch(/WHERE log_key = :log_key\nORDER BY generation$/);
    expect(all.sql).toContain(`TO_CHAR(updated_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF3') AS updated_at_text`);
    expect(all.binds).toEqual({ log_key: 'thread:t1' });
  });

  it('compare the expected generation and version; replace body and owner only within the generation', () => {
    const replace = osql.updateObservation(d, { generation: 2, version: 7 }, row(2, 8));
    expect(replace.sql).toContain(
      'SET version = :next_version, resource_id = :resource_id, body = :body, updated_at = TO_TIMESTAMP(',
    );
    expect(replace.sql).toMatch(
      /WHERE log_key = :log_key AND generation = :generation AND version = :version$/,
    );
    expect(replace.binds).toEqual({
      next_version: 8,
      log_key: 'thread:t1',
      generation: 2,
      version: 7,
      resource_id: 'r1',
      body: JSON.stringify(ODD),
      updated_at: '2026-12-01T12:00:00.123',
    });
    const seal = osql.updateObservation(d, { generation: 2, version: 7 }, row(3, 8));
    expect(seal.sql).toContain('SET version = :next_version\nWHERE');
    expect(seal.binds).toEqual({ next_version: 8, log_key: 'thread:t1', generation: 2, version: 7 });
  });

  it('store the body as a JSON string literal: never NULL, a CLOB past 4,000 bytes', async () => {
    const empty = osql.insertObservation(d, row(1, 1, ''));
    expect(empty.binds.body).toBe('""');
    const resourceLog = osql.insertObservation(d, { ...row(1, 1), key: 'resource:r1', threadId: null });
    expect(resourceLog.binds).toMatchObject({ log_key: 'resource:r1', thread_id: null, generation: 1 });
    const big = osql.insertObservation(d, row(1, 1, '中'.repeat(1_400)));
    const types = Object.fromEntries((await driverBinds(big.binds)).map((b) => [b.name, b.type]));
    expect(types.body).toBe('DB_TYPE_CLOB');
    expect(types.updated_at).toBe('DB_TYPE_VARCHAR');
  });

  it('read a row back exactly', () => {
    const read = osql.rowToObservation({
      LOG_KEY: 'thread:t1',
      RESOURCE_ID: 'r1',
      THREAD_ID: 't1',
      GENERATION: 2,
      VERSION: 9,
      BODY: JSON.stringify(ODD),
      UPDATED_AT_TEXT: '2026-12-01T12:00:00.123',
    });
    expect(read).toEqual(row(2, 9));
  });
});

/** A store on a fake pool, opened, with what it sent while opening forgotten. */
async function storeOn(answer: (sql: string, binds: OracleBinds) => OracleResult) {
  const fake = fakePool(undefined, answer);
  const store = new OracleStore({ pool: fake.pool });
  await store.init();
  fake.sent.length = 0;
  fake.events.length = 0;
  const log = store.observations;
  if (!log) throw new Error('the store declares no observations');
  return { log, store, ...fake };
}

const heads = (sent: { sql: string }[]) => sent.map((s) => s.sql.split('\n')[0]);

/** The thread lock of the check after a thread log's swap (the thread exists) … */
const THREAD_LOCK = /^SELECT id, resource_id FROM engram_threads WHERE id IN \(:t0\) FOR UPDATE$/;
/** … answered with the thread; every other statement by `answer`. */
const withThread =
  (answer: (sql: string, binds: OracleBinds) => OracleResult) => (sql: string, binds: OracleBinds) =>
    THREAD_LOCK.test(sql) ? { rows: [{ ID: 't1', RESOURCE_ID: 'r1' }] } : answer(sql, binds);
/** The statements of the swaps themselves, without the checks' thread locks. */
const swaps = (sent: { sql: string }[]) => heads(sent.filter((s) => !THREAD_LOCK.test(s.sql)));

describe('swaps through the driver (fake connection)', () => {
  it('the first swap inserts generation 1 and commits, then the thread is checked under its lock; ORA-00001 (a row exists) is false, rolled back', async () => {
    let taken = false;
    const { log, sent, events } = await storeOn(
      withThread(() => {
        if (taken) throw duplicate();
        return { rowsAffected: 1 };
      }),
    );
    expect(await log.swap(null, row(1, 1))).toBe(true);
    expect(heads(sent)).toEqual([
      expect.stringMatching(/^INSERT INTO engram_observations /),
      expect.stringMatching(THREAD_LOCK),
    ]);
    expect(events).toEqual(['commit', 'release', 'commit', 'release']);
    taken = true;
    events.length = 0;
    expect(await log.swap(null, row(1, 1))).toBe(false);
    expect(events).toEqual(['rollback', 'release']);
  });

  it('a swap within the generation is one UPDATE; no row updated (stale version) is false', async () => {
    let affected = 1;
    const { log, sent } = await storeOn(withThread(() => ({ rowsAffected: affected })));
    expect(await log.swap({ generation: 1, version: 1 }, row(1, 2))).toBe(true);
    affected = 0;
    expect(await log.swap({ generation: 1, version: 1 }, row(1, 2))).toBe(false);
    expect(swaps(sent)).toEqual(['UPDATE engram_observations', 'UPDATE engram_observations']);
  });

  it('a new generation raises the old row, then inserts; a lost insert rolls the raise back', async () => {
    let inserted = true;
    const { log, sent, events } = await storeOn(
      withThread((sql) => {
        if (sql.startsWith('INSERT') && !inserted) throw duplicate();
        return { rowsAffected: 1 };
      }),
    );
    expect(await log.swap({ generation: 1, version: 3 }, row(2, 4))).toBe(true);
    expect(swaps(sent)).toEqual([
      'UPDATE engram_observations',
      expect.stringMatching(/^INSERT INTO engram_observations /),
    ]);
    expect(sent[1]?.binds).toMatchObject({ generation: 2, version: 4 });
    expect(events).toEqual(['commit', 'release', 'commit', 'release']);
    inserted = false;
    events.length = 0;
    expect(await log.swap({ generation: 1, version: 3 }, row(2, 4))).toBe(false);
    expect(events).toEqual(['rollback', 'release']);
  });

  it('a swap into a thread the lock does not find removes the thread log in the check, NOT_FOUND', async () => {
    const { log, sent, events } = await storeOn((sql) =>
      sql.startsWith('SELECT') ? { rows: [] } : { rowsAffected: 1 },
    );
    await expect(log.swap(null, row(1, 1))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(heads(sent)).toEqual([
      expect.stringMatching(/^INSERT INTO engram_observations /),
      expect.stringMatching(THREAD_LOCK),
      'DELETE FROM engram_observations WHERE thread_id = :thread_id',
    ]);
    expect(events).toEqual(['commit', 'release', 'commit', 'release']);
  });

  it('head and generations read the rows; other errors are mapped, not false', async () => {
    const stored = {
      LOG_KEY: 'thread:t1',
      RESOURCE_ID: 'r1',
      THREAD_ID: 't1',
      GENERATION: 1,
      VERSION: 1,
      BODY: JSON.stringify(ODD),
      UPDATED_AT_TEXT: '2026-12-01T12:00:00.123',
    };
    let failing = false;
    const { log } = await storeOn(() => {
      if (failing) throw Object.assign(new Error('ORA-01653: unable to extend table'), { code: 'ORA-01653' });
      return { rows: [stored] };
    });
    expect(await log.head('thread:t1')).toEqual(row(1, 1));
    expect(await log.generations('thread:t1')).toEqual([row(1, 1)]);
    failing = true;
    const error = await log.swap(null, row(1, 1)).catch((e: unknown) => e);
    expect(isMemoryError(error, 'STORAGE')).toBe(true);
  });

  it('deleteThread locks the thread and deletes its logs in the same transaction', async () => {
    const { store, sent, events } = await storeOn(() => ({ rowsAffected: 1 }));
    await store.deleteThread({ threadId: 't1' });
    expect(heads(sent)).toEqual([
      'SELECT id, resource_id FROM engram_threads WHERE id IN (:t0) FOR UPDATE',
      'DELETE FROM engram_observations WHERE thread_id = :thread_id',
      'DELETE FROM engram_turns WHERE thread_id = :thread_id',
      'DELETE FROM engram_threads WHERE id = :thread_id',
    ]);
    expect(sent[1]?.binds).toEqual({ thread_id: 't1' });
    expect(events).toEqual(['commit', 'release']);
  });

  // A swap in flight starting a generation locks the newest row and inserts the next, which a
  // DELETE already reading does not see: the erasure deletes until a DELETE finds nothing.
  it('deleteResource deletes the resource log again until nothing is left, in its last transaction', async () => {
    const found = [2, 1, 0];
    const { store, sent, events } = await storeOn((sql) => {
      if (sql.startsWith('SELECT')) return { rows: [] };
      if (sql.startsWith('DELETE FROM engram_observations')) return { rowsAffected: found.shift() ?? 1 };
      return { rowsAffected: 1 };
    });
    events.length = 0;
    await store.deleteResource({ resourceId: 'r1' });
    const deletes = sent.filter((s) => s.sql.startsWith('DELETE FROM engram_observations'));
    expect(deletes.map((s) => s.binds)).toEqual([
      { log_key: 'resource:r1' },
      { log_key: 'resource:r1' },
      { log_key: 'resource:r1' },
    ]);
    expect(found).toEqual([]);
    expect(heads(sent).at(-1)).toMatch(/^DELETE FROM engram_resources /);
    expect(events.slice(-2)).toEqual(['commit', 'release']);
  });
});
