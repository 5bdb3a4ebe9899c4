import { describe, expect, it } from 'vitest';
import { createErrorMapper, driverCode, driverMessage, hasNetworkCode, MemoryError } from '../src/driver.ts';

function driverError(message: string, fields: Record<string, unknown> = {}, cause?: unknown): Error {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), fields);
}

describe('createErrorMapper', () => {
  const map = createErrorMapper({
    adapter: 'demo',
    classify: (error) => (driverCode(error) === 'DUP' ? 'CONFLICT' : undefined),
    driverDetails: (error) => ({ demoCode: driverCode(error) }),
    describe: (code, reason) => (code === 'CONFLICT' ? `taken (${reason})` : reason),
    redact: (message) => message.replace(/secret=\S+/g, 'secret=…'),
  });

  it("uses the adapter's table first, naming adapter, operation and driver code", () => {
    const error = map(
      driverError('duplicate secret=abc', { code: 'DUP', detail: 'Failing row (secret)' }),
      'saveThread',
    );
    expect(error).toBeInstanceOf(MemoryError);
    expect(error.code).toBe('CONFLICT');
    expect(error.adapter).toBe('demo');
    expect(error.message).toBe('demo: saveThread failed: taken (duplicate secret=…)');
    expect(error.details).toEqual({ operation: 'saveThread', demoCode: 'DUP' });
    const cause = error.cause as Record<string, unknown>;
    expect(cause.message).toBe('duplicate secret=…');
    expect(cause.code).toBe('DUP');
    expect(cause.detail).toBeUndefined();
  });

  it('falls back to CONNECTION for a network code, also on a cause or an AggregateError member', () => {
    expect(map(driverError('refused', { code: 'ECONNREFUSED' }), 'listThreads').code).toBe('CONNECTION');
    expect(map(driverError('wrapped', {}, driverError('reset', { code: 'ECONNRESET' })), 'init').code).toBe(
      'CONNECTION',
    );
    const aggregate = new AggregateError([driverError('a', { code: 'EHOSTUNREACH' })], '');
    expect(map(aggregate, 'getThreadById').code).toBe('CONNECTION');
    expect(map(aggregate, 'getThreadById').message).toBe('demo: getThreadById failed: a');
  });

  it('falls back to MIGRATION during init and STORAGE otherwise; a MemoryError passes through', () => {
    expect(map(new Error('no privilege'), 'init').code).toBe('MIGRATION');
    expect(map(new Error('boom'), 'listMessages').code).toBe('STORAGE');
    expect(map('a string', 'listMessages').message).toBe('demo: listMessages failed: a string');
    // No driver code: no `demoCode` key at all.
    expect(map(new Error('boom'), 'listMessages').details).toEqual({ operation: 'listMessages' });
    const own = new MemoryError('NOT_FOUND', 'demo: gone');
    expect(map(own, 'updateThread')).toBe(own);
  });

  it('shares the code and message readers', () => {
    expect(driverCode({ code: 7 })).toBeUndefined();
    expect(driverMessage(new AggregateError([new Error('x'), new Error('y')], 'outer'))).toBe('x; y');
    expect(hasNetworkCode(driverError('other', { code: 'EACCES' }))).toBe(false);
  });
});
