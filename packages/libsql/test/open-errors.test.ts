import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LibSQLStore } from '../src/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'engram-libsql-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a file the engine cannot open', () => {
  it('in a missing directory: CONNECTION naming the file and the directory, no bare driver code', async () => {
    const file = join(dir, 'missing-dir', 'memory.db');
    const store = new LibSQLStore({ url: `file:${file}` });
    const error = await store.init().then(
      () => null,
      (e: unknown) => e,
    );
    await store.close();
    expect(error).toMatchObject({ code: 'CONNECTION', adapter: 'libsql' });
    const { message } = error as Error;
    expect(message).toContain(file);
    expect(message).toMatch(/directory .* does not exist/);
    expect(message).not.toMatch(/: 14$/);
  });

  it('at a path that is a directory: CONNECTION naming the file, no bare driver code', async () => {
    const store = new LibSQLStore({ url: `file:${dir}` });
    const error = await store.init().then(
      () => null,
      (e: unknown) => e,
    );
    await store.close();
    expect(error).toMatchObject({ code: 'CONNECTION', adapter: 'libsql' });
    expect((error as Error).message).toContain(`cannot open the database file ${dir}`);
    expect((error as Error).message).not.toMatch(/: 14\b/);
  });
});
