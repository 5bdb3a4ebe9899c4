import { inspect } from 'node:util';
import { MemoryError } from '@engram/core';
import { createErrorMapper } from '@engram/core/driver';
import { describe, expect, it } from 'vitest';
import { classify, errors } from '../src/errors.ts';

/** What core's store does with anything the driver throws. */
const toMemoryError = createErrorMapper({ adapter: 'pg', ...errors });

/** An error shaped like the ones `pg` and Node sockets raise. */
function driverError(message: string, code?: string): Error {
  return Object.assign(new Error(message), code ? { code } : {});
}

describe('pg error mapping (no server needed)', () => {
  it.each([
    ['duplicate key value violates unique constraint', '23505', 'saveThread', 'CONFLICT'],
    ['deadlock detected', '40P01', 'saveMessages', 'CONFLICT'],
    ['could not serialize access', '40001', 'saveMessages', 'CONFLICT'],
    ['insert or update violates foreign key constraint', '23503', 'saveMessages', 'NOT_FOUND'],
    ['connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED', 'getThreadById', 'CONNECTION'],
    ['connect ETIMEDOUT', 'ETIMEDOUT', 'init', 'CONNECTION'],
    ['terminating connection due to administrator command', '57P01', 'listMessages', 'CONNECTION'],
    ['the database system is starting up', '57P03', 'listThreads', 'CONNECTION'],
    ['connection failure', '08006', 'listThreads', 'CONNECTION'],
    ['Connection terminated unexpectedly', undefined, 'listThreads', 'CONNECTION'],
    ['Connection terminated due to connection timeout', undefined, 'init', 'CONNECTION'],
    ['timeout exceeded when trying to connect', undefined, 'getResourceById', 'CONNECTION'],
    ['Cannot use a pool after calling end on the pool', undefined, 'getResourceById', 'CONNECTION'],
    ['database "nope" does not exist', '3D000', 'init', 'CONNECTION'],
    ['password authentication failed for user "x"', '28P01', 'init', 'CONNECTION'],
    ['relation "engram_threads" does not exist', '42P01', 'init', 'MIGRATION'],
    ['permission denied for database', '42501', 'init', 'MIGRATION'],
    ['relation "engram_threads" does not exist', '42P01', 'getThreadById', 'STORAGE'],
    ['unsupported Unicode escape sequence', '22P05', 'saveMessages', 'INVALID_ARGUMENT'],
    ['invalid byte sequence for encoding "UTF8": 0x00', '22021', 'saveThread', 'INVALID_ARGUMENT'],
    ['timestamp out of range', '22008', 'saveThread', 'INVALID_ARGUMENT'],
    ['disk full', '53100', 'saveThread', 'STORAGE'],
  ])('%s (%s) during %s → %s', (message, code, operation, expected) => {
    expect(classify(driverError(message, code), operation)).toBe(expected);
  });

  it('connection errors wrapped in an AggregateError (IPv4 and IPv6 refused) are CONNECTION', () => {
    const error = new AggregateError([driverError('connect ECONNREFUSED ::1:1', 'ECONNREFUSED')], '');
    expect(classify(error, 'init')).toBe('CONNECTION');
  });

  it('builds a MemoryError naming the adapter, the operation and the SQLSTATE, with a redacted cause', () => {
    const cause = Object.assign(driverError('duplicate key value', '23505'), {
      constraint: 'engram_threads_pkey',
      detail: 'Failing row contains (t1, r1, SECRET working memory)',
      where: 'JSON data, line 1: {"SECRET',
    });
    const error = toMemoryError(cause, 'saveThread');
    expect(error).toBeInstanceOf(MemoryError);
    expect(error).toMatchObject({ code: 'CONFLICT', adapter: 'pg', details: { sqlState: '23505' } });
    expect(error.cause).toMatchObject({
      message: 'duplicate key value',
      code: '23505',
      constraint: 'engram_threads_pkey',
    });
    expect(error.cause).not.toHaveProperty('detail');
    expect(inspect(error, { depth: 10 })).not.toContain('SECRET');
    expect(error.message).toMatch(/^pg: saveThread failed: duplicate key value/);
  });
});
