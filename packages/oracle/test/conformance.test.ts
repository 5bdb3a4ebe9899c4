import { runConformance } from '@engram/conformance';
import type { MemoryStorage } from '@engram/core';
import { it } from 'vitest';
import type { OraclePool } from '../src/index.ts';
import { OracleStore } from '../src/index.ts';
import { oracleConfig, oracleRequired, SKIP_REASON } from './env.ts';
import { oracledb } from './fixtures.ts';

const config = oracleConfig();
const pools = new WeakMap<MemoryStorage, OraclePool>();

if (!config && oracleRequired()) {
  it('oracle is listed in ENGRAM_REQUIRE, so the server must be reachable', () => {
    throw new Error(`oracle is required but ${SKIP_REASON}`);
  });
}

runConformance({
  name: 'oracle',
  skip: config ? false : SKIP_REASON,
  // Each store gets a pool of its own, so breakConnection can close it under the store.
  create: async () => {
    const pool = await oracledb.createPool({
      ...config!,
      poolMin: 0,
      poolMax: 4,
      connectTimeout: 10,
      transportConnectTimeout: 10,
    });
    const store = new OracleStore({ pool });
    pools.set(store, pool);
    return store;
  },
  destroy: async (store) => {
    await store.close();
    await pools
      .get(store)
      ?.close(0)
      .catch(() => {});
  },
  worker: new URL('./worker.ts', import.meta.url),
  breakConnection: async (store) => {
    await pools.get(store)?.close(0);
  },
});
