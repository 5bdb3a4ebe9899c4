import { defaultKeywordAnalyzer, KEYWORD_BACKFILL, NO_KEYWORD_INDEX } from '@engram/core/driver';
import { describe, expect, it } from 'vitest';
import {
  createMigrationsTable,
  DDL_LOCK_TIMEOUT,
  insertAppliedVersion,
  LATEST_VERSION,
  MIGRATIONS,
  metadataColumn,
  migrate,
  selectAppliedVersions,
  selectMetadataType,
} from '../src/migrations.ts';
import type { Session } from '../src/session.ts';
import { tableNames } from '../src/sql.ts';
import { at, bindsMatch, oracledb, parse } from './fixtures.ts';

const n = tableNames('engram_');
const steps = (json: 'json' | 'clob') => MIGRATIONS.flatMap((m) => m.steps(n, json));

describe('migrations', () => {
  it('is an append-only list whose length is the latest version', () => {
    expect(LATEST_VERSION).toBe(MIGRATIONS.length);
    expect(LATEST_VERSION).toBeGreaterThanOrEqual(1);
  });

  it('stores metadata as the JSON type on 21c+ and as a CLOB checked IS JSON on 19c', () => {
    expect(metadataColumn('json', 'c')).toBe('metadata JSON NOT NULL');
    expect(metadataColumn('clob', 'engram_threads_metadata_json')).toBe(
      'metadata CLOB NOT NULL CONSTRAINT engram_threads_metadata_json CHECK (metadata IS JSON)',
    );
    const json = steps('json')
      .map((s) => s.sql)
      .join('\n');
    const clob = steps('clob')
      .map((s) => s.sql)
      .join('\n');
    expect(json.match(/metadata JSON NOT NULL/g)).toHaveLength(2);
    expect(json).not.toContain('IS JSON');
    expect(clob.match(/CHECK \(metadata IS JSON\)/g)).toHaveLength(2);
    expect(clob).not.toMatch(/metadata JSON\b/);
  });

  it('creates the tables with millisecond timestamps, the flag column and the message index', () => {
    const ddl = steps('json')
      .map((s) => s.sql)
      .join('\n');
    expect(ddl).toContain('CREATE TABLE engram_threads (');
    expect(ddl).toContain('CREATE TABLE engram_messages (');
    expect(ddl).toContain('CREATE TABLE engram_resources (');
    expect(ddl.match(/TIMESTAMP\(3\) NOT NULL/g)).toHaveLength(7);
    expect(ddl).toContain('working_memory_empty NUMBER(1) DEFAULT 0 NOT NULL');
    expect(ddl).toContain(
      'CREATE INDEX engram_messages_thread_idx ON engram_messages (thread_id, created_at, id)',
    );
    expect(ddl).toContain(
      'CREATE INDEX engram_threads_resource_idx ON engram_threads (resource_id, created_at, id)',
    );
    expect(ddl).toContain('FOREIGN KEY (thread_id) REFERENCES engram_threads (id) ON DELETE CASCADE');
    expect(ddl).toMatch(/id VARCHAR2\(255 CHAR\) NOT NULL/);
  });

  it('makes every step a bind-free DDL statement that tolerates its object already existing', () => {
    for (const step of [createMigrationsTable(n), ...steps('json'), ...steps('clob')]) {
      expect(parse(step.sql)).toEqual({ binds: [], kind: 'ddl' });
      expect(step.sql).not.toMatch(/;\s*$/);
      const expected = step.sql.startsWith('CREATE INDEX') ? ['ORA-00955', 'ORA-01408'] : ['ORA-00955'];
      expect(step.alreadyDone).toEqual(expected);
    }
  });

  it('keeps every derived identifier within 128 bytes even for the longest prefix', () => {
    const long = tableNames(`p${'x'.repeat(29)}`);
    const ddl = [createMigrationsTable(long), ...MIGRATIONS.flatMap((m) => m.steps(long, 'clob'))].map(
      (s) => s.sql,
    );
    const found = ddl.join('\n').match(new RegExp(`\\b${long.prefix}[a-z_]+`, 'g')) ?? [];
    expect(found.length).toBeGreaterThan(5);
    for (const identifier of found) expect(Buffer.byteLength(identifier)).toBeLessThanOrEqual(128);
  });

  it('records versions and reads the metadata type with named binds', () => {
    const insert = insertAppliedVersion(n, 1, 'first', at);
    expect(insert.binds).toEqual({ version: 1, description: 'first', applied_at: '2024-05-01T10:20:30.123' });
    expect(bindsMatch(insert)).toBe(true);
    expect(bindsMatch(selectAppliedVersions(n))).toBe(true);
    const type = selectMetadataType(n);
    expect(type.binds).toEqual({ table_name: 'ENGRAM_THREADS' });
    expect(type.sql).toContain('FROM user_tab_columns');
    expect(bindsMatch(type)).toBe(true);
    expect(parse(DDL_LOCK_TIMEOUT.sql).binds).toEqual([]);
  });
});

