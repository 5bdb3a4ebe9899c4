import { randomBytes } from 'node:crypto';
import { requiredServices } from '@engram/conformance';
import type { OracleStoreOptions } from '../src/index.ts';
import { type OracleConnectionConfig, parseOracleUrl } from '../src/url.ts';
import { oracledb } from './fixtures.ts';

/**
 * Where the tests find an Oracle server: `ENGRAM_ORACLE_URL`
 * (`oracle://engram:engram@127.0.0.1:1521/FREEPDB1`, the docker-compose service `oracle`), or
 * `ENGRAM_ORACLE_USER`, `ENGRAM_ORACLE_PASSWORD` and `ENGRAM_ORACLE_CONNECT_STRING`.
 */
export function oracleConfig(env: NodeJS.ProcessEnv = process.env): OracleConnectionConfig | undefined {
  if (env.ENGRAM_ORACLE_URL) return parseOracleUrl(env.ENGRAM_ORACLE_URL);
  const {
    ENGRAM_ORACLE_USER: user,
    ENGRAM_ORACLE_PASSWORD: password,
    ENGRAM_ORACLE_CONNECT_STRING: connectString,
  } = env;
  if (user && password !== undefined && connectString) return { user, password, connectString };
  return undefined;
}

/** True when `ENGRAM_REQUIRE` lists `oracle`: a missing server is then a failure, not a skip. */
export function oracleRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return requiredServices(env).has('oracle');
}

/** The printed reason when no server is configured. */
export const SKIP_REASON =
  'ENGRAM_ORACLE_URL is not set: start the docker-compose service `oracle` (gvenzl/oracle-free) and set ' +
  'ENGRAM_ORACLE_URL=oracle://engram:engram@127.0.0.1:1521/FREEPDB1 (or ENGRAM_ORACLE_USER, ' +
  'ENGRAM_ORACLE_PASSWORD and ENGRAM_ORACLE_CONNECT_STRING)';

/** The env variable that hands a run's table prefix (and JSON storage) to its worker processes. */
export const PREFIX_VAR = 'ENGRAM_ORACLE_TABLE_PREFIX';
export const JSON_TYPE_VAR = 'ENGRAM_ORACLE_JSON_TYPE';

/** A fresh table prefix per run, so reruns never meet an earlier run's tables. */
export function randomPrefix(): string {
  return `e${randomBytes(4).toString('hex')}_`;
}

/** Store options for a worker process: the server, prefix and JSON storage of the parent run. */
export function workerOptions(env: NodeJS.ProcessEnv = process.env): OracleStoreOptions {
  const config = oracleConfig(env);
  if (!config) throw new Error(`the oracle worker needs ENGRAM_ORACLE_URL; ${SKIP_REASON}`);
  const jsonType = env[JSON_TYPE_VAR];
  return {
    ...config,
    tablePrefix: env[PREFIX_VAR] || undefined,
    jsonType: jsonType === 'json' || jsonType === 'clob' ? jsonType : 'auto',
    poolAttributes: { poolMax: 2 },
  };
}

/** Drops the tables a run created (children first). Errors are ignored: it is clean-up. */
export async function dropTables(config: OracleConnectionConfig, prefix: string): Promise<void> {
  let pool: Awaited<ReturnType<typeof oracledb.createPool>> | undefined;
  try {
    pool = await oracledb.createPool({
      ...config,
      poolMin: 0,
      poolMax: 1,
      connectTimeout: 5,
      transportConnectTimeout: 5,
    });
    const connection = await pool.getConnection();
    try {
      for (const table of [
        'backfills',
        'settings',
        'turns',
        'observations',
        'message_term_counts',
        'message_terms',
        'message_vectors',
        'vector_space',
        'messages',
        'threads',
        'resources',
        'migrations',
      ]) {
        await connection.execute(`DROP TABLE ${prefix}${table} PURGE`, {}, {}).catch(() => undefined);
      }
    } finally {
      await connection.close();
    }
  } catch {
    // nothing to clean when the server cannot be reached
  } finally {
    await pool?.close(0).catch(() => undefined);
  }
}
