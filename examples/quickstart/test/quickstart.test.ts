import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'engram-quickstart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the quickstart the way `pnpm start` does, on a database in a temp directory. */
async function quickstart(): Promise<string> {
  const { stdout } = await run(process.execPath, ['--conditions=source', '--import', 'tsx', 'src/main.ts'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: { ...process.env, ENGRAM_QUICKSTART_DB: join(dir, 'nested', 'quickstart.db') },
  });
  return stdout;
}

describe('examples/quickstart', () => {
  it('lands every concurrent merge, and the second run finds the first run’s memory', async () => {
    const first = await quickstart();
    expect(first).toContain('this is the first run');
    expect(first).toContain('"Planning a trip" (ada-trip): 2 messages');
    expect(first).toContain('Updates landed: 40 of 40 merges from 4 processes (all of them)');
    expect(first).toMatch(/"runs": 1/);
    expect(first).toMatch(/asked in the dinner thread:\n {2}found in thread "ada-trip" \(score \d+\.\d+\):/);
    expect(first).toMatch(/> assistant: ".*passport.*June/);

    const second = await quickstart();
    expect(second).toContain('runs so far: 1');
    expect(second).toContain('"Planning a trip" (ada-trip): 4 messages');
    expect(second).toContain('Updates landed: 40 of 40 merges from 4 processes (all of them)');
    expect(second).toMatch(/"runs": 2/);
  });
});
