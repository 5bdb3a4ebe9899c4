import {
  driverCode,
  driverMessage,
  type ErrorMapperOptions,
  type MemoryErrorCode,
  NETWORK_ERROR_CODES,
} from '@engram/core/driver';

/**
 * SQLSTATEs that mean the session is gone or cannot be had (besides class 08): admin and crash
 * shutdown (`pg_terminate_backend`), starting up, too many connections, no such database, and
 * authentication (a wrong password, no `pg_hba.conf` entry, an unknown role).
 */
const CONNECTION_STATES = new Set(['57P01', '57P02', '57P03', '53300', '3D000', '28P01', '28000']);

/** Values the server cannot hold: NUL characters, invalid Unicode, dates out of range. */
const UNREPRESENTABLE_STATES = new Set(['22021', '22P05', '22008', '22007', '22P02']);

/** Messages `pg` gives (without a code) when a socket closes or a connect times out. */
const CONNECTION_MESSAGE =
  /connection (?:terminated|timeout|(?:is )?closed)|timeout (?:exceeded when trying to connect|expired)|not queryable|cannot use a pool after calling end|client was closed|server closed the connection/i;

/** The `code` field of a driver or socket error, if any. */
export const errorCode = driverCode;

/** True when the error says the connection is unusable (refused, dropped, terminated, timed out). */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.some(isConnectionError);
  const code = errorCode(error) ?? '';
  if (NETWORK_ERROR_CODES.has(code) || CONNECTION_STATES.has(code) || code.startsWith('08')) return true;
  return CONNECTION_MESSAGE.test(driverMessage(error));
}

/** Deadlock victims and serialization failures: rolled back whole, safe to run again. */
export const isRetryable = (error: unknown) => ['40P01', '40001'].includes(errorCode(error) ?? '');

/** The engram code for a driver error raised by `operation` (pg's classification table). */
export function classify(error: unknown, operation: string): MemoryErrorCode {
  if (isConnectionError(error)) return 'CONNECTION';
  // Anything else that fails while the schema is created or upgraded (missing privileges, a
  // table squatting on one of our names) is a migration failure.
  if (operation === 'init') return 'MIGRATION';
  const code = errorCode(error) ?? '';
  if (code === '23505' || code === '40P01' || code === '40001') return 'CONFLICT';
  if (code === '23503') return 'NOT_FOUND';
  if (UNREPRESENTABLE_STATES.has(code)) return 'INVALID_ARGUMENT';
  return 'STORAGE';
}

/** pg's classification, which core's error mapper applies to anything `pg` (or a socket) throws. */
export const errors: Omit<ErrorMapperOptions, 'adapter'> = {
  classify,
  driverDetails: (error) => ({ sqlState: errorCode(error) }),
  describe: (code, reason) =>
    code === 'INVALID_ARGUMENT'
      ? `PostgreSQL cannot store this value (${reason}); text and jsonb hold no NUL characters (\\u0000) or unpaired surrogates, and dates must lie between 4713 BC and 294276 AD`
      : code === 'NOT_FOUND'
        ? 'the thread does not exist (it was deleted concurrently)'
        : reason,
};
