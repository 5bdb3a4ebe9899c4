import {
  createErrorMapper,
  driverCode,
  type MemoryErrorCode,
  NETWORK_ERROR_CODES,
} from '@engram/core/adapter';

const ADAPTER = 'oracle';

/**
 * Driver (`NJS-…`) and database (`ORA-…`) errors that mean the server could not be reached, the
 * session is gone or the pool cannot hand out a connection. node-oracledb reports many
 * session-ending ORA errors (ORA-03113, ORA-03135, …) as NJS-500 with the ORA text appended;
 * both spellings are listed.
 */
const CONNECTION_CODES = new Set([
  'NJS-002', // invalid pool (closed)
  'NJS-003', // invalid connection (closed)
  'NJS-040', // connection request timeout: the pool queue waited too long
  'NJS-064', // pool is closing
  'NJS-065', // pool is closed
  'NJS-500', // connection to the database was closed or dropped
  'NJS-501', // connection to the database lost contact
  'NJS-503', // connection to host … could not be established (refused, unreachable)
  'NJS-504', // proxy failure
  'NJS-505', // TLS initialisation failure
  'NJS-506', // TLS authentication failure
  'NJS-507', // TLS certificate DN mismatch
  'NJS-508', // TLS certificate host mismatch
  'NJS-510', // connection timed out (transportConnectTimeout / connectTimeout)
  'NJS-511', // connection refused by the listener
  'NJS-513', // in-band notification (the server is ending the session)
  'NJS-517', // TNS alias not found
  'NJS-518', // service name unknown to the listener
  'NJS-519', // SID unknown to the listener
  'NJS-521', // end-of-file on the communication channel
  'NJS-530', // host not found
  'ORA-01017', // invalid username/password: the login is refused
  'ORA-01033', // initialisation or shutdown in progress
  'ORA-01034', // Oracle not available
  'ORA-01089', // immediate shutdown in progress
  'ORA-03113', // end-of-file on communication channel
  'ORA-03114', // not connected to Oracle
  'ORA-03135', // connection lost contact
  'ORA-12170', // connect timeout
  'ORA-12505', // listener does not know of the SID
  'ORA-12514', // listener does not know of the service
  'ORA-12516', // listener has no handler available
  'ORA-12518', // listener could not hand off the connection
  'ORA-12519', // no appropriate service handler
  'ORA-12520', // no handler for the requested server type
  'ORA-12521', // listener does not know of the instance
  'ORA-12528', // listener: all handlers blocking new connections
  'ORA-12537', // TNS connection closed
  'ORA-12541', // no listener
  'ORA-12543', // destination host unreachable
  'ORA-12547', // TNS lost contact
  'ORA-28000', // account locked
  'ORA-28001', // password expired
]);

/** Errors of a write that lost a race: duplicate key, deadlock, serialisation failure. */
const CONFLICT_CODES = new Set([
  'ORA-00001', // unique constraint violated
  'ORA-00060', // deadlock detected
  'ORA-00054', // resource busy (a lock taken with NOWAIT)
  'ORA-30006', // resource busy (a lock wait timed out)
  'ORA-08177', // cannot serialize access
]);

/** A value the schema cannot hold: too long for its column, a year out of range. */
const INVALID_VALUE_CODES = new Set([
  'ORA-12899', // value too large for column (e.g. a message type over 255 characters)
  'ORA-01841', // year out of range
  'ORA-01839', // date not valid for month (Oracle's calendar has no 5-14 October 1582)
  'ORA-01438', // value larger than specified precision
]);

/** A message whose thread vanished concurrently (foreign key to the threads table). */
const NOT_FOUND_CODES = new Set([
  'ORA-02291', // integrity constraint violated - parent key not found
]);

/** The `code` of a driver error (`'ORA-00001'`, `'NJS-503'`, `'ECONNREFUSED'`), if any. */
export const errorCode = driverCode;

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Every `ORA-nnnnn` / `NJS-nnn` code the error carries: its own, and those in its message. */
export function errorCodes(error: unknown): string[] {
  const codes = new Set<string>();
  const own = errorCode(error);
  if (own) codes.add(own);
  for (const match of errorMessage(error).matchAll(/\b(?:ORA-\d{5}|NJS-\d{3})\b/g)) codes.add(match[0]);
  return [...codes];
}

/** The engram code for a driver error raised by `operation`. */
export function classify(error: unknown, operation: string): MemoryErrorCode {
  const codes = errorCodes(error);
  const has = (set: ReadonlySet<string>) => codes.some((code) => set.has(code));
  if (has(CONNECTION_CODES) || has(NETWORK_ERROR_CODES)) return 'CONNECTION';
  if (operation === 'init') return 'MIGRATION';
  if (has(CONFLICT_CODES)) return 'CONFLICT';
  if (has(NOT_FOUND_CODES)) return 'NOT_FOUND';
  if (has(INVALID_VALUE_CODES)) return 'INVALID_ARGUMENT';
  return 'STORAGE';
}

/** Maps anything `oracledb` (or a socket) throws to a `MemoryError` naming the adapter and operation. */
export const toMemoryError = createErrorMapper({
  adapter: ADAPTER,
  classify,
  driverDetails: (error) => ({ oracleCode: errorCode(error) }),
  describe: (code, reason, error) => {
    if (code === 'NOT_FOUND') return 'the thread does not exist (it was deleted concurrently)';
    if (code !== 'INVALID_ARGUMENT') return reason;
    const hint = errorCodes(error).includes('ORA-12899') ? '; message types hold at most 255 characters' : '';
    return `Oracle cannot store this value (${reason})${hint}`;
  },
});
