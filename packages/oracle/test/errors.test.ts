import { inspect } from 'node:util';
import { isMemoryError, MemoryError } from '@engram/core';
import { describe, expect, it } from 'vitest';
import { classify, errorCodes, toMemoryError } from '../src/errors.ts';
import { parseOracleUrl } from '../src/index.ts';
import { storesWithSecret } from './conformance-setup.ts';

/** An error shaped like the ones node-oracledb throws: `code` plus message (and `errorNum`). */
function driverError(code: string, message = `${code}: something`): Error {
  return Object.assign(new Error(message), { code, errorNum: Number(code.slice(4)) });
}

describe('error mapping', () => {
  it.each([
    ['NJS-503', 'CONNECTION'], // host could not be reached (closed port)
    ['NJS-500', 'CONNECTION'], // connection closed or broken
    ['NJS-501', 'CONNECTION'], // lost contact
    ['NJS-510', 'CONNECTION'], // connect timeout
    ['NJS-065', 'CONNECTION'], // pool closed
    ['NJS-003', 'CONNECTION'], // invalid connection
    ['NJS-040', 'CONNECTION'], // pool queue timeout
    ['ORA-12541', 'CONNECTION'], // no listener
    ['ORA-12514', 'CONNECTION'], // unknown service
    ['ORA-03113', 'CONNECTION'],
    ['ORA-03135', 'CONNECTION'],
    ['ORA-01017', 'CONNECTION'], // bad credentials
    ['ECONNREFUSED', 'CONNECTION'],
    ['ORA-00001', 'CONFLICT'], // unique constraint
    ['ORA-00060', 'CONFLICT'], // deadlock
    ['ORA-30006', 'CONFLICT'], // lock wait timed out
    ['ORA-08177', 'CONFLICT'],
    ['ORA-02291', 'NOT_FOUND'], // parent key (thread) gone
    ['ORA-12899', 'INVALID_ARGUMENT'], // value too large for column
    ['ORA-01839', 'INVALID_ARGUMENT'], // 1582-10-05..14
    ['ORA-00942', 'STORAGE'], // table does not exist
    ['ORA-00904', 'STORAGE'],
  ])('%s → %s', (code, expected) => {
    expect(classify(driverError(code), 'saveThread')).toBe(expected);
  });

  it('finds session-ending ORA codes that the driver wraps in NJS-500 text', () => {
    const wrapped = driverError(
      'NJS-500',
      'NJS-500: connection to Oracle Database was closed or broken\nORA-03113: end-of-file',
    );
    expect(errorCodes(wrapped)).toEqual(['NJS-500', 'ORA-03113']);
    const unknown = new Error('DPI-9999: weird\nORA-12541: TNS:no listener');
    expect(classify(unknown, 'listThreads')).toBe('CONNECTION');
  });

  it('reports non-connection failures of init as MIGRATION, connection failures as CONNECTION', () => {
    expect(classify(driverError('ORA-01031', 'ORA-01031: insufficient privileges'), 'init')).toBe(
      'MIGRATION',
    );
    expect(classify(driverError('ORA-00955'), 'init')).toBe('MIGRATION');
    expect(classify(driverError('NJS-503'), 'init')).toBe('CONNECTION');
  });

  it('builds a MemoryError naming the adapter, the operation and the Oracle code, with a redacted cause', () => {
    const cause = driverError(
      'ORA-00001',
      'ORA-00001: unique constraint (ENGRAM.ENGRAM_THREADS_PK) violated',
    );
    const error = toMemoryError(cause, 'saveThread');
    expect(error).toBeInstanceOf(MemoryError);
    expect(error).toMatchObject({
      code: 'CONFLICT',
      adapter: 'oracle',
      cause: { message: cause.message, code: 'ORA-00001', errorNum: 1 },
      details: { operation: 'saveThread', oracleCode: 'ORA-00001' },
    });
    expect(error.message).toMatch(/^oracle: saveThread failed: ORA-00001/);
  });

  it('passes a MemoryError through unchanged and maps plain errors to STORAGE', () => {
    const original = new MemoryError('NOT_FOUND', 'x');
    expect(toMemoryError(original, 'updateThread')).toBe(original);
    expect(toMemoryError(new TypeError('boom'), 'getThreadById')).toMatchObject({
      code: 'STORAGE',
      adapter: 'oracle',
    });
    expect(toMemoryError('a string', 'getThreadById').code).toBe('STORAGE');
  });

  it('explains a vanished thread and an oversized value', () => {
    expect(toMemoryError(driverError('ORA-02291'), 'saveMessages').message).toMatch(/thread does not exist/);
    expect(toMemoryError(driverError('ORA-12899'), 'saveMessages').message).toMatch(/255 characters/);
  });
});

describe('credentials in errors', () => {
  const secret = 'OracleS3cretPw';

  it('a store with a password on a closed port fails with CONNECTION that never shows it (real driver)', async () => {
    for (const [what, create] of Object.entries(storesWithSecret(secret))) {
      const store = create();
      const error = await store.init().then(
        () => undefined,
        (e: unknown) => e,
      );
      await store.close().catch(() => undefined);
      expect(isMemoryError(error, 'CONNECTION'), `${what}: ${inspect(error)}`).toBe(true);
      const logged = [
        String(error),
        (error as Error).stack,
        inspect(error, { depth: 10 }),
        JSON.stringify(error),
      ];
      for (const text of logged) expect(text, what).not.toContain(secret);
    }
  });

  it('a driver message quoting a URL with the password is redacted in the message and the cause', () => {
    const driver = Object.assign(new Error(`NJS-503: cannot reach oracle://scott:${secret}@db:1521/FREE`), {
      code: 'NJS-503',
    });
    const error = toMemoryError(driver, 'init');
    expect(error.message).toBe('oracle: init failed: NJS-503: cannot reach oracle://scott:***@db:1521/FREE');
    expect(inspect(error, { depth: 10 })).not.toContain(secret);
  });

  it('a bad oracle:// URL is refused without quoting it', () => {
    const error = (() => {
      try {
        parseOracleUrl(`oracle://scott:${secret}@db:1521/`);
      } catch (e) {
        return e;
      }
    })();
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(inspect(error, { depth: 10 })).not.toContain(secret);
  });
});
