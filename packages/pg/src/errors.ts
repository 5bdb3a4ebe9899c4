import {
  createErrorMapper,
  driverCode,
  driverMessage,
  type MemoryErrorCode,
  NETWORK_ERROR_CODES,
} from '@engram/core/adapter';

const ADAPTER = 'pg';

/** SQLSTATEs that mean the session is gone or cannot be had. */
const CONNECTION_STATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, server stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database in the URL does not exist (the message names it)
  '28P01', // invalid_password
  '28000', // invalid_authorization_specification: no pg_hba.conf entry, unknown role
]);

/** Values the server cannot hold: NUL characters, invalid Unicode, dates out of range. */
const UNREPRESENTABLE_STATES = new Set(['22021', '22P05', '22008', '22007', '22P02']);

/** Messages `pg` gives (without a code) when a socket closes or a connect times out. */
const CONNECTION_MESSAGES = [
  /connection terminated/i,
  /connection timeout/i,
  /timeout exceeded when trying to connect/i,
  /timeout expired/i,
  /not queryable/i,
  /cannot use a pool after calling end/i,
  /client was closed/i,
  /connection (?:is )?closed/i,
  /server closed the connection/i,
];

/** The `code` field of a driver or socket error, if any. */
export const errorCode = driverCode;

/** True when the error says the connection is unusable (refused, dropped, terminated, timed out). */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.some(isConnectionError);
  const code = errorCode(error);
  if (
    code !== undefined &&
    (NETWORK_ERROR_CODES.has(code) || CONNECTION_STATES.has(code) || code.startsWith('08'))
  ) {
    return true;
  }
  const message = driverMessage(error);
  return CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

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

/** Maps anything `pg` (or a socket) throws to a `MemoryError` naming the adapter and operation. */
export const toMemoryError = createErrorMapper({
  adapter: ADAPTER,
  classify,
  driverDetails: (error) => ({ sqlState: errorCode(error) }),
  describe: (code, reason) => {
    if (code === 'INVALID_ARGUMENT') {
      return `PostgreSQL cannot store this value (${reason}); text and jsonb hold no NUL characters (\\u0000) or unpaired surrogates, and dates must lie between 4713 BC and 294276 AD`;
    }
    if (code === 'NOT_FOUND') return 'the thread does not exist (it was deleted concurrently)';
    return reason;
  },
});
