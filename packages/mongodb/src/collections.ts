import { MemoryError, prefixedTables } from '@engram/core/adapter';
import type { Binary, Collection, Db, IndexDescription, ObjectId } from 'mongodb';
import type { LockDocument } from './locks.ts';

/** A thread as stored: `_id` is the thread id. */
export interface ThreadDocument {
  _id: string;
  resourceId: string;
  title: string;
  /** The metadata object, keys encoded (see `encoding.ts`). */
  metadata: Record<string, unknown>;
  /** One SHA-256 of canonical JSON per metadata key, for exact `listThreads` filters. */
  metadataHash: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
  /**
   * Replaced on every write that can change working memory; the compare-and-set token (an
   * `ObjectId` from the store's own writes, a string from core's working-memory bookkeeping).
   */
  version: ObjectId | string;
}

/** A message as stored: `_id` is the message id. */
export interface MessageDocument {
  _id: string;
  threadId: string;
  resourceId: string;
  role: string;
  /** Any JSON value; objects are documents with encoded keys. */
  content: unknown;
  type: string;
  createdAt: Date;
}

/** A resource as stored: `_id` is the resource id. */
export interface ResourceDocument {
  _id: string;
  /** Absent or `null` when never set. */
  workingMemory?: string | null;
  metadata: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  /** Replaced on every write of `workingMemory`; the compare-and-set token (as on threads). */
  version: ObjectId | string;
}

/** A message's vector: `_id` is the message id (one space per database, see `VectorSpaceDocument`). */
export interface VectorDocument {
  _id: string;
  space: string;
  /** SHA-256 of the embedded text (core's). */
  hash: string;
  /** The float32 values, little-endian. */
  vec: Binary;
}

/** The one embedding space of the store's vectors (`_id` 1). */
export interface VectorSpaceDocument {
  _id: number;
  embedder: string;
  dimensions: number;
}

/** One applied schema version. */
export interface MigrationDocument {
  _id: number;
  name: string;
  appliedAt: Date;
}

/** The collections of one store. */
export interface Collections {
  threads: Collection<ThreadDocument>;
  messages: Collection<MessageDocument>;
  resources: Collection<ResourceDocument>;
  migrations: Collection<MigrationDocument>;
  /** Write locks, used only on servers whose single-document updates are not atomic. */
  locks: Collection<LockDocument>;
  vectors: Collection<VectorDocument>;
  vectorSpace: Collection<VectorSpaceDocument>;
}

/** Collection names for a prefix. */
export function collectionNames(prefix: string): Record<keyof Collections, string> {
  return { ...prefixedTables(prefix), locks: `${prefix}locks`, vectors: `${prefix}vectors` };
}

/** Typed handles on the store's collections in `db`. */
export function collections(db: Db, prefix: string): Collections {
  const names = collectionNames(prefix);
  return {
    threads: db.collection<ThreadDocument>(names.threads),
    messages: db.collection<MessageDocument>(names.messages),
    resources: db.collection<ResourceDocument>(names.resources),
    migrations: db.collection<MigrationDocument>(names.migrations),
    locks: db.collection<LockDocument>(names.locks),
    vectors: db.collection<VectorDocument>(names.vectors),
    vectorSpace: db.collection<VectorSpaceDocument>(names.vectorSpace),
  };
}

/** Indexes of the threads collection: listings by resource (or all), in either order, ties by id. */
export const THREAD_INDEXES: IndexDescription[] = [
  { key: { resourceId: 1, createdAt: 1, _id: 1 }, name: 'resource_created' },
  { key: { resourceId: 1, updatedAt: 1, _id: 1 }, name: 'resource_updated' },
  { key: { createdAt: 1, _id: 1 }, name: 'created' },
  { key: { updatedAt: 1, _id: 1 }, name: 'updated' },
];

/** Indexes of the messages collection: a thread's page in `(createdAt, id)` order. */
export const MESSAGE_INDEXES: IndexDescription[] = [
  { key: { threadId: 1, createdAt: 1, _id: 1 }, name: 'thread_created' },
];

const PREFIX = /^[A-Za-z0-9_.-]{0,48}$/;
// Characters MongoDB forbids in database names on any platform.
const DB_NAME = /^[^/\\. "$*<>:|?\0]{1,63}$/;

/** Throws `INVALID_ARGUMENT` for a database name or collection prefix MongoDB would refuse. */
export function checkNames(dbName: unknown, prefix: unknown): void {
  if (typeof dbName !== 'string' || !DB_NAME.test(dbName)) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'mongodb: dbName must be 1-63 characters without / \\ . space " $ * < > : | ? or NUL',
      { adapter: 'mongodb' },
    );
  }
  if (typeof prefix !== 'string' || !PREFIX.test(prefix) || prefix.startsWith('system.')) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      "mongodb: collectionPrefix must be at most 48 letters, digits, '_', '.' or '-', not starting with 'system.'",
      { adapter: 'mongodb' },
    );
  }
}
