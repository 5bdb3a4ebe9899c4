import { RETRY, type RetryOptions, retryOptimistic } from '@engram/core/adapter';
import type { ClientSession, MongoClient } from 'mongodb';
import { type Collections, collections } from './collections.ts';
import { assertStorableString, type Codec } from './encoding.ts';
import { isDuplicateKey } from './errors.ts';
import { WriteLocks } from './locks.ts';
import { migrate } from './migrations.ts';

/** What the store learns once per connection: its collections and what the server can do. */
export interface Connection {
  client: MongoClient;
  collections: Collections;
  /** How values are written for this server (see `encoding.ts`). */
  codec: Codec;
  /** True when multi-document transactions are available and enabled. */
  transactions: boolean;
  /** Serialises writers of one thread or resource where the server's updates are not atomic. */
  locks: WriteLocks;
  /**
   * True when the server may skip a `$set` whose value differs from the stored one only in its
   * keys (FerretDB 1.x): field updates are then applied here and written as replacements
   * (see `writes.ts`).
   */
  replaceUpdates: boolean;
}

/** The connection choices of `MongoDBStoreOptions`. */
export interface ConnectionChoices {
  dbName: string;
  collectionPrefix: string;
  transactions: 'auto' | 'never';
  writeLocks: 'auto' | 'always' | 'never';
  /** The lease of a write lock, in ms (default `DEFAULT_LEASE_MS` of `locks.ts`). */
  lockLeaseMs?: number;
}

/**
 * Connects, asks the server what it supports, and applies the migrations.
 *
 * - Transactions: only replica sets and sharded clusters (`setName` or `isdbgrid` in `hello`,
 *   with sessions) have them; a standalone `mongod` does not.
 * - FerretDB 1.x (it reports `ferretdbVersion` in `buildInfo`) cannot store arrays inside arrays,
 *   runs each update as a read followed by a whole-document write with nothing atomic in
 *   between, and skips a `$set` of a sub-document holding the same values under other keys, so it
 *   gets the nested-array wrapping, the write locks and replacement writes.
 */
export async function openConnection(client: MongoClient, choices: ConnectionChoices): Promise<Connection> {
  await client.connect();
  const db = client.db(choices.dbName);
  const hello = await db.admin().command({ hello: 1 });
  const replicated = typeof hello.setName === 'string' || hello.msg === 'isdbgrid';
  const sessions = hello.logicalSessionTimeoutMinutes != null;
  const build = await db.admin().command({ buildInfo: 1 });
  const ferretdb1 = typeof build.ferretdbVersion === 'string' && /^v?1\./.test(build.ferretdbVersion);
  const store = collections(db, choices.collectionPrefix);
  await migrate(store);
  const locked = choices.writeLocks === 'always' || (choices.writeLocks === 'auto' && ferretdb1);
  return {
    client,
    collections: store,
    codec: { wrapNestedArrays: ferretdb1 },
    transactions: choices.transactions !== 'never' && replicated && sessions,
    locks: new WriteLocks(locked ? store.locks : undefined, choices.lockLeaseMs),
    replaceUpdates: ferretdb1,
  };
}

/** Runs `fn` in a transaction when the server has them, else directly (see the README). */
export async function atomically<T>(
  connection: Connection,
  fn: (c: Collections, session?: ClientSession) => Promise<T>,
): Promise<T> {
  if (!connection.transactions) return fn(connection.collections);
  const session = connection.client.startSession();
  try {
    return await session.withTransaction(() => fn(connection.collections, session));
  } finally {
    await session.endSession();
  }
}

/** The write-lock key of a thread (see `locks.ts`). */
export function threadLock(threadId: string): string {
  return `threads:${threadId}`;
}

/** The write-lock key of a resource. */
export function resourceLock(resourceId: string): string {
  return `resources:${resourceId}`;
}

/** Upserts that lost a duplicate-key race on a new `_id` are retried this many times in all. */
const UPSERT_ATTEMPTS = 5;

/**
 * Runs an upsert, retrying when it lost a race to insert the same new `_id` (MongoDB retries
 * such upserts itself since 4.2; other servers report the duplicate key).
 */
export function upsert<T>(write: () => Promise<T>, retry: RetryOptions): Promise<T> {
  return retryOptimistic(
    async () => {
      try {
        return await write();
      } catch (error) {
        if (isDuplicateKey(error)) return RETRY;
        throw error;
      }
    },
    { ...retry, attempts: UPSERT_ATTEMPTS },
  );
}

/** Throws `INVALID_ARGUMENT` for an id BSON could not store exactly (an unpaired surrogate). */
export function storableIds(ids: Record<string, string | undefined>): void {
  for (const [field, id] of Object.entries(ids)) if (id !== undefined) assertStorableString(id, field);
}

/** `storableIds` for a list. */
export function storableIdList(ids: string[], field: string): void {
  ids.forEach((id, i) => {
    assertStorableString(id, `${field}[${i}]`);
  });
}
