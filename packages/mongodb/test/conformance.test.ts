import { runConformance } from '@engram/conformance';
import { afterEach, beforeEach, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { dropDatabase, MONGODB_REQUIRED, MONGODB_URL, randomDbName, SKIP_REASON } from './env.ts';

// One fresh database per check; the forked racers find it through the environment they inherit.
// FerretDB 1.24 on SQLite reads the whole collection for a filter on an indexed field other than
// `_id` (measured: 17 ms a find at 200 documents, 300 ms at 5,000, 2.1 s at 40,000), so one
// database for the whole run made the last areas' checks 10× slower than alone (159 s, not 14 s).
let dbName = randomDbName('engram_conformance');
beforeEach(() => {
  dbName = randomDbName('engram_conformance');
  process.env.ENGRAM_MONGODB_TEST_DB = dbName;
});
afterEach(async () => {
  if (MONGODB_URL) await dropDatabase(MONGODB_URL, dbName);
});
// A short lease, here and in the racers, so that a writer is stopped past it in seconds.
const LOCK_LEASE_MS = 1_000;
process.env.ENGRAM_MONGODB_LOCK_LEASE_MS = String(LOCK_LEASE_MS);

if (!MONGODB_URL && MONGODB_REQUIRED) {
  it('mongodb is listed in ENGRAM_REQUIRE, so ENGRAM_MONGODB_URL must be set', () => {
    throw new Error('mongodb is required but ENGRAM_MONGODB_URL is not set; run scripts/mongodb.sh');
  });
}

runConformance({
  name: 'mongodb',
  // Without a server the suite is skipped; when ENGRAM_REQUIRE lists mongodb the test above fails.
  skip: MONGODB_URL ? false : (SKIP_REASON ?? 'ENGRAM_MONGODB_URL is not set'),
  create: () => new MongoDBStore({ url: MONGODB_URL!, dbName, lockLeaseMs: LOCK_LEASE_MS }),
  leaseMs: LOCK_LEASE_MS,
  destroy: (store) => store.close(),
  worker: new URL('./worker.ts', import.meta.url),
  // A new database per call; the racers open it through ENGRAM_MONGODB_TEST_DB, like worker.ts.
  fresh: () => {
    const name = randomDbName('engram_fresh');
    return {
      env: { ENGRAM_MONGODB_TEST_DB: name },
      create: () => new MongoDBStore({ url: MONGODB_URL!, dbName: name, lockLeaseMs: LOCK_LEASE_MS }),
      createWithoutKeywords: () =>
        new MongoDBStore({ url: MONGODB_URL!, dbName: name, lockLeaseMs: LOCK_LEASE_MS, keywords: false }),
      drop: () => dropDatabase(MONGODB_URL!, name),
    };
  },
  // Closing the driver client under the store makes every later call fail as a lost connection.
  breakConnection: (store) => (store as MongoDBStore).client.close(),
  // Every document of every collection of the check's database, through the store's client.
  storedRows: async (store) => {
    const db = (store as MongoDBStore).client.db((store as MongoDBStore).dbName);
    const rows: string[] = [];
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      for (const doc of await db.collection(name).find({}).toArray())
        rows.push(`${name} ${JSON.stringify(doc)}`);
    }
    return rows;
  },
  // The secret as the URL's password: a closed port, the real server refusing the login, and a
  // URL the driver cannot parse.
  withSecret: (secret) => {
    const real = new URL(MONGODB_URL!);
    real.username = 'engram_no_such_user';
    real.password = secret;
    const options = { dbName, serverSelectionTimeoutMS: 1_000 };
    return {
      'password in the URL, closed port': () =>
        new MongoDBStore({ url: `mongodb://user:${secret}@127.0.0.1:9/db`, ...options }),
      'password in the URL, real server': () => new MongoDBStore({ url: real.toString(), ...options }),
      'password in a URL the driver refuses': () =>
        new MongoDBStore({ url: `mongodb://user:${secret}@127.0.0.1:9/db?noSuchOption=1`, ...options }),
    };
  },
});
