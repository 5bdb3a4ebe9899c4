import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeRacers } from '../../src/concurrency/harness.ts';

const made: string[] = [];
let hooked = false;

/**
 * A path for a JSON-file store: `store.json` in a new folder under the OS temp folder, named
 * after `prefix`. The folder, with the store's lock files, is removed by `removeTempFolders`: a
 * test file calls it in `afterAll` (vitest stops its workers without an `exit` event), a CLI
 * process when it exits. Processes that open the file through the env (the racers) make none.
 */
export function tempStoreFile(prefix: string): string {
  if (!hooked) process.once('exit', removeFolders);
  hooked = true;
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return join(dir, 'store.json');
}

/**
 * Removes every folder `tempStoreFile` made in this process so far, once every racer process
 * has exited: one still closing its store may write into a folder meanwhile (`ENOTEMPTY`).
 */
export async function removeTempFolders(): Promise<void> {
  await closeRacers();
  removeFolders();
}

/** The removal itself, synchronous for the `exit` hook (where racers are killed with the process). */
function removeFolders(): void {
  for (const dir of made.splice(0))
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}
