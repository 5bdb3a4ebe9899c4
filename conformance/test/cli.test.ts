import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';

const bin = fileURLToPath(new URL('../bin/engram-conformance.mjs', import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Runs the CLI as a user would and collects its exit code and output. */
function cli(...args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.ENGRAM_CONFORMANCE_FILE;
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

// A whole-suite run: the concurrency area waits out the stopped-writer race, and the purge area
// races 4 OS processes against deleteResource on a JSON file with one lock (150 s alone on 2
// loaded cores).
vi.setConfig({ testTimeout: 360_000 });

describe('engram-conformance CLI', () => {
  it('passes the reference store: prints the table by area and exits 0', async () => {
    const { code, out } = await cli(fixture('memory-module.ts'));
    expect(code, out).toBe(0);
    expect(out).toMatch(/^area\s+pass\s+fail\s+skip\s+skipped because$/m);
    expect(out).toMatch(/^messages\s+\d+\s+0\s+0$/m);
    expect(out).toMatch(
      /^working memory\s+\d+\s+0\s+1\s+only for stores without capabilities.atomicWorkingMemory; this store declares it \(1\)$/m,
    );
    expect(out).toMatch(
      /^concurrency\s+\d+\s+0\s+3\s+the store is processLocal: no other process can write inside its updates \(3\)$/m,
    );
    expect(out).toMatch(/^errors\s+\d+\s+0\s+0$/m);
    expect(out).toMatch(
      /^semantic recall \(vectors and keywords\)\s+\d+\s+0\s+2\s+memory ranks with .*bm25.*: statistics over the whole index \(1\); no `fresh` hook with `createWithoutKeywords` supplied.* \(1\)$/m,
    );
    // The turns and settings checks of two stores on one database: one instance is all it has.
    expect(out).toMatch(
      /^turn records\s+\d+\s+0\s+1\s+memory is processLocal: each instance has its own data \(1\)$/m,
    );
    expect(out).toMatch(
      /^settings \(recorded memory configuration\)\s+\d+\s+0\s+1\s+memory is processLocal: each instance has its own data \(1\)$/m,
    );
    expect(out).toMatch(/^total\s+\d+\s+0\s+8$/m);
    expect(out).toMatch(/100\/100 keys survived/);
  });

  it('fails broken store (a): exits non-zero and shows the concurrency failures across 4 OS processes', async () => {
    // Only the areas looked at below: the whole suite on this file store takes two minutes.
    const { code, out } = await cli(
      fixture('broken-atomic-module.ts'),
      '--area',
      'concurrency,messages,errors',
    );
    expect(code, out).toBe(1);
    expect(out).not.toMatch(/^working memory\s/m);
    expect(out).toMatch(/^concurrency\s+[1-8]\s+[2-7]\s+0$/m);
    // The module's fresh() reaches the concurrent-init race, which this defect does not touch.
    expect(out).toMatch(/✓ \[concurrency\] init\(\) of one new store by 4 racers at once/);
    expect(out).toMatch(/^messages\s+\d+\s+0\s+0$/m);
    expect(out).toMatch(
      /^errors\s+\d+\s+0\s+8\s+no breakConnection hook supplied \(7\); no withSecret hook supplied \(1\)$/m,
    );
    expect(out).toMatch(
      /resource working-memory merges: 4 OS processes, 100 operations .*; \d+\/100 keys survived/,
    );
    expect(out).toMatch(/acknowledged writes were lost/);
  });

  it('exits 2 on bad usage, 1 when the module cannot create a store', async () => {
    expect((await cli()).code).toBe(2);
    expect((await cli(fixture('memory-module.ts'), '--area', 'nope')).code).toBe(2);
    const missing = await cli(fixture('json-store-worker.ts'), '--area', 'records');
    expect(missing.code, missing.out).toBe(1);
  });
});
