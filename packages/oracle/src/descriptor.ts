import { randomBytes } from 'node:crypto';
import { type AdapterDescriptor, ownOptions } from '@engram/core/driver';
import { loadOracledb } from './oracledb.ts';
import type { OracleStoreOptions } from './store.ts';
import { parseOracleUrl } from './url.ts';

/** The tables under a prefix, children first. */
const TABLES = [
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
];

/**
 * The Oracle adapter for tools (the inspector, the faults and bench runs): loading it loads
 * neither the store nor `oracledb` (`loadOracledb` requires it when called). `open` takes
 * `oracle://user:password@host:1521/SERVICE`, the shared options (`prefix`: the table prefix,
 * `maxConnections`, `connectTimeoutMs`) and those of `OracleStore` that are plain JSON (`jsonType`).
 */
export const descriptor: AdapterDescriptor = {
  name: 'oracle',
  package: '@engram/oracle',
  schemes: ['oracle:'],
  async open(url, options = {}) {
    const { OracleStore } = await import('./index.ts');
    const { prefix, maxConnections: poolMax, connectTimeoutMs: ms } = options;
    const own = ownOptions(options, OracleStore.optionKeys);
    const poolAttributes = {
      ...(poolMax === undefined ? {} : { poolMax }),
      ...(ms === undefined ? {} : { connectTimeout: ms / 1000, transportConnectTimeout: ms / 1000 }), // in s
    };
    const connection = { ...parseOracleUrl(url), tablePrefix: prefix ?? own.tablePrefix, poolAttributes };
    return new OracleStore({ ...own, ...connection } as OracleStoreOptions);
  },
  /** Row locks are the server's: a session that dies releases them; none is ever broken. */
  leaseMs: () => 0,
  service: {
    envVar: 'ENGRAM_ORACLE_URL',
    /** Tables under a prefix of their own on the server at `ENGRAM_ORACLE_URL`, dropped by `drop`. */
    async provision(label, env = process.env) {
      const url = env.ENGRAM_ORACLE_URL;
      if (!url) throw new Error('ENGRAM_ORACLE_URL is not set; no Oracle server is started by the scripts');
      const tablePrefix = `e${label.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)}_${randomBytes(4).toString('hex')}_`;
      const drop = async () => {
        const pool = await loadOracledb().createPool({ ...parseOracleUrl(url), poolMin: 0, poolMax: 1 });
        try {
          const connection = await pool.getConnection();
          for (const table of TABLES) {
            const statement = `DROP TABLE ${tablePrefix}${table} PURGE`;
            await connection.execute(statement, {}, {}).catch(() => undefined); // a missing table is skipped
          }
          await connection.close();
        } finally {
          await pool.close(0);
        }
      };
      return { url, options: { prefix: tablePrefix }, drop };
    },
  },
};
