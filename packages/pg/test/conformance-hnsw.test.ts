import { areasSuite } from '@engram/conformance';
import { conformanceRun } from './conformance-setup.ts';

// The recall area with pgvector's opt-in HNSW index (iterative scans, strict order). The
// suite's data is small enough for the index to return the exact ranking.
areasSuite(
  conformanceRun('pg (pgvector, HNSW index)', { vectors: { backend: 'pgvector', hnsw: true } }).init,
  ['recall'],
);
