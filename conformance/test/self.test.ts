import { InMemoryStore } from '@engram/core';
import { afterAll } from 'vitest';
import { runConformance } from '../src/index.ts';
import { JsonStore } from './support/json-store.ts';
import { referenceInit } from './support/stores.ts';
import { removeTempFolders, tempStoreFile } from './support/temp.ts';

// The whole suite against the reference store, with a backend the errors area can break.
runConformance(referenceInit);

// The plain reference store: no breakConnection, so those checks skip with the reason in the name.
runConformance({ name: 'memory (no breakConnection)', create: () => new InMemoryStore() });

// A store shared by processes through a locked JSON file: instances share data, and the
// concurrency area races 4 OS processes that each open the file through the worker module.
const file = tempStoreFile('engram-conformance-');
afterAll(removeTempFolders);
process.env.ENGRAM_CONFORMANCE_FILE = file;
process.env.ENGRAM_CONFORMANCE_DEFECT = 'none';
runConformance({
  name: 'json-file',
  create: () => new JsonStore({ file, vectors: false }),
  worker: new URL('./fixtures/json-store-worker.ts', import.meta.url),
});
