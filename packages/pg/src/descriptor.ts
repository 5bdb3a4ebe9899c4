import { type AdapterDescriptor, ownOptions } from '@engram/core/driver';
import type { PostgresStoreOptions } from './options.ts';

/**
 * `@engram/pg` for tools: opens `postgres://` URLs (the shared options `schema`, `prefix`,
 * `maxConnections` and `connectTimeoutMs`, and `PostgresStoreOptions` as JSON) and gives each run
 * a fresh schema on `ENGRAM_PG_URL`. Loading it loads neither the store nor `pg`.
 */
export const descriptor: AdapterDescriptor = {
  name: 'pg',
  package: '@engram/pg',
  schemes: ['postgres:', 'postgresql:'],
  async open(url, options = {}) {
    const { PostgresStore } = await import('./index.ts');
    const { schema, prefix, maxConnections = 4, connectTimeoutMs } = options;
    return new PostgresStore({
      ...ownOptions(options, PostgresStore.optionKeys),
      maxConnections,
      ...(connectTimeoutMs === undefined ? {} : { connectTimeoutMs }),
      ...(schema === undefined ? {} : { schemaName: schema }),
      ...(prefix === undefined ? {} : { tablePrefix: prefix }),
      connectionString: url,
    } as PostgresStoreOptions);
  },
  // Row locks are held by the server for the life of a transaction: nothing to break.
  leaseMs: () => 0,
  service: {
    envVar: 'ENGRAM_PG_URL',
    async provision(label, env = process.env) {
      const url = env.ENGRAM_PG_URL;
      if (!url) throw new Error('ENGRAM_PG_URL is not set');
      const schemaName = `${label}_${crypto.randomUUID().slice(0, 8)}`;
      const drop = async () => {
        const pool = new (await import('pg')).default.Pool({ connectionString: url, max: 1 });
        await pool
          .query(`DROP SCHEMA IF EXISTS "${schemaName.replaceAll('"', '""')}" CASCADE`)
          .finally(() => pool.end());
      };
      return { url, options: { schemaName }, drop };
    },
  },
};
