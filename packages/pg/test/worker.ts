/**
 * The store each racing process of the conformance suite creates: its own pool, connecting to
 * the run's database (and schema) named by the env variables the test file set before forking.
 */
import type { MemoryStorage } from '@engram/core';
import { PostgresStore } from '../src/index.ts';

export async function create(): Promise<MemoryStorage> {
  const url = process.env.ENGRAM_PG_TEST_URL;
  if (!url) throw new Error('ENGRAM_PG_TEST_URL is not set');
  return new PostgresStore({
    connectionString: url,
    schemaName: process.env.ENGRAM_PG_TEST_SCHEMA || undefined,
    maxConnections: 4,
    vectors: JSON.parse(process.env.ENGRAM_PG_TEST_VECTORS || '{}'),
  });
}
