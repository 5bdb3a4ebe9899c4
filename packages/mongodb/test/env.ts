import { randomBytes } from 'node:crypto';
import { describeService, service } from '@engram/conformance';
import { MongoClient } from 'mongodb';

/** The server under test, from `scripts/mongodb.sh` (`ENGRAM_MONGODB_URL`). */
export const MONGODB = service('mongodb', 'ENGRAM_MONGODB_URL', 'start a server with scripts/mongodb.sh');
export const MONGODB_URL = MONGODB.url;
/** True when `ENGRAM_REQUIRE` lists `mongodb`: a missing server is then a failure, not a skip. */
export const MONGODB_REQUIRED = MONGODB.required;
/** Why the MongoDB tests do not run, or `undefined` when they do (or must). */
export const SKIP_REASON = MONGODB.skipReason;

/** `describe` for tests that need the server (see `describeService`). */
export function describeMongo(name: string, body: (url: string) => void): void {
  describeService(MONGODB, name, body);
}

/** A fresh database name, so runs never see each other's data. */
export function randomDbName(prefix = 'engram_test'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Drops a test database through a short-lived client. */
export async function dropDatabase(url: string, dbName: string): Promise<void> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
  try {
    await client.db(dbName).dropDatabase();
  } finally {
    await client.close();
  }
}
