import { describe, expect, it } from 'vitest';
import { OracleStore } from '../src/index.ts';
import { MIGRATIONS } from '../src/migrations.ts';
import type { OracleBinds, OracleResult } from '../src/oracledb.ts';
import { mergeSetting, selectSetting } from '../src/settings.ts';
import { tableNames } from '../src/sql.ts';
import { bindsMatch, dialect, driverBinds, fakePool, parse } from './fixtures.ts';

// Unit tests only: these statements have not been run against an Oracle server here.

const d = dialect('json');
const at = new Date('2026-12-01T12:00:00.123Z');

describe('settings DDL (migration 4)', () => {
  const migration = MIGRATIONS[3];
  const ddl = (migration?.steps(tableNames('engram_'), 'clob') ?? []).map((s) => s.sql);

  it('runs on every server version and is one plain CREATE TABLE keyed by setting_key', () => {
    expect(migration?.minMajorVersion).toBeUndefined();
    expect(ddl).toHaveLength(1);
    const [table] = ddl;
    expect(parse(table!)).toEqual({ binds: [], kind: 'ddl' });
    expect(table).toMatch(/^CREATE TABLE engram_settings \(/);
    expect(table).toContain('setting_key VARCHAR2(512 CHAR) NOT NULL');
    expect(table).toContain(
      'setting_value CLOB NOT NULL CONSTRAINT engram_settings_json CHECK (setting_value IS JSON)',
    );
    expect(table).toContain('updated_at TIMESTAMP(3) NOT NULL');
    expect(table).toContain('CONSTRAINT engram_settings_pk PRIMARY KEY (setting_key)');
  });
});

describe('settings statements', () => {
  it('bind every placeholder by name; MERGE inserts or replaces value and updated_at', () => {
    const select = selectSetting(d, 'memory-config');
    const merge = mergeSetting(d, 'memory-config', '{"a":1}', at);
    expect(bindsMatch(select)).toBe(true);
    expect(bindsMatch(merge)).toBe(true);
    expect([parse(select.sql).kind, parse(merge.sql).kind]).toEqual(['query', 'dml']);
    expect(select.sql).toBe(
      'SELECT JSON_SERIALIZE(setting_value RETURNING CLOB) AS setting_value FROM engram_settings WHERE setting_key = :setting_key',
    );
    expect(selectSetting(dialect('clob'), 'k').sql, 'the same on a CLOB schema').toBe(
      selectSetting(d, 'k').sql,
    );
    expect(merge.sql).toMatch(
      /^MERGE INTO engram_settings t\nUSING \(SELECT :setting_key AS setting_key FROM dual\) s/,
    );
    expect(merge.sql).toContain(
      'WHEN MATCHED THEN UPDATE SET t.setting_value = :setting_value, t.updated_at = TO_TIMESTAMP(:updated_at, \'YYYY-MM-DD"T"HH24:MI:SS.FF3\')',
    );
    expect(merge.sql).toContain('WHEN NOT MATCHED THEN INSERT (setting_key, setting_value, updated_at)');
    expect(merge.binds).toEqual({
      setting_key: 'memory-config',
      setting_value: '{"a":1}',
      updated_at: '2026-12-01T12:00:00.123',
    });
  });

  it('bind a value past 4,000 bytes as a CLOB', async () => {
    const big = mergeSetting(d, 'k', JSON.stringify({ text: '中'.repeat(1_400) }), at);
    const types = Object.fromEntries((await driverBinds(big.binds)).map((b) => [b.name, b.type]));
    expect(types.setting_value).toBe('DB_TYPE_CLOB');
    expect(types.setting_key).toBe('DB_TYPE_VARCHAR');
  });
});

/** A store on a fake pool, opened, with what it sent while opening forgotten. */
async function storeOn(answer: (sql: string, binds: OracleBinds) => OracleResult) {
  const fake = fakePool(undefined, answer);
  const store = new OracleStore({ pool: fake.pool });
  await store.init();
  fake.sent.length = 0;
  fake.events.length = 0;
  const settings = store.settings;
  if (!settings) throw new Error('the store declares no settings');
  return { settings, ...fake };
}

describe('settings through the driver (fake connection)', () => {
  it('creates and records the table on 19c', async () => {
    const { pool, sent } = fakePool(1_919_000_000);
    await new OracleStore({ pool }).init();
    expect(sent.some((s) => s.sql.startsWith('CREATE TABLE engram_settings'))).toBe(true);
  });

  it('put is one MERGE, committed, again after ORA-00001 (a concurrent first put); get parses the stored text', async () => {
    let duplicates = 1;
    const { settings, sent, events } = await storeOn((sql) => {
      if (sql.startsWith('MERGE') && duplicates-- > 0) {
        throw Object.assign(new Error('ORA-00001: unique constraint violated'), { code: 'ORA-00001' });
      }
      if (sql.startsWith('SELECT') && sql.includes('FROM engram_settings'))
        return { rows: [{ SETTING_VALUE: '{"mode":"schema","n":[1,2]}' }] };
      return { rowsAffected: 1 };
    });
    await settings.put('memory-config', { mode: 'schema', n: [1, 2] });
    expect(sent.map((s) => s.sql.split('\n')[0])).toEqual([
      'MERGE INTO engram_settings t',
      'MERGE INTO engram_settings t',
    ]);
    expect(sent[1]?.binds).toMatchObject({
      setting_key: 'memory-config',
      setting_value: '{"mode":"schema","n":[1,2]}',
    });
    expect(events).toEqual(['commit', 'release']);
    expect(await settings.get('memory-config')).toEqual({ mode: 'schema', n: [1, 2] });
  });

  it('a refused key or value sends nothing', async () => {
    const { settings, sent } = await storeOn(() => ({ rowsAffected: 1 }));
    await expect(settings.put('', { a: 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(settings.put('k', [] as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(sent).toEqual([]);
  });

  it('an unknown key reads null', async () => {
    const { settings } = await storeOn(() => ({ rows: [] }));
    expect(await settings.get('nothing')).toBeNull();
  });
});
