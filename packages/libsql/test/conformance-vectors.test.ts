import { areasSuite } from '@engram/conformance';
import { LibSQLStore, type LibSQLStoreOptions } from '@engram/libsql';
import { afterAll } from 'vitest';
import { tempDir } from './helpers.ts';

// The recall area and the differential sequences (which search vectors) on libSQL's other search
// paths: the opt-in ANN index, and exact scans in SQL without the kept copies. The racing checks
// run their callers in this process (the default store's file runs them as OS processes).
const { dir, cleanup } = tempDir('engram-libsql-conformance-vectors-');
afterAll(cleanup);

const variants: [string, LibSQLStoreOptions['vectors']][] = [
  ['libsql (ANN index)', { index: true }],
  ['libsql (exact scans in SQL, no kept copies)', { cache: false }],
];
for (const [i, [name, vectors]] of variants.entries()) {
  const url = `file:${dir}/variant-${i}.db`;
  areasSuite({ name, create: () => new LibSQLStore({ url, vectors }) }, ['recall', 'differential']);
}
