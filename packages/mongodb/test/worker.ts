import type { MemoryStorage } from '@engram/core';
import { MongoDBStore } from '../src/index.ts';

/**
 * A store with a client of its own, in a process of its own, for the cross-process races; its
 * write locks' lease is `ENGRAM_MONGODB_LOCK_LEASE_MS` when set (the conformance run shortens it).
 */
export async function create(): Promise<MemoryStorage> {
  const url = process.env.ENGRAM_MONGODB_URL;
  const dbName = process.env.ENGRAM_MONGODB_TEST_DB;
  if (!url || !dbName)
    throw new Error('the mongodb worker needs ENGRAM_MONGODB_URL and ENGRAM_MONGODB_TEST_DB');
  const lease = process.env.ENGRAM_MONGODB_LOCK_LEASE_MS;
  return new MongoDBStore({ url, dbName, ...(lease && { lockLeaseMs: Number(lease) }) });
}
