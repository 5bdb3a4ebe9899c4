import { createRequire } from 'node:module';
import type { Message, Thread } from '@engram/core';
import {
  loadOracledb,
  type OracleBinds,
  type OracleConnection,
  type OraclePool,
  type OracleResult,
} from '../src/oracledb.ts';
import { type Dialect, type JsonStorage, type Statement, tableNames } from '../src/sql.ts';

/** The real driver module (loading it needs no server). */
export const oracledb = loadOracledb();

/** A dialect as `init()` builds it, with the real `DB_TYPE_CLOB`. */
export function dialect(json: JsonStorage = 'json', prefix = 'engram_'): Dialect {
  return {
    names: tableNames(prefix),
    json,
    clobType: oracledb.DB_TYPE_CLOB,
    vectorType: oracledb.DB_TYPE_VECTOR,
    vectors: true,
  };
}

interface DriverStatement {
  _prepare(sql: string): void;
  bindInfoDict: Map<string, unknown>;
  isQuery: boolean;
  isDml: boolean;
  isDdl: boolean;
  isPlSql: boolean;
}

const { Statement: ThinStatement } = createRequire(import.meta.url)('oracledb/lib/thin/statement.js') as {
  Statement: new () => DriverStatement;
};

/**
 * Parses SQL with the driver's own thin-mode parser (what `execute` does before sending it):
 * the bind names it finds (upper-cased, as the driver matches them) and the statement kind.
 */
export function parse(sql: string): { binds: string[]; kind: 'query' | 'dml' | 'ddl' | 'plsql' | 'other' } {
  const statement = new ThinStatement();
  statement._prepare(sql);
  const kind = statement.isQuery
    ? 'query'
    : statement.isDml
      ? 'dml'
      : statement.isDdl
        ? 'ddl'
        : statement.isPlSql
          ? 'plsql'
          : 'other';
  return { binds: [...statement.bindInfoDict.keys()].sort(), kind };
}

interface DriverBind {
  name: string;
  type?: { name: string };
  maxSize?: number;
  dir: number;
}

const { BIND_IN } = createRequire(import.meta.url)('oracledb') as { BIND_IN: number };

const DriverConnection = createRequire(import.meta.url)('oracledb/lib/connection.js') as new () => {
  _processExecuteBinds(binds: OracleBinds): Promise<DriverBind[]>;
};

/**
 * How the driver itself normalises a bind object before sending it (its `execute` does the same,
 * no server needed): the database type and maximum size it chose for each bind.
 */
export async function driverBinds(
  binds: OracleBinds,
): Promise<Array<{ name: string; type: string; maxSize?: number; in: boolean }>> {
  const processed = await new DriverConnection()._processExecuteBinds(binds);
  return processed.map((b) => ({
    name: b.name,
    type: b.type?.name ?? '?',
    maxSize: b.maxSize,
    in: b.dir === BIND_IN,
  }));
}

/** Upper-cased, sorted keys of a bind object: what the driver matches against the SQL. */
export function bindKeys(binds: OracleBinds): string[] {
  return Object.keys(binds)
    .map((k) => k.toUpperCase())
    .sort();
}

/** True when the driver would bind every placeholder and find no unknown bind name. */
export function bindsMatch(statement: Statement): boolean {
  return JSON.stringify(parse(statement.sql).binds) === JSON.stringify(bindKeys(statement.binds));
}

export const at = new Date('2024-05-01T10:20:30.123Z');

export function thread(overrides: Partial<Thread> = {}): Thread {
  return {
    id: 't1',
    resourceId: 'r1',
    title: 'Title',
    metadata: { a: 1 },
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}

export function message(overrides: Partial<Message> = {}): Message {
  return {
    id: 'm1',
    threadId: 't1',
    resourceId: 'r1',
    role: 'user',
    content: 'hello',
    type: 'text',
    createdAt: at,
    ...overrides,
  };
}

/** A statement as a fake connection received it. */
export interface Sent {
  sql: string;
  binds: OracleBinds;
}

/**
 * A pool of one fake connection (no server): it records every statement, answers the migration
 * queries (no version applied yet, metadata of the JSON type, no message to backfill, no backfill recorded), and everything else with
 * `answer` (default: no rows, one row affected). `events` records commits, rollbacks, releases
 * and the pool's close.
 */
export function fakePool(
  serverVersion = 2_304_000_000,
  answer: (sql: string, binds: OracleBinds) => OracleResult | Promise<OracleResult> = () => ({
    rows: [],
    rowsAffected: 1,
  }),
) {
  const sent: Sent[] = [];
  const events: string[] = [];
  const connection: OracleConnection = {
    oracleServerVersion: serverVersion,
    execute: async (sql, binds) => {
      sent.push({ sql, binds });
      if (sql.startsWith('SELECT version')) return { rows: [] };
      if (sql.includes('user_tab_columns')) return { rows: [{ DATA_TYPE: 'JSON' }] };
      if (/^(CREATE|ALTER|INSERT INTO \w+_migrations)/.test(sql)) return { rowsAffected: 0 };
      // The keyword backfill finds no message left to index, and none recorded to run.
      if (sql.includes('NOT EXISTS (SELECT 1 FROM engram_message_term_counts')) return { rows: [] };
      if (sql.startsWith('SELECT name FROM engram_backfills')) return { rows: [] };
      return answer(sql, binds);
    },
    commit: async () => {
      events.push('commit');
    },
    rollback: async () => {
      events.push('rollback');
    },
    close: async () => {
      events.push('release');
    },
  };
  const pool: OraclePool = {
    getConnection: async () => connection,
    close: async () => {
      events.push('pool closed');
    },
  };
  return { pool, sent, events };
}
