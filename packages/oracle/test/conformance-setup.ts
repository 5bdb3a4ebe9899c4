import type { ConformanceInit } from '@engram/conformance';
import type { MemoryStorage } from '@engram/core';
import { afterAll, it } from 'vitest';
import { type OraclePool, OracleStore, parseOracleUrl } from '../src/index.ts';
import type { JsonStorage } from '../src/sql.ts';
import {
  dropTables,
  JSON_TYPE_VAR,
  oracleConfig,
  oracleRequired,
  PREFIX_VAR,
  randomPrefix,
  SKIP_REASON,
} from './env.ts';
import { oracledb } from './fixtures.ts';

/**
 * The conformance `withSecret` hook: stores holding `secret` as their password (given as an
 * option and inside an `oracle://` URL) against a closed port. Needs no server: the driver fails
 * to connect (NJS-503).
 */
export function storesWithSecret(secret: string): Record<string, () => OracleStore> {
  return {
    'password option, closed port': () =>
      new OracleStore({ user: 'scott', password: secret, connectString: '127.0.0.1:9/FREEPDB1' }),
    'password in the URL, closed port': () =>
      new OracleStore(parseOracleUrl(`oracle://scott:${secret}@127.0.0.1:9/FREEPDB1`)),
  };
}

/**
 * The initializer of one conformance run: tables under a fresh prefix (handed to the worker
 * processes through the environment, and dropped afterwards), a pool per store so that
 * `breakConnection` can close it under the store, and a visible skip without a server.
 */
export function conformanceRun(name: string, jsonType?: JsonStorage): ConformanceInit {
  const config = oracleConfig();
  if (!config && oracleRequired()) {
    it('oracle is listed in ENGRAM_REQUIRE, so the server must be reachable', () => {
      throw new Error(`oracle is required but ${SKIP_REASON}`);
    });
  }
  const prefix = randomPrefix();
  process.env[PREFIX_VAR] = prefix;
  process.env[JSON_TYPE_VAR] = jsonType ?? 'auto';
  const pools = new WeakMap<MemoryStorage, OraclePool>();
  if (config) afterAll(() => dropTables(config, prefix));
  return {
    name,
    skip: config ? false : SKIP_REASON,
    create: async () => {
      const pool = await oracledb.createPool({
        ...config!,
        poolMin: 0,
        poolMax: 4,
        connectTimeout: 10,
        transportConnectTimeout: 10,
      });
      const store = new OracleStore({ pool, tablePrefix: prefix, jsonType: jsonType ?? 'auto' });
      pools.set(store, pool);
      return store;
    },
    destroy: async (store) => {
      await store.close();
      await pools
        .get(store)
        ?.close(0)
        .catch(() => undefined);
    },
    worker: new URL('./worker.ts', import.meta.url),
    breakConnection: async (store) => {
      await pools.get(store)?.close(0);
    },
    withSecret: storesWithSecret,
  };
}
