import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, it } from 'vitest';

/** The server under test, from `scripts/pg.sh` (`ENGRAM_PG_URL`). */
export const PG_URL = process.env.ENGRAM_PG_URL || undefined;

/** True when `ENGRAM_REQUIRE` lists `pg`: a missing server is then a failure, not a skip. */
export const PG_REQUIRED = (process.env.ENGRAM_REQUIRE ?? '')
  .split(',')
  .map((s) => s.trim())
  .includes('pg');

/** Why the PostgreSQL tests do not run, or `undefined` when they do (or must). */
export const SKIP_REASON =
  PG_URL || PG_REQUIRED ? undefined : 'ENGRAM_PG_URL is not set; start a server with scripts/pg.sh';

/**
 * `describe` for tests that need the server: skipped with the reason in its name when no server
 * is configured, and failing when `pg` is required but `ENGRAM_PG_URL` is missing.
 */
export function describePg(name: string, body: (url: string) => void): void {
  if (PG_URL) {
    describe(name, () => body(PG_URL));
  } else if (PG_REQUIRED) {
    describe(name, () => {
      it('has a server (ENGRAM_REQUIRE lists pg)', () => {
        throw new Error('ENGRAM_REQUIRE lists pg but ENGRAM_PG_URL is not set; run scripts/pg.sh');
      });
    });
  } else {
    describe.skip(`${name} (skipped: ${SKIP_REASON})`, () => body(''));
  }
}

/** A random lowercase name with a readable prefix, safe as an identifier. */
export function randomName(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** A database created for one test file, dropped by `drop()`. */
export interface TestDatabase {
  name: string;
  url: string;
  /** Runs one statement on a short-lived connection to the test database. */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  drop(): Promise<void>;
}

/** Creates a fresh database on the server at `url`, so reruns never collide. */
export async function createDatabase(url: string): Promise<TestDatabase> {
  const name = randomName('engram_test');
  await withClient(url, (client) => client.query(`CREATE DATABASE ${name}`));
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  return {
    name,
    url: dbUrl.toString(),
    query: async (text, values) =>
      withClient(dbUrl.toString(), async (c) => (await c.query(text, values)).rows),
    drop: () =>
      withClient(url, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
