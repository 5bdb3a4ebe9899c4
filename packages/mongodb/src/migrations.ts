import { type BackfillListener, type KeywordAnalyzer, NO_KEYWORD_INDEX } from '@engram/core/driver';
import type { Collection } from 'mongodb';
import type { Collections } from './collections.ts';
import { mongoError } from './errors.ts';
import { backfillKeywords } from './keywords.ts';
import { WriteLocks } from './locks.ts';
import { insertNew } from './writes.ts';

/** NamespaceExists: `create` of a collection that is already there. */
const NAMESPACE_EXISTS = 48;

async function createCollection(collections: Collections, name: keyof Collections): Promise<void> {
  const collection = collections[name];
  try {
    await collection.db.createCollection(collection.collectionName);
  } catch (error) {
    // By its code, not instanceof: an injected client of another copy of the driver throws that
    // copy's error classes.
    if ((error as { code?: unknown } | null)?.code !== NAMESPACE_EXISTS) throw error;
  }
}

/**
 * The schema, append-only: the version of a migration is its position (1-based), recorded in
 * `<prefix>migrations`, one document per version. Each step is idempotent.
 */
export const MIGRATIONS: readonly {
  name: string;
  up(collections: Collections, analyzer: KeywordAnalyzer, progress: BackfillListener): Promise<void>;
}[] = [
  {
    name: 'collections, thread listing indexes and the (threadId, createdAt, _id) message index',
    async up(collections) {
      for (const name of ['threads', 'messages', 'resources'] as const)
        await createCollection(collections, name);
      // Thread listings by resource (or all), in either order, ties by id; a thread's messages in
      // `(createdAt, id)` order.
      await collections.threads.createIndexes([
        { key: { resourceId: 1, createdAt: 1, _id: 1 }, name: 'resource_created' },
        { key: { resourceId: 1, updatedAt: 1, _id: 1 }, name: 'resource_updated' },
        { key: { createdAt: 1, _id: 1 }, name: 'created' },
        { key: { updatedAt: 1, _id: 1 }, name: 'updated' },
      ]);
      await collections.messages.createIndexes([
        { key: { threadId: 1, createdAt: 1, _id: 1 }, name: 'thread_created' },
      ]);
    },
  },
  {
    name: 'message vectors and the vector space (semantic recall); messages indexed by resource',
    async up(collections) {
      for (const name of ['vectors', 'vectorSpace'] as const) await createCollection(collections, name);
      await collections.messages.createIndexes([{ key: { resourceId: 1 }, name: 'resource' }]);
    },
  },
  {
    name: 'observation logs (observational memory): unique (key, generation), indexed by thread',
    async up(collections) {
      await createCollection(collections, 'observations');
      await collections.observations.createIndexes([
        { key: { key: 1, generation: 1 }, name: 'key_generation', unique: true },
        { key: { threadId: 1 }, name: 'thread' },
      ]);
    },
  },
  {
    name: 'keyword index (BM25 per resource): one document per message with text, backfilled',
    async up(collections, analyzer, progress) {
      await createCollection(collections, 'keywords');
      // One a command: FerretDB 1.24 panics on a createIndexes of several that already exist.
      await collections.keywords.createIndex({ resourceId: 1 }, { name: 'resource' });
      await collections.keywords.createIndex({ threadId: 1 }, { name: 'thread' });
      await backfillKeywords(collections, analyzer, progress);
    },
  },
  {
    name: 'store-level settings (the recorded memory configuration), one document per key',
    async up(collections) {
      await createCollection(collections, 'settings');
    },
  },
  {
    name: 'turn records: one document per turn, indexed by (threadId, createdAt, _id)',
    async up(collections) {
      await createCollection(collections, 'turns');
      await collections.turns.createIndex({ threadId: 1, createdAt: 1, _id: 1 }, { name: 'thread_created' });
    },
  },
];

/** The schema version this package writes. */
export const LATEST_VERSION = MIGRATIONS.length;

/** The applied versions; throws `MIGRATION` when one is newer than this package knows. */
async function appliedVersions(collections: Collections): Promise<Set<number>> {
  const applied = new Set(
    (await collections.migrations.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id),
  );
  const newest = Math.max(0, ...applied);
  if (newest > LATEST_VERSION) {
    const message = `the database is at schema version ${newest}, newer than this package's ${LATEST_VERSION}; upgrade @engram/mongodb`;
    throw mongoError('MIGRATION', message);
  }
  return applied;
}

/**
 * Applies every migration not yet recorded, in order, and records it; `MIGRATION` when the database
 * was written by a newer version of this package. A database at the latest version costs one query.
 * Otherwise the migrations run under the lock document `migrations`, one process at a time, on
 * every server: each step is idempotent, but FerretDB 1.x can panic and drop the connection when
 * several clients create the same indexes of a new database at once. Whoever gets the lock next
 * finds the versions recorded and does nothing. Then finishes a keyword backfill left pending (under
 * the same lock), or, with the keyword index off, records one from the start.
 */
export async function migrate(
  collections: Collections,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener = () => {},
): Promise<void> {
  const applied = await appliedVersions(collections);
  if (!MIGRATIONS.every((_, i) => applied.has(i + 1))) {
    await new WriteLocks(collections.locks).hold(['migrations'], () =>
      applyPending(collections, analyzer, progress),
    );
  }
  const cursor = collections.locks as unknown as Collection<{ _id: string; after: string }>;
  if (analyzer.id === NO_KEYWORD_INDEX.id) {
    // The keyword index off (`keywords: false`): saves index nothing, so the next open with it on
    // indexes every message again (the backfill from the start) before it serves.
    await cursor.replaceOne({ _id: 'keyword-backfill' }, { after: '' }, { upsert: true });
  } else if (await cursor.findOne({ _id: 'keyword-backfill' })) {
    // Under the lock, only if no process finished it meanwhile (a missing place means "from the start").
    await new WriteLocks(collections.locks).hold(['migrations'], async () => {
      if (await cursor.findOne({ _id: 'keyword-backfill' }))
        await backfillKeywords(collections, analyzer, progress);
    });
  }
}

async function applyPending(
  collections: Collections,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
): Promise<void> {
  const applied = await appliedVersions(collections);
  for (const [i, migration] of MIGRATIONS.entries()) {
    const version = i + 1;
    if (applied.has(version)) continue;
    await migration.up(collections, analyzer, progress);
    // Not inserted when another process applied and recorded the same version meanwhile.
    await insertNew(collections.migrations, { _id: version, name: migration.name, appliedAt: new Date() });
  }
}