describe('the keyword index turned off (keywords: false) and on again', () => {
  /** A session at the latest version: `pending` says whether a keyword backfill is recorded. */
  function latestSession(pending: boolean) {
    const sent: Array<{ sql: string; binds: unknown }> = [];
    const events: string[] = [];
    const session = {
      connection: {
        oracleServerVersion: 2_304_000_000,
        commit: async () => {
          events.push('commit');
        },
        rollback: async () => {},
      },
      run: async (s: { sql: string; binds: unknown }) => {
        sent.push(s);
        events.push(s.sql.split(' (')[0] as string);
        return 0;
      },
      rows: async (s: { sql: string; binds: unknown }) => {
        sent.push(s);
        if (s.sql.startsWith('SELECT version')) return MIGRATIONS.map((_, i) => ({ VERSION: i + 1 }));
        if (s.sql.startsWith('SELECT name FROM engram_backfills'))
          return pending ? [{ NAME: KEYWORD_BACKFILL }] : [];
        if (s.sql.includes('user_tab_columns')) return [{ DATA_TYPE: 'JSON' }];
        return [];
      },
      count: async (s: { sql: string; binds: unknown }) => {
        sent.push(s);
        return 0;
      },
    } as unknown as Session;
    return { session, sent, events };
  }
  const progress = () => {};

  it('an open with the index off records the keyword backfill and runs none', async () => {
    const { session, sent, events } = latestSession(true);
    await migrate(session, n, 'json', oracledb.DB_TYPE_CLOB, { analyzer: NO_KEYWORD_INDEX, progress });
    const record = sent.find((s) => s.sql.startsWith('INSERT INTO engram_backfills'));
    expect(record).toEqual({
      sql: 'INSERT INTO engram_backfills (name) VALUES (:name)',
      binds: { name: KEYWORD_BACKFILL },
    });
    expect(bindsMatch(record as never)).toBe(true);
    expect(events.slice(-2)).toEqual(['INSERT INTO engram_backfills', 'commit']);
    expect(sent.some((s) => s.sql.includes('engram_message_term_counts'))).toBe(false);
  });

  it('an open with the index on runs a recorded backfill, then removes the record', async () => {
    const { session, sent, events } = latestSession(true);
    await migrate(session, n, 'json', oracledb.DB_TYPE_CLOB, { analyzer: defaultKeywordAnalyzer, progress });
    const unindexed = sent.findIndex((s) =>
      s.sql.includes('NOT EXISTS (SELECT 1 FROM engram_message_term_counts'),
    );
    const removed = sent.findIndex((s) =>
      s.sql.startsWith('DELETE FROM engram_backfills WHERE name = :name'),
    );
    expect(unindexed).toBeGreaterThan(-1);
    expect(removed).toBeGreaterThan(unindexed);
    expect(events.slice(-2)).toEqual(['DELETE FROM engram_backfills WHERE name = :name', 'commit']);
  });

  it('an open with the index on and nothing recorded runs no backfill', async () => {
    const { session, sent } = latestSession(false);
    await migrate(session, n, 'json', oracledb.DB_TYPE_CLOB, { analyzer: defaultKeywordAnalyzer, progress });
    expect(sent.some((s) => s.sql.includes('engram_message_term_counts'))).toBe(false);
    expect(sent.some((s) => /^(INSERT INTO|DELETE FROM) engram_backfills/.test(s.sql))).toBe(false);
  });
});
