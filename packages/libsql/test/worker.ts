/**
 * Worker module for the cross-process concurrency area: each forked process opens its own store
 * on the database file the test put in ENGRAM_LIBSQL_CONFORMANCE_URL, with the vector options
 * (JSON) in ENGRAM_LIBSQL_CONFORMANCE_VECTORS when the test set them.
 */
import type { MemoryStorage } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';

export async function create(): Promise<MemoryStorage> {
  const url = process.env.ENGRAM_LIBSQL_CONFORMANCE_URL;
  if (!url) throw new Error('ENGRAM_LIBSQL_CONFORMANCE_URL is not set');
  const vectors = process.env.ENGRAM_LIBSQL_CONFORMANCE_VECTORS;
  return new LibSQLStore({ url, vectors: vectors ? JSON.parse(vectors) : undefined });
}
