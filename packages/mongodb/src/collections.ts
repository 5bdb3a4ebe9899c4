import { type DateRange, pageLimit, prefixedTables } from '@engram/core/driver';
import type { Binary, Collection, Db, FindCursor, ObjectId } from 'mongodb';
import { mongoError } from './errors.ts';
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
  /** The compare-and-set token, new on every write of working memory (`ObjectId` in older documents). */
  version?: ObjectId | string;
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
  /**
   * A fresh value at every write of the message (absent in documents written before it was kept).
   * Under write locks, a write of a message read in the same write lands only on the version read.
   */
  version?: string;
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
  version?: ObjectId | string;
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

/** A message's keyword-index entry (`keywords.ts`): `_id` is the message id. */
export interface KeywordDocument {
  _id: string;
  resourceId: string;
  threadId: string;
  createdAt: Date;
  /** The message's terms (core's analyzer), repeats kept. */
  terms: string[];
  /** How many terms: `terms.length`, read alone for the statistics. */
  length: number;
}

/** The one embedding space of the store's vectors (`_id` 1). */
export interface VectorSpaceDocument {
  _id: number;
  embedder: string;
  dimensions: number;
}

/** One generation of one observation log; unique on `(key, generation)`, `_id` an `ObjectId`. */
export interface ObservationDocument {
  /** `thread:<threadId>` or `resource:<resourceId>`. */
  key: string;
  generation: number;
  resourceId: string;
  /** `null` for a resource-scope log. */
  threadId: string | null;
  version: number;
  /** Core's serialised state, as a BSON string (length-prefixed: NUL and any Unicode stored as is). */
  body: string;
  updatedAt: Date;
}

/** A store-level setting: `_id` is the key, `value` the JSON text of an object. */
export interface SettingDocument {
  _id: string;
  value: string;
  updatedAt: Date;
}

/** One turn record: `_id` is the id of the turn's first message. */
export interface TurnDocument {
  _id: string;
  threadId: string;
  resourceId: string;
  createdAt: Date;
  /** Core's serialised record, as a BSON string (NUL and any Unicode stored as is). */
  body: string;
}

export interface MigrationDocument {
  _id: number;
  name: string;
  appliedAt: Date;
}

export interface Collections {
  threads: Collection<ThreadDocument>;
  messages: Collection<MessageDocument>;
  resources: Collection<ResourceDocument>;
  migrations: Collection<MigrationDocument>;
  /** Write locks (`locks.ts`), on servers without transactions. */
  locks: Collection<LockDocument>;
  vectors: Collection<VectorDocument>;
  vectorSpace: Collection<VectorSpaceDocument>;
  observations: Collection<ObservationDocument>;
  keywords: Collection<KeywordDocument>;
  settings: Collection<SettingDocument>;
  turns: Collection<TurnDocument>;
}

export function collectionNames(prefix: string): Record<keyof Collections, string> {
  return {
    ...prefixedTables(prefix),
    locks: `${prefix}locks`,
    vectors: `${prefix}vectors`,
    observations: `${prefix}observations`,
    keywords: `${prefix}keywords`,
    settings: `${prefix}settings`,
    turns: `${prefix}turns`,
  };
}

export function collections(db: Db, prefix: string): Collections {
  const names = Object.entries(collectionNames(prefix));
  return Object.fromEntries(names.map(([key, name]) => [key, db.collection(name)])) as unknown as Collections;
}

/** The `createdAt` condition of a date range, when it has a bound. */
export function createdAtFilter(range: DateRange | undefined): { createdAt?: Record<string, Date> } {
  if (!range?.start && !range?.end) return {};
  return {
    createdAt: {
      ...(range.start && { [range.startExclusive ? '$gt' : '$gte']: range.start }),
      ...(range.end && { [range.endExclusive ? '$lt' : '$lte']: range.end }),
    },
  };
}

/** The rows of one page of a sorted `cursor`: none for `perPage: 0`, every row for `false`. */
export async function pageOf<T>(
  cursor: FindCursor<T>,
  q: { page: number; perPage: number | false },
): Promise<T[]> {
  const paging = pageLimit(q.page, q.perPage);
  if (paging?.limit === 0) return [];
  return paging ? cursor.skip(paging.offset).limit(paging.limit).toArray() : cursor.toArray();
}

const PREFIX = /^[A-Za-z0-9_.-]{0,48}$/;
// Characters MongoDB forbids in database names on any platform.
const DB_NAME = /^[^/\\. "$*<>:|?\0]{1,63}$/;

/** Throws `INVALID_ARGUMENT` for a database name or collection prefix MongoDB would refuse. */
export function checkNames(dbName: unknown, prefix: unknown): void {
  if (typeof dbName !== 'string' || !DB_NAME.test(dbName)) {
    throw mongoError(
      'INVALID_ARGUMENT',
      'dbName must be 1-63 characters without / \\ . space " $ * < > : | ? or NUL',
    );
  }
  if (typeof prefix !== 'string' || !PREFIX.test(prefix) || prefix.startsWith('system.')) {
    throw mongoError(
      'INVALID_ARGUMENT',
      "collectionPrefix must be at most 48 letters, digits, '_', '.' or '-', not starting with 'system.'",
    );
  }
}
