import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { describeService, service } from '@engram/conformance';
import type { Thread } from '@engram/core';
import pg from 'pg';
import { migrate } from '../src/migrations.ts';
import { type Names, names as sqlNames } from '../src/sql.ts';

/** The server under test, from `scripts/pg.sh` (`ENGRAM_PG_URL`). */
export const PG = service('pg', 'ENGRAM_PG_URL', 'start a server with scripts/pg.sh');
export const PG_URL = PG.url;
/** True when `ENGRAM_REQUIRE` lists `pg`: a missing server is then a failure, not a skip. */
export const PG_REQUIRED = PG.required;
/** Why the PostgreSQL tests do not run, or `undefined` when they do (or must). */
export const SKIP_REASON = PG.skipReason;

/** `describe` for tests that need the server (see `describeService`). */
export function describePg(name: string, body: (url: string) => void): void {
  describeService(PG, name, body);
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

/**
 * Creates a fresh database on the server at `url`, so reruns never collide. Its name carries
 * the time it was made (`engram_test_<epoch seconds>_<hex>`): `scripts/pg.sh` drops the ones a
 * killed run left behind.
 */
export async function createDatabase(url: string): Promise<TestDatabase> {
  const name = randomName(`engram_test_${Math.floor(Date.now() / 1000)}`);
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

/** The text of what was passed to `client.query`: a string, or a query config (named when prepared). */
export function sentText(query: unknown): string {
  return typeof query === 'string' ? query : String((query as { text?: string }).text);
}

/**
 * A schema `randomName(label)` of `dbUrl` migrated to `version`, filled in by `fill` through a
 * plain client (rows as an older package wrote them); returns the schema's name.
 */
export async function schemaAt(
  dbUrl: string,
  label: string,
  version: number,
  fill: (client: pg.Client, names: Names) => Promise<void>,
): Promise<string> {
  const schema = randomName(label);
  const names = sqlNames(schema, 'engram_');
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    if ((await migrate(client, names, version)) !== version) throw new Error(`not at version ${version}`);
    await fill(client, names);
  } finally {
    await client.end();
  }
  return schema;
}

/** A thread record of `resourceId` created now, for tests that lay out rows by hand. */
export function threadNow(id: string, resourceId: string): Thread {
  const now = new Date();
  return { id, resourceId, title: '', metadata: {}, createdAt: now, updatedAt: now };
}

/** tsx's loader, for test processes that run the package's TypeScript. */
export const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * Runs `script` in `count` OS processes with the env `env(i)` adds, each told one moment to start
 * its work at (`ENGRAM_PG_TEST_START_AT`, 2.5 s on); resolves to what each printed, trimmed.
 */
export function runInProcesses(
  script: string,
  count: number,
  env: (i: number) => Record<string, string>,
): Promise<string[]> {
  const startAt = Date.now() + 2_500;
  const runs = Array.from(
    { length: count },
    (_, i) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', TSX, '--conditions=source', script], {
          env: { ...process.env, ...env(i), ENGRAM_PG_TEST_START_AT: String(startAt) },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.on('error', reject);
        child.on('exit', () => resolve(out.trim()));
      }),
  );
  return Promise.all(runs);
}
