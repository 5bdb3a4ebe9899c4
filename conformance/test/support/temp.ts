import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/**
 * A path for a JSON-file store: `store.json` in a new folder under the OS temp folder, named
 * after `prefix`. The folder, with the store's lock files, is removed when this process exits;
 * processes that open the file through the env (the racers) leave it alone.
 */
export function tempStoreFile(prefix: string): string {
  if (made.length === 0) process.once('exit', removeTempFolders);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return join(dir, 'store.json');
}

function removeTempFolders(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
