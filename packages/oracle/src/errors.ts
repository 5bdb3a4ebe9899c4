import {
  createErrorMapper,
  driverCode,
  driverMessage,
  type ErrorMapperOptions,
  type MemoryErrorCode,
  NETWORK_ERROR_CODES,
} from '@engram/core/driver';

/** A set of driver codes, given as groups of space-separated codes. */
const codes = (...groups: string[]): ReadonlySet<string> => new Set(groups.flatMap((g) => g.split(' ')));

/**
 * Errors that mean the server cannot be reached, the session is gone or the pool cannot hand out
 * a connection. node-oracledb reports many session-ending ORA errors as NJS-500 with the ORA text
 * appended: both spellings are listed.
 */
const CONNECTION_CODES = codes(
  'NJS-002 NJS-003 NJS-064 NJS-065', // invalid (closed) pool or connection, pool closing or closed
  'NJS-040', // connection request timeout: the pool queue waited too long
  'NJS-500 NJS-501 NJS-513 NJS-521', // connection closed, dropped, lost, ended by the server, end-of-file
  'NJS-503 NJS-504 NJS-510 NJS-511 NJS-530', // host unreachable, proxy failure, timed out, refused, not found
  'NJS-505 NJS-506 NJS-507 NJS-508', // TLS initialisation, authentication, certificate DN or host mismatch
  'NJS-517 NJS-518 NJS-519', // TNS alias not found, service name or SID unknown to the listener
  'ORA-01017 ORA-28000 ORA-28001', // login refused: bad credentials, account locked, password expired
  'ORA-01033 ORA-01034 ORA-01089', // initialisation or shutdown in progress, Oracle not available
  'ORA-03113 ORA-03114 ORA-03135', // end-of-file on communication channel, not connected, lost contact
  'ORA-12170 ORA-12537 ORA-12541 ORA-12543 ORA-12547', // connect timeout, TNS closed, no listener, no route
  'ORA-12505 ORA-12514 ORA-12521', // the listener does not know of the SID, the service or the instance
  'ORA-12516 ORA-12518 ORA-12519 ORA-12520 ORA-12528', // the listener has no handler for the connection
);

/** A write lost a race: unique key, deadlock, resource busy (NOWAIT, lock wait timeout), serialisation. */
const CONFLICT_CODES = codes('ORA-00001 ORA-00060 ORA-00054 ORA-30006 ORA-08177');

/** A value the schema cannot hold: too large, a year out of range, 5–14 October 1582, too precise. */
const INVALID_VALUE_CODES = codes('ORA-12899 ORA-01841 ORA-01839 ORA-01438');

/** A message whose thread vanished concurrently (ORA-02291: parent key not found). */
const NOT_FOUND_CODES = codes('ORA-02291');

/** Every `ORA-nnnnn` / `NJS-nnn` code the error carries: its own, and those in its message. */
export function errorCodes(error: unknown): string[] {
  const inMessage = [...driverMessage(error).matchAll(/\b(?:ORA-\d{5}|NJS-\d{3})\b/g)].map((m) => m[0]);
  return [...new Set([driverCode(error) ?? [], inMessage].flat())];
}

/** The engram code for a driver error raised by `operation`. */
export function classify(error: unknown, operation: string): MemoryErrorCode {
  const found = errorCodes(error);
  const has = (set: ReadonlySet<string>) => found.some((code) => set.has(code));
  if (has(CONNECTION_CODES) || has(NETWORK_ERROR_CODES)) return 'CONNECTION';
  if (operation === 'init') return 'MIGRATION';
  if (has(CONFLICT_CODES)) return 'CONFLICT';
  if (has(NOT_FOUND_CODES)) return 'NOT_FOUND';
  if (has(INVALID_VALUE_CODES)) return 'INVALID_ARGUMENT';
  return 'STORAGE';
}

/** The driver's error classification, as core's error mapper takes it. */
export const ORACLE_ERRORS: Omit<ErrorMapperOptions, 'adapter'> = {
  classify,
  driverDetails: (error) => ({ oracleCode: driverCode(error) }),
  describe: (code, reason, error) => {
    if (code === 'NOT_FOUND') return 'the thread does not exist (it was deleted concurrently)';
    if (code !== 'INVALID_ARGUMENT') return reason;
    const hint = errorCodes(error).includes('ORA-12899') ? '; message types hold at most 255 characters' : '';
    return `Oracle cannot store this value (${reason})${hint}`;
  },
};

/** Maps anything `oracledb` (or a socket) throws to a `MemoryError` naming the adapter and operation. */
export const toMemoryError = createErrorMapper({ adapter: 'oracle', ...ORACLE_ERRORS });
