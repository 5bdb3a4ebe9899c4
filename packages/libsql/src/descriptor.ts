import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AdapterDescriptor, ownOptions } from '@engram/core/driver';
import type { LibSQLStoreOptions } from './store.ts';

/**
 * `@engram/libsql` for tools (`@engram/libsql/descriptor`): a light module, loading the store and
 * its drivers only in `open`. Options: `authToken` (default `ENGRAM_LIBSQL_TOKEN`), and those of
 * `LibSQLStore` that are plain JSON (`busyTimeoutMs`, `synchronous`); the shared ones do not
 * apply. `http(s):` servers open with `LibSQLStore` itself: tools give those schemes to Upstash.
 */
export const descriptor: AdapterDescriptor = {
  name: 'libsql',
  package: '@engram/libsql',
  schemes: ['file:', 'libsql:', 'ws:', 'wss:'],
  async open(url, options = {}, env = process.env) {
    const { LibSQLStore } = await import('./index.ts');
    const { authToken = env.ENGRAM_LIBSQL_TOKEN || undefined } = options;
    return new LibSQLStore({
      ...ownOptions(options, LibSQLStore.optionKeys),
      url,
      authToken,
    } as LibSQLStoreOptions);
  },
  /** SQLite's write lock is held by its connection until it commits or rolls back: it never breaks. */
  leaseMs: () => 0,
  service: {
    /** Embedded: a new database file in a directory of its own, which `drop` removes. */
    async provision(label) {
      const dir = mkdtempSync(join(tmpdir(), `engram-${label.replace(/[^\w-]/g, '')}-`));
      const drop = async () => rmSync(dir, { recursive: true, force: true });
      return { url: `file:${join(dir, 'engram.db')}`, options: {}, drop };
    },
  },
};
