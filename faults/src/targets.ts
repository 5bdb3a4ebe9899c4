import { InMemoryStore, type MemoryStorage } from '@engram/core';
import type { Scene } from './workload.ts';

/** The adapters the scenarios run against. */
export type AdapterName = 'libsql' | 'pg' | 'upstash' | 'mongodb' | 'oracle' | 'memory';

/**
 * Everything needed to open a store, as plain JSON: the parent builds one per run and hands it
 * to every child process (in `FAULTS_TARGET`), so each process opens its own store on the same
 * data.
 */
export type Target =
  | { adapter: 'libsql'; url: string; busyTimeoutMs?: number; synchronous?: 'full' | 'normal' }
  | { adapter: 'pg'; url: string; schemaName: string; connectTimeoutMs?: number }
  | { adapter: 'upstash'; url: string; token: string; prefix: string; retries?: number }
  | {
      adapter: 'mongodb';
      url: string;
      dbName: string;
      serverSelectionTimeoutMS?: number;
      /** The lease of FerretDB's write locks (`lockLeaseMs`); default the adapter's 10 s. */
      lockLeaseMs?: number;
    }
  | { adapter: 'oracle'; url: string; tablePrefix: string }
  | { adapter: 'memory' };

/**
 * A new, not yet initialised store on the target's data. Only the target's driver is loaded, so
 * a child process starts quickly.
 */
export async function openStore(target: Target): Promise<MemoryStorage> {
  switch (target.adapter) {
    case 'libsql': {
      const { LibSQLStore } = await import('@engram/libsql');
      return new LibSQLStore({
        url: target.url,
        busyTimeoutMs: target.busyTimeoutMs,
        synchronous: target.synchronous,
      });
    }
    case 'pg': {
      const { PostgresStore } = await import('@engram/pg');
      return new PostgresStore({
        connectionString: target.url,
        schemaName: target.schemaName,
        connectTimeoutMs: target.connectTimeoutMs,
        maxConnections: 4,
      });
    }
    case 'upstash': {
      const [{ UpstashStore }, { Redis }] = await Promise.all([
        import('@engram/upstash'),
        import('@upstash/redis'),
      ]);
      return new UpstashStore({
        client: new Redis({
          url: target.url,
          token: target.token,
          automaticDeserialization: false,
          enableTelemetry: false,
          retry: { retries: target.retries ?? 2, backoff: (n) => 50 * 2 ** n },
        }),
        prefix: target.prefix,
      });
    }
    case 'mongodb': {
      const { MongoDBStore } = await import('@engram/mongodb');
      return new MongoDBStore({
        url: target.url,
        dbName: target.dbName,
        serverSelectionTimeoutMS: target.serverSelectionTimeoutMS,
        lockLeaseMs: target.lockLeaseMs,
      });
    }
    case 'oracle': {
      const { OracleStore, parseOracleUrl } = await import('@engram/oracle');
      return new OracleStore({
        ...parseOracleUrl(target.url),
        tablePrefix: target.tablePrefix,
        poolAttributes: { poolMax: 4 },
      });
    }
    case 'memory':
      return new InMemoryStore();
  }
}

/** The target a child process was given, from `FAULTS_TARGET`. */
export function targetFromEnv(): Target {
  const raw = process.env.FAULTS_TARGET;
  if (!raw) throw new Error('FAULTS_TARGET is not set');
  return JSON.parse(raw) as Target;
}

/** How long a writer may wait for another writer's lock on this target before failing, in ms. */
export function lockTimeoutMs(target: Target): number {
  if (target.adapter === 'libsql') return target.busyTimeoutMs ?? 5_000;
  // FerretDB: a lock whose holder was killed is broken when its 10 s lease ends; waiters wait 15 s.
  return target.adapter === 'mongodb' ? 15_000 : 5_000;
}

/**
 * The longest a lease of this target's store lives before other writers break it, in ms; 0 where
 * locks are held by the server (a row lock, SQLite's write lock) and never break.
 */
export function leaseMs(target: Target): number {
  if (target.adapter === 'mongodb') return target.lockLeaseMs ?? 10_000;
  // The lease a working-memory writer takes after a lost compare-and-set (`LEASE_MS` there).
  return target.adapter === 'upstash' ? 2_000 : 0;
}

/**
 * False where a `saveMessages` that fails part-way may leave part of its batch written: MongoDB
 * without transactions (a standalone server, FerretDB), as the adapter documents. Saving the
 * batch again completes it.
 */
export function batchesAtomic(target: Target): boolean {
  return target.adapter !== 'mongodb';
}

/**
 * A new resource and thread for one run (ids `<prefix>-r-<run>` and `<prefix>-t-<run>`), the
 * thread saved through a store of its own that is closed again.
 */
export async function openScene(target: Target, prefix: string, title: string, run: string): Promise<Scene> {
  const scene: Scene = { resourceId: `${prefix}-r-${run}`, threadId: `${prefix}-t-${run}` };
  const setup = await openStore(target);
  await setup.init();
  const now = new Date();
  await setup.saveThread({
    id: scene.threadId,
    resourceId: scene.resourceId,
    title,
    metadata: {},
    createdAt: now,
    updatedAt: now,
  });
  await setup.close();
  return scene;
}
