import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
let hooked = false;

/**
 * A path for a JSON-file store: `store.json` in a new folder under the OS temp folder, named
 * after `prefix`. The folder, with the store's lock files, is removed by `removeTempFolders`: a
 * test file calls it in `afterAll` (vitest stops its workers without an `exit` event), a CLI
 * process when it exits. Processes that open the file through the env (the racers) make none.
 */
export function tempStoreFile(prefix: string): string {
  if (!hooked) process.once('exit', removeTempFolders);
  hooked = true;
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return join(dir, 'store.json');
}

/**
 * Removes every folder `tempStoreFile` made in this process so far. A racing process that has
 * not quite exited may still rename a file into one (`ENOTEMPTY`): the removal tries again.
 */
export function removeTempFolders(): void {
  for (const dir of made.splice(0))
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}
