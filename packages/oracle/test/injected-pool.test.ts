import { isMemoryError, MemoryError } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { type OraclePool, OracleStore } from '../src/index.ts';
import { oracledb } from './fixtures.ts';

/** A listener nobody answers on: the driver is reached, the connection refused. */
const CLOSED = { user: 'engram', password: 'engram', connectString: '127.0.0.1:1/FREEPDB1' };

describe('OracleStore with an injected pool recognised by shape', () => {
  it('accepts a pool from another copy of oracledb (same method, other class) and reaches the driver through it', async () => {
    const real = await oracledb.createPool({ ...CLOSED, poolMin: 0, poolMax: 1 });
    let calls = 0;
    // What a second copy of `oracledb` in the tree hands over: a different object, same method.
    const foreign = {
      getConnection: () => {
        calls += 1;
        return real.getConnection();
      },
    };
    const store = new OracleStore({ pool: foreign as unknown as OraclePool });
    const error = await store.getThreadById({ threadId: 't1' }).catch((e: unknown) => e);
    expect(isMemoryError(error) && error.code).toBe('CONNECTION');
    expect((error as MemoryError).details).toMatchObject({ oracleCode: 'NJS-503' });
    expect(calls).toBeGreaterThan(0);
    await store.close();
    await real.close(0);
  });

  it.each([
    ['a connect string', '127.0.0.1/FREEPDB1', 'got string'],
    ['pool attributes instead of a pool', { poolMax: 4 }, 'lacks getConnection()'],
    ['null', null, 'got null'],
  ])('refuses %s as pool, naming what is missing', (_name, pool, text) => {
    const create = () => new OracleStore({ pool: pool as unknown as OraclePool });
    expect(create).toThrow(MemoryError);
    expect(create).toThrow('oracle: pool must be an oracledb pool (oracledb.createPool())');
    expect(create).toThrow(text);
    expect(create).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
