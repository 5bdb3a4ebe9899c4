import { areasSuite } from '@engram/conformance';
import { conformanceRun } from './conformance-setup.ts';

// The 19c layout (metadata in CLOB … IS JSON) on whatever server is configured: the record,
// listing, isolation and concurrency areas again with jsonType 'clob', under its own prefix.
areasSuite(conformanceRun('oracle (jsonType clob)', 'clob'), [
  'records',
  'threads',
  'messages',
  'resources',
  'isolation',
  'concurrency',
]);
