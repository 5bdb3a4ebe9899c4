import { MemoryError } from '@engram/core/adapter';
import { type Collections, MESSAGE_INDEXES, THREAD_INDEXES } from './collections.ts';
import { isDuplicateKey } from './errors.ts';
import { WriteLocks } from './locks.ts';

/** One step of the schema. Each is idempotent, so two processes may run it at once. */
export interface Migration {
  name: string;
  up(collections: Collections): Promise<void>;
}

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
 * The schema, append-only: the version of a migration is its position (1-based). Applied
 * versions are recorded in the `<prefix>migrations` collection, one document per version.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    name: 'collections, thread listing indexes and the (threadId, createdAt, _id) message index',
    async up(collections) {
      for (const name of ['threads', 'messages', 'resources'] as const)
        await createCollection(collections, name);
      await collections.threads.createIndexes(THREAD_INDEXES);
      await collections.messages.createIndexes(MESSAGE_INDEXES);
    },
  },
  {
    name: 'message vectors and the vector space (semantic recall); messages indexed by resource',
    async up(collections) {
      for (const name of ['vectors', 'vectorSpace'] as const) await createCollection(collections, name);
      await collections.messages.createIndexes([{ key: { resourceId: 1 }, name: 'resource' }]);
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
    throw new MemoryError(
      'MIGRATION',
      `mongodb: the database is at schema version ${newest}, newer than this package's ${LATEST_VERSION}; upgrade @engram/mongodb`,
      { adapter: 'mongodb' },
    );
  }
  return applied;
}

/** The lock document (in `<prefix>locks`) held while migrations are applied. */
export const MIGRATION_LOCK = 'migrations';

/**
 * Applies every migration not yet recorded, in order, and records it. Throws `MIGRATION` when the
 * database was written by a newer version of this package.
 *
 * A database already at the latest version costs one query. Otherwise the migrations run under
 * a lock document, one process at a time, on every server: each step is idempotent, but FerretDB
 * 1.x can panic and drop the connection when several clients create the same indexes of a new
 * database at once. Whoever gets the lock next finds the versions recorded and does nothing.
 */
export async function migrate(collections: Collections): Promise<void> {
  const applied = await appliedVersions(collections);
  if (MIGRATIONS.every((_, i) => applied.has(i + 1))) return;
  await new WriteLocks(collections.locks).hold([MIGRATION_LOCK], () => applyPending(collections));
}

async function applyPending(collections: Collections): Promise<void> {
  const applied = await appliedVersions(collections);
  for (const [i, migration] of MIGRATIONS.entries()) {
    const version = i + 1;
    if (applied.has(version)) continue;
    await migration.up(collections);
    try {
      await collections.migrations.insertOne({ _id: version, name: migration.name, appliedAt: new Date() });
    } catch (error) {
      // Another process applied and recorded the same version meanwhile.
      if (!isDuplicateKey(error)) throw error;
    }
  }
}
