import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOracleUrl } from '@engram/oracle';
import { Redis } from '@upstash/redis';
import { MongoClient } from 'mongodb';
import pg from 'pg';
import { adapters, serviceHint } from '../../scripts/adapters.mjs';
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
  /** How to get the service: the script that starts it, or why none can here. */
  hint?: string;
}

/** Every adapter of the repository's one list (adapters.json), in its order. */
export const ADAPTERS: readonly AdapterService[] = adapters.map((a) => ({
  name: a.name as AdapterService['name'],
  envVar: a.envVar,
  hint: serviceHint(a),
}));

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
    case 'oracle': {
      const url = env('ENGRAM_ORACLE_URL');
      const tablePrefix = `f${runId()}_`;
      return {
        target: { adapter: 'oracle', url, tablePrefix },
        cleanup: () => dropOracleTables(url, tablePrefix),
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

/** Drops an Oracle run's tables, children first; a table that is not there is skipped. */
export async function dropOracleTables(url: string, prefix: string): Promise<void> {
  // The part of node-oracledb used here (it ships no types; the adapter types it structurally too).
  const oracledb = createRequire(import.meta.url)('oracledb') as {
    createPool(attributes: object): Promise<{
      getConnection(): Promise<{ execute(sql: string): Promise<unknown>; close(): Promise<void> }>;
      close(drainTime: number): Promise<void>;
    }>;
  };
  const pool = await oracledb.createPool({ ...parseOracleUrl(url), poolMin: 0, poolMax: 1 });
  try {
    const connection = await pool.getConnection();
    try {
      for (const table of [
        'message_vectors',
        'vector_space',
        'messages',
        'threads',
        'resources',
        'migrations',
      ]) {
        await connection.execute(`DROP TABLE ${prefix}${table} PURGE`).catch(() => undefined);
      }
    } finally {
      await connection.close();
    }
  } finally {
    await pool.close(0);
  }
}
