import { randomBytes } from 'node:crypto';
import { type AdapterDescriptor, ownOptions } from '@engram/core/driver';
import { DEFAULT_LEASE_MS } from './locks.ts';
import type { MongoDBStoreOptions } from './store.ts';

/**
 * The MongoDB adapter for tools (the inspector, the faults and bench runs): loading it loads
 * neither the store nor the `mongodb` driver. `open` takes the shared options (`database`, by
 * default the URL's path, else `'engram'`; `prefix`, `connectTimeoutMs`, `leaseMs`) and those of
 * `MongoDBStore` that are plain JSON (`writeLocks`, `transactions`, …).
 */
export const descriptor: AdapterDescriptor = {
  name: 'mongodb',
  package: '@engram/mongodb',
  schemes: ['mongodb:', 'mongodb+srv:'],
  async open(url, options = {}) {
    const { MongoDBStore } = await import('./index.ts');
    const { prefix, database, connectTimeoutMs, leaseMs } = options;
    const own = ownOptions(options, MongoDBStore.optionKeys);
    // The path read without `new URL`, which rejects multi-host URLs (`mongodb://h1,h2/db`).
    const path = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\/?/i, '').replace(/[?#][\s\S]*$/, '');
    return new MongoDBStore({
      ...own,
      url,
      dbName: database ?? own.dbName ?? (path ? decodeURIComponent(path) : 'engram'),
      collectionPrefix: prefix ?? own.collectionPrefix,
      serverSelectionTimeoutMS: connectTimeoutMs ?? own.serverSelectionTimeoutMS,
      lockLeaseMs: leaseMs ?? own.lockLeaseMs,
    } as MongoDBStoreOptions);
  },
  leaseMs: (options) => Number(options?.leaseMs ?? options?.lockLeaseMs ?? DEFAULT_LEASE_MS),
  service: {
    envVar: 'ENGRAM_MONGODB_URL',
    /** A new database on the server at `ENGRAM_MONGODB_URL`, dropped by `drop`. */
    async provision(label, env = process.env) {
      const url = env.ENGRAM_MONGODB_URL;
      if (!url) throw new Error('ENGRAM_MONGODB_URL is not set; start a server with scripts/mongodb.sh');
      const dbName = `engram_${label.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)}_${randomBytes(5).toString('hex')}`;
      const drop = async () => {
        const { MongoClient } = await import('mongodb');
        const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
        try {
          await client.db(dbName).dropDatabase();
        } finally {
          await client.close();
        }
      };
      return { url, options: { database: dbName }, drop };
    },
  },
};
