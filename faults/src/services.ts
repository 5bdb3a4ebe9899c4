import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from '@upstash/redis';
import { MongoClient } from 'mongodb';
import pg from 'pg';
import type { AdapterName, Target } from './targets.ts';

/** A namespace of its own on a service (a file, a schema, a key prefix, a database). */
export interface Provisioned {
  target: Target;
  /** Removes everything the run wrote. */
  cleanup(): Promise<void>;
}

/** An adapter the scenarios can run against, and how to find its service. */
export interface AdapterService {
  name: Exclude<AdapterName, 'memory'>;
  /** The env variable naming the shared service, or `undefined` for embedded databases. */
  envVar?: string;
  /** The script that starts the service. */
  script?: string;
}

export const ADAPTERS: readonly AdapterService[] = [
  { name: 'libsql' },
  { name: 'pg', envVar: 'ENGRAM_PG_URL', script: 'scripts/pg.sh' },
  { name: 'upstash', envVar: 'ENGRAM_UPSTASH_URL', script: 'scripts/upstash.sh' },
  { name: 'mongodb', envVar: 'ENGRAM_MONGODB_URL', script: 'scripts/mongodb.sh' },
];

/** A random lowercase suffix for names of this run. */
export function runId(): string {
  return randomBytes(5).toString('hex');
}

/** A fresh namespace for one run on the adapter's shared service (from the env variables). */
export async function provision(name: AdapterService['name'], label: string): Promise<Provisioned> {
  const id = `${label}_${runId()}`;
  switch (name) {
    case 'libsql': {
      const dir = mkdtempSync(join(tmpdir(), 'engram-faults-'));
      return {
        target: { adapter: 'libsql', url: `file:${join(dir, 'faults.db')}` },
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    }
    case 'pg': {
      const url = env('ENGRAM_PG_URL');
      const schemaName = `faults_${id}`;
      return {
        target: { adapter: 'pg', url, schemaName },
        cleanup: () => dropPgSchema(url, schemaName),
      };
    }
    case 'upstash': {
      const url = env('ENGRAM_UPSTASH_URL');
      const token = process.env.ENGRAM_UPSTASH_TOKEN ?? '';
      const prefix = `engram-faults:${id}`;
      return {
        target: { adapter: 'upstash', url, token, prefix },
        cleanup: () => dropPrefix(url, token, prefix),
      };
    }
    case 'mongodb': {
      const url = env('ENGRAM_MONGODB_URL');
      const dbName = `engram_faults_${id}`;
      return {
        target: { adapter: 'mongodb', url, dbName },
        cleanup: () => dropMongoDatabase(url, dbName),
      };
    }
  }
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/** Drops a PostgreSQL schema and everything in it. */
export async function dropPgSchema(url: string, schemaName: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schemaName}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Deletes every key under the prefix (cleanup only; the store itself never scans). */
export async function dropPrefix(url: string, token: string, prefix: string): Promise<void> {
  const client = new Redis({ url, token, automaticDeserialization: false, enableTelemetry: false });
  let cursor = '0';
  do {
    const [next, keys] = (await client.scan(cursor, { match: `${prefix}:*`, count: 1000 })) as [
      string,
      string[],
    ];
    if (keys.length > 0) await client.del(...keys);
    cursor = String(next);
  } while (cursor !== '0');
}

/** Drops a MongoDB database. */
export async function dropMongoDatabase(url: string, dbName: string): Promise<void> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
  try {
    await client.db(dbName).dropDatabase();
  } finally {
    await client.close();
  }
}
