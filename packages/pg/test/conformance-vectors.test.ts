import { areasSuite } from '@engram/conformance';
import { conformanceRun } from './conformance-setup.ts';

// The recall area and the differential sequences (which search vectors) once more on the exact
// real[] fallback, as on a server without pgvector.
// (One run per file: racing processes find the run's database through process.env.)
areasSuite(conformanceRun('pg (real[] fallback)', { vectors: { backend: 'real[]' } }).init, [
  'recall',
  'differential',
]);
