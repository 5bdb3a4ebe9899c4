import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { describe, it } from 'vitest';

/** The server under test, from `scripts/mongodb.sh` (`ENGRAM_MONGODB_URL`). */
export const MONGODB_URL = process.env.ENGRAM_MONGODB_URL || undefined;

/** True when `ENGRAM_REQUIRE` lists `mongodb`: a missing server is then a failure, not a skip. */
export const MONGODB_REQUIRED = (process.env.ENGRAM_REQUIRE ?? '')
  .split(',')
  .map((s) => s.trim())
  .includes('mongodb');

/** Why the MongoDB tests do not run, or `undefined` when they do (or must). */
export const SKIP_REASON =
  MONGODB_URL || MONGODB_REQUIRED
    ? undefined
    : 'ENGRAM_MONGODB_URL is not set; start a server with scripts/mongodb.sh';

/**
 * `describe` for tests that need the server: skipped with the reason in its name when no server
 * is configured, and failing when `mongodb` is required but `ENGRAM_MONGODB_URL` is missing.
 */
export function describeMongo(name: string, body: (url: string) => void): void {
  if (MONGODB_URL) {
    describe(name, () => body(MONGODB_URL));
  } else if (MONGODB_REQUIRED) {
    describe(name, () => {
      it('has a server (ENGRAM_REQUIRE lists mongodb)', () => {
        throw new Error(
          'ENGRAM_REQUIRE lists mongodb but ENGRAM_MONGODB_URL is not set; run scripts/mongodb.sh',
        );
      });
    });
  } else {
    describe.skip(`${name} (skipped: ${SKIP_REASON})`, () => body(''));
  }
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
