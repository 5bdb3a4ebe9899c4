import type { ConformanceInit } from '@engram/conformance';
import type { MemoryStorage } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, it } from 'vitest';
import { PostgresStore, type PostgresVectorOptions } from '../src/index.ts';
import { createDatabase, PG_REQUIRED, PG_URL, SKIP_REASON, type TestDatabase } from './env.ts';

/** The fresh database of this run, set in `beforeAll`. */
export interface Run {
  db: TestDatabase | undefined;
}

/**
 * The conformance initializer for one run in a fresh database (dropped afterwards). Each store
 * gets its own pool, which `breakConnection` ends under it; racing processes connect through
 * `worker.ts` with the run's URL and schema passed in env variables.
 */
export function conformanceRun(
  name: string,
  schemaName?: string,
  vectors?: PostgresVectorOptions,
): { init: ConformanceInit; run: Run } {
  const run: Run = { db: undefined };
  const pools = new WeakMap<MemoryStorage, pg.Pool>();
  const endPool = async (store: MemoryStorage) => {
    const pool = pools.get(store);
    if (pool && !pool.ending && !pool.ended) await pool.end();
  };

  if (!PG_URL && PG_REQUIRED) {
    it(`${name}: has a server (ENGRAM_REQUIRE lists pg)`, () => {
      throw new Error('ENGRAM_REQUIRE lists pg but ENGRAM_PG_URL is not set; run scripts/pg.sh');
    });
  }
  beforeAll(async () => {
    if (!PG_URL) return;
    run.db = await createDatabase(PG_URL);
    process.env.ENGRAM_PG_TEST_URL = run.db.url;
    process.env.ENGRAM_PG_TEST_SCHEMA = schemaName ?? '';
    process.env.ENGRAM_PG_TEST_VECTORS = JSON.stringify(vectors ?? {});
  });
  afterAll(async () => {
    await run.db?.drop();
  });

  const init: ConformanceInit = {
    name,
    skip: PG_URL ? undefined : (SKIP_REASON ?? 'ENGRAM_PG_URL is not set'),
    create: () => {
      if (!run.db) throw new Error('the run database was not created');
      const pool = new pg.Pool({ connectionString: run.db.url, max: 4, connectionTimeoutMillis: 5_000 });
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
    breakConnection: endPool,
    processes: 4,
  };
  return { init, run };
}
