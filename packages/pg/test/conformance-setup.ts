import { randomBytes } from 'node:crypto';
import type { ConformanceInit, Service } from '@engram/conformance';
import type { MemoryStorage } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, it } from 'vitest';
import { PostgresStore, type PostgresVectorOptions } from '../src/index.ts';
import { createDatabase, PG, type TestDatabase } from './env.ts';

/** The fresh database of this run, set in `beforeAll`. */
export interface Run {
  db: TestDatabase | undefined;
}

/** Where a conformance run keeps its tables and how its stores reach the server. */
export interface RunOptions {
  /** Tables in this schema instead of `public`. */
  schemaName?: string;
  /**
   * Stores (and racing processes) connect through this service, e.g. PgBouncer, to the run's
   * database, which is still created and dropped on the server directly. The run is skipped,
   * or fails when the service is required, as the service's gate says.
   */
  through?: Service;
  /** The store's `vectors` option (the recall backend and index). */
  vectors?: PostgresVectorOptions;
}

/**
 * The conformance initializer for one run in a fresh database (dropped afterwards). Each store
 * gets its own pool, which `breakConnection` ends under it; racing processes connect through
 * `worker.ts` with the run's URL and schema passed in env variables.
 */
export function conformanceRun(name: string, options: RunOptions = {}): { init: ConformanceInit; run: Run } {
  const { schemaName, through, vectors } = options;
  const run: Run = { db: undefined };
  // Both the server and, when given, the service in front of it must be there.
  const gates = through ? [PG, through] : [PG];
  const missing = gates.find((gate) => !gate.url);
  const required = missing?.required ?? false;
  const skip = missing && !required ? (missing.skipReason ?? `${missing.urlVar} is not set`) : undefined;
  let storeUrl = '';
  const pools = new WeakMap<MemoryStorage, pg.Pool>();
  const endPool = async (store: MemoryStorage) => {
    const pool = pools.get(store);
    if (pool && !pool.ending && !pool.ended) await pool.end();
  };

  if (missing && required) {
    it(`${name}: has a server (ENGRAM_REQUIRE lists ${missing.name})`, () => {
      throw new Error(
        `ENGRAM_REQUIRE lists ${missing.name} but ${missing.urlVar} is not set; ${missing.hint}`,
      );
    });
  }
  beforeAll(async () => {
    if (missing || !PG.url) return;
    run.db = await createDatabase(PG.url);
    storeUrl = run.db.url;
    if (through?.url) {
      const via = new URL(through.url);
      via.pathname = `/${run.db.name}`;
      storeUrl = via.toString();
    }
    process.env.ENGRAM_PG_TEST_URL = storeUrl;
    process.env.ENGRAM_PG_TEST_SCHEMA = schemaName ?? '';
    process.env.ENGRAM_PG_TEST_VECTORS = JSON.stringify(vectors ?? {});
  });
  afterAll(async () => {
    await run.db?.drop();
  });

  const init: ConformanceInit = {
    name,
    skip: missing ? (skip ?? `${missing.urlVar} is not set`) : undefined,
    create: () => {
      if (!run.db) throw new Error('the run database was not created');
      const pool = new pg.Pool({ connectionString: storeUrl, max: 4, connectionTimeoutMillis: 5_000 });
      pool.on('error', () => undefined);
      const store = new PostgresStore({ pool, schemaName, vectors });
      pools.set(store, pool);
      return store;
    },
    destroy: async (store) => {
      await store.close();
      await endPool(store);
    },
    worker: new URL('./worker.ts', import.meta.url),
    // A new schema of the run's database per call (dropped with it); worker.ts opens it from the env.
    fresh: () => {
      if (!run.db) throw new Error('the run database was not created');
      const url = run.db.url;
      const schema = `fresh_${randomBytes(6).toString('hex')}`;
      return {
        env: { ENGRAM_PG_TEST_URL: url, ENGRAM_PG_TEST_SCHEMA: schema },
        create: () => new PostgresStore({ connectionString: url, schemaName: schema, maxConnections: 4 }),
        createWithoutKeywords: () =>
          new PostgresStore({
            connectionString: url,
            schemaName: schema,
            maxConnections: 4,
            keywords: false,
          }),
      };
    },
    breakConnection: endPool,
    // Every row of every table in the store's schema, through its own pool.
    storedRows: async (store) => {
      const pool = pools.get(store) as pg.Pool;
      const { rows: tables } = await pool.query<{ name: string }>(
        `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
         WHERE table_schema = $1 AND table_type = 'BASE TABLE'`,
        [schemaName ?? 'public'],
      );
      const rows: string[] = [];
      for (const { name } of tables) {
        const { rows: found } = await pool.query<{ row: string }>(`SELECT x::text AS row FROM ${name} x`);
        rows.push(...found.map((r) => `${name} ${r.row}`));
      }
      return rows;
    },
    // The secret as the URL's password: a closed port, and the real server refusing the login.
    withSecret: (secret) => {
      const refused = new URL(PG.url ?? 'postgres://127.0.0.1:5432/postgres');
      refused.username = 'engram_no_such_role';
      refused.password = secret;
      return {
        'password in the URL, closed port': () =>
          new PostgresStore({
            connectionString: `postgres://app:${secret}@127.0.0.1:9/app`,
            maxConnections: 1,
          }),
        'password in the URL, real server refusing the role': () =>
          new PostgresStore({ connectionString: refused.toString(), maxConnections: 1 }),
      };
    },
    processes: 4,
  };
  return { init, run };
}
