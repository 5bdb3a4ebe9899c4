import { inspect } from 'node:util';
import { MemoryError } from '@engram/core';
import { createErrorMapper } from '@engram/core/driver';
import { MongoClient, MongoNetworkError, MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { classify, errors } from '../src/errors.ts';
import { MongoDBStore } from '../src/index.ts';

/** How core maps what the driver throws, with this adapter's classification. */
const toMemoryError = createErrorMapper({ adapter: 'mongodb', ...errors });

describe('driver errors map to MemoryError codes', () => {
  it('duplicate key is CONFLICT, network and selection failures are CONNECTION, the rest STORAGE', () => {
    expect(
      classify(new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key' }), 'saveThread'),
    ).toBe('CONFLICT');
    expect(classify(new MongoNetworkError('socket hang up'), 'getThreadById')).toBe('CONNECTION');
    expect(classify(new MongoServerError({ code: 91, errmsg: 'shutting down' }), 'listThreads')).toBe(
      'CONNECTION',
    );
    expect(classify(new MongoServerError({ code: 50, errmsg: 'operation exceeded time limit' }), 'x')).toBe(
      'CONNECTION',
    );
    expect(classify(new MongoServerError({ code: 2, errmsg: 'BadValue' }), 'listThreads')).toBe('STORAGE');
    expect(classify(new MongoServerError({ code: 2, errmsg: 'BadValue' }), 'init')).toBe('MIGRATION');
    expect(classify(new MongoServerError({ code: 10334, errmsg: 'too large' }), 'saveMessages')).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('recognises errors from another copy of the driver by class name, not instanceof', () => {
    // Stand-ins for a second copy of `mongodb` in the user's tree: same class names, other classes.
    class MongoError extends Error {
      code?: number;
    }
    class MongoServerError extends MongoError {
      constructor(code: number) {
        super(`server error ${code}`);
        this.code = code;
      }
    }
    class MongoNetworkError extends MongoError {}
    class MongoNetworkTimeoutError extends MongoNetworkError {}
    class MongoBulkWriteError extends MongoError {
      writeErrors = [{ code: 11000 }];
    }
    expect(classify(new MongoServerError(11000), 'createThread')).toBe('CONFLICT');
    expect(classify(new MongoBulkWriteError('bulk write failed'), 'saveMessages')).toBe('CONFLICT');
    expect(classify(new MongoNetworkTimeoutError('timed out'), 'listThreads')).toBe('CONNECTION');
    expect(classify(new MongoServerError(91), 'listThreads')).toBe('CONNECTION');
    expect(classify(new MongoServerError(10334), 'saveMessages')).toBe('INVALID_ARGUMENT');
    expect(classify(new MongoServerError(2), 'listThreads')).toBe('STORAGE');
    // Not driver errors at all: a plain object with a code is not taken for a duplicate key.
    expect(classify({ code: 11000 }, 'saveThread')).toBe('STORAGE');
  });

  it('names the adapter and the operation and keeps a redacted cause (no documents, no key values)', () => {
    const cause = new MongoServerError({
      code: 2,
      codeName: 'BadValue',
      errmsg: 'BadValue',
      keyValue: { _id: 'k' },
      errInfo: { failingDocument: { workingMemory: 'SECRET' } },
    });
    const error = toMemoryError(cause, 'listThreads');
    expect(error).toBeInstanceOf(MemoryError);
    expect(error).toMatchObject({ code: 'STORAGE', adapter: 'mongodb' });
    expect(error.cause).toMatchObject({
      name: 'MongoServerError',
      message: 'BadValue',
      code: 2,
      codeName: 'BadValue',
    });
    expect(inspect(error, { depth: 10 })).not.toContain('SECRET');
    expect(error.message).toMatch(/^mongodb: listThreads failed: BadValue/);
  });
});

describe('connection handling', () => {
  it('a server nobody answers fails with CONNECTION within the selection timeout', async () => {
    const store = new MongoDBStore({
      url: 'mongodb://127.0.0.1:1/',
      dbName: 'engram',
      serverSelectionTimeoutMS: 500,
    });
    const started = Date.now();
    await expect(store.getThreadById({ threadId: 't' })).rejects.toMatchObject({
      code: 'CONNECTION',
      adapter: 'mongodb',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    await store.close();
    await store.close();
  });

  it('a closed store fails with CONNECTION and leaves an injected client open', async () => {
    const client = new MongoClient('mongodb://127.0.0.1:1/', { serverSelectionTimeoutMS: 200 });
    const store = new MongoDBStore({ client, dbName: 'engram' });
    expect(store.client).toBe(client);
    await store.close();
    await expect(store.listThreads()).rejects.toMatchObject({ code: 'CONNECTION' });
    await client.close();
  });

  it('rejects bad options with INVALID_ARGUMENT', () => {
    expect(() => new MongoDBStore({ url: 'mongodb://127.0.0.1/', dbName: 'a/b' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(
      () => new MongoDBStore({ url: 'mongodb://127.0.0.1/', dbName: 'db', collectionPrefix: 'bad$' }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new MongoDBStore({ url: 'http://nope', dbName: 'db' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => new MongoDBStore({ dbName: 'db' } as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    for (const lockLeaseMs of [0, -1, 1.5, Number.NaN]) {
      expect(() => new MongoDBStore({ url: 'mongodb://127.0.0.1/', dbName: 'db', lockLeaseMs })).toThrow(
        expect.objectContaining({
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining('lockLeaseMs'),
        }),
      );
    }
  });
});
