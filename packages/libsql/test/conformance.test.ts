import { runConformance } from '@engram/conformance';
import type { MemoryStorage } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import type { Client } from '@libsql/client';
import { afterAll } from 'vitest';
import { tempDir } from './helpers.ts';

// libSQL is embedded: nothing to start, so nothing is skipped.
const { dir, cleanup } = tempDir('engram-libsql-conformance-');
const url = `file:${dir}/conformance.db`;
process.env.ENGRAM_LIBSQL_CONFORMANCE_URL = url;
afterAll(cleanup);

/** Closes the store's own client underneath it, as if the database handle had died. */
function breakConnection(store: MemoryStorage): void {
  (store as unknown as { driver: { connection: { client?: Client } } }).driver.connection.client?.close();
}

/** Every row of every table of the store's database, through its own client. */
async function storedRows(store: MemoryStorage): Promise<string[]> {
  const client = (store as unknown as { driver: { connection: { client: Client } } }).driver.connection
    .client;
  const tables = await client.execute("SELECT name FROM sqlite_master WHERE type = 'table'");
  const rows: string[] = [];
  for (const { name } of tables.rows) {
    const found = await client.execute(`SELECT * FROM "${String(name)}"`);
    for (const row of found.rows) {
      const text = Object.values(row).map((v) =>
        v instanceof ArrayBuffer ? Buffer.from(v).toString('latin1') : String(v),
      );
      rows.push(`${String(name)} ${text.join(' ')}`);
    }
  }
  return rows;
}

let freshFiles = 0;

runConformance({
  name: 'libsql (file)',
  create: () => new LibSQLStore({ url }),
  worker: new URL('./worker.ts', import.meta.url),
  // A new database file per call (removed with the directory); worker.ts opens it from the env.
  fresh: () => {
    const freshUrl = `file:${dir}/fresh-${++freshFiles}.db`;
    return {
      env: { ENGRAM_LIBSQL_CONFORMANCE_URL: freshUrl },
      create: () => new LibSQLStore({ url: freshUrl }),
      createWithoutKeywords: () => new LibSQLStore({ url: freshUrl, keywords: false }),
    };
  },
  processes: 4,
  breakConnection,
  storedRows,
  // A remote database on a closed port, the secret as authToken (option or URL) or URL password.
  withSecret: (secret) => ({
    'authToken option, closed port': () => new LibSQLStore({ url: 'http://127.0.0.1:9', authToken: secret }),
    'authToken in the URL, closed port': () =>
      new LibSQLStore({ url: `http://127.0.0.1:9?authToken=${secret}` }),
    'password in the URL, closed port': () => new LibSQLStore({ url: `libsql://user:${secret}@127.0.0.1:9` }),
  }),
});

runConformance({
  name: 'libsql (:memory:)',
  create: () => new LibSQLStore({ url: ':memory:' }),
  breakConnection,
  storedRows,
});
