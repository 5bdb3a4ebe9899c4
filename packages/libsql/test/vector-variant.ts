import { areasSuite } from '@engram/conformance';
import { LibSQLStore, type LibSQLVectorOptions } from '@engram/libsql';
import { afterAll } from 'vitest';
import { tempDir } from './helpers.ts';

/**
 * Registers the recall area and the differential sequences (which store, delete and search
 * vectors) for a store with these vector options, on a file of its own; the racing checks fork
 * 4 OS processes (`worker.ts`, which reads the file and the options from the environment, so
 * one variant per test file). Exact options only: the recall checks rank exactly.
 */
export function vectorVariant(name: string, vectors: LibSQLVectorOptions): void {
  const { dir, cleanup } = tempDir('engram-libsql-conformance-vectors-');
  afterAll(cleanup);
  const url = `file:${dir}/conformance.db`;
  process.env.ENGRAM_LIBSQL_CONFORMANCE_URL = url;
  process.env.ENGRAM_LIBSQL_CONFORMANCE_VECTORS = JSON.stringify(vectors);
  areasSuite(
    {
      name,
      create: () => new LibSQLStore({ url, vectors }),
      worker: new URL('./worker.ts', import.meta.url),
      processes: 4,
    },
    ['recall', 'differential'],
  );
}
