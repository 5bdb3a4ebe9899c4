import { afterAll } from 'vitest';
import { runConformance } from '../src/index.ts';
import { create, destroy, fresh, name, storedRows } from './fixtures/json-store-module.ts';
import { removeTempFolders } from './support/temp.ts';

afterAll(removeTempFolders);

// The worked example of docs/writing-an-adapter.md, a driver on a locked JSON file: the whole
// suite, with 4 OS processes racing on one file through the same module.
runConformance({
  name,
  create,
  destroy,
  fresh,
  storedRows,
  worker: new URL('./fixtures/json-store-module.ts', import.meta.url),
});
