import { isMemoryError, type MemoryError } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { OracleStore, type OracleStoreOptions } from '../src/index.ts';
import { at, message, oracledb, thread } from './fixtures.ts';

/** Nothing listens on port 1: every connection attempt is refused at once. */
const CLOSED = { user: 'engram', password: 'engram', connectString: '127.0.0.1:1/FREEPDB1' };

async function failure(promise: Promise<unknown>): Promise<MemoryError> {
  try {
    await promise;
  } catch (error) {
    if (isMemoryError(error)) return error;
    throw error;
  }
  throw new Error('expected a MemoryError');
}

describe('OracleStore options', () => {
  it('declares its name and capabilities', () => {
    const store = new OracleStore(CLOSED);
    expect(store.name).toBe('oracle');
    expect(store.capabilities).toEqual({
      atomicWorkingMemory: true,
      transactionalBatches: true,
      processLocal: false,
    });
  });

  it.each([
    [{ user: 'u', connectString: 'h/s' }, /needs \{ user, password, connectString \} or \{ pool \}/],
    [{ ...CLOSED, tablePrefix: 'bad-prefix' }, /tablePrefix/],
    [{ ...CLOSED, jsonType: 'blob' }, /jsonType/],
  ])('rejects %j with INVALID_ARGUMENT', (options, message) => {
    expect(() => new OracleStore(options as unknown as OracleStoreOptions)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) }),
    );
  });
});

describe('OracleStore against a closed port (real driver, no server)', () => {
  it('fails init with CONNECTION within seconds, not a hang', async () => {
    const store = new OracleStore(CLOSED);
    const started = Date.now();
    const error = await failure(store.init());
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({
      code: 'CONNECTION',
      adapter: 'oracle',
      details: { oracleCode: 'NJS-503' },
    });
    expect(error.message).toMatch(/^oracle: init failed: NJS-503/);
    await store.close();
  });

  it('fails every operation with CONNECTION; a read never answers "nothing there"', async () => {
    const store = new OracleStore(CLOSED);
    const calls: Array<() => Promise<unknown>> = [
      () => store.getThreadById({ threadId: 't1' }),
      () => store.listThreads({ resourceId: 'r1' }),
      () => store.listMessages({ threadId: 't1' }),
      () => store.listMessagesById({ ids: ['m1'] }),
      () => store.getResourceById({ resourceId: 'r1' }),
      () => store.saveThread(thread()),
      () => store.saveMessages([message()]),
      () => store.updateResource({ resourceId: 'r1', workingMemory: 'x' }),
      () => store.updateWorkingMemoryAtomically({ scope: 'resource', resourceId: 'r1', update: () => 'x' }),
    ];
    for (const call of calls) expect((await failure(call())).code).toBe('CONNECTION');
    await store.close();
  });

  it('rejects bad input before taking a connection', async () => {
    const store = new OracleStore(CLOSED);
    const late = new Date('+010000-01-01T00:00:00.000Z');
    expect((await failure(store.saveThread(thread({ createdAt: late })))).code).toBe('INVALID_ARGUMENT');
    expect((await failure(store.saveMessages([message({ createdAt: late })]))).code).toBe('INVALID_ARGUMENT');
    expect((await failure(store.updateMessages([{ id: 'm1', createdAt: late }]))).code).toBe(
      'INVALID_ARGUMENT',
    );
    expect((await failure(store.getThreadById({ threadId: '' }))).code).toBe('INVALID_ARGUMENT');
    await store.close();
  });

  it('closes idempotently and then reports CONNECTION', async () => {
    const store = new OracleStore(CLOSED);
    await failure(store.init());
    await store.close();
    await store.close();
    const error = await failure(store.getResourceById({ resourceId: 'r1' }));
    expect(error).toMatchObject({
      code: 'CONNECTION',
      message: 'oracle: getResourceById failed: the store is closed; create a new store to connect again',
    });
  });

  it('maps a closed injected pool to CONNECTION and leaves an open one open on close()', async () => {
    const pool = await oracledb.createPool({ ...CLOSED, poolMin: 0, poolMax: 1 });
    const store = new OracleStore({ pool });
    expect((await failure(store.getThreadById({ threadId: 't1' }))).details).toMatchObject({
      oracleCode: 'NJS-503',
    });
    await store.close();
    // Still the caller's pool: it tries to connect (NJS-503), it is not closed (NJS-065).
    await expect(pool.getConnection()).rejects.toMatchObject({ code: 'NJS-503' });
    await pool.close(0);
    const other = new OracleStore({ pool });
    expect(await failure(other.listThreads())).toMatchObject({
      code: 'CONNECTION',
      details: { oracleCode: 'NJS-065' },
    });
  });

  it('keeps the dates it was given', () => {
    expect(thread().createdAt).toEqual(at);
  });
});
