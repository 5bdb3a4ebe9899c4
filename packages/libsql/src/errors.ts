import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Driver, MemoryError, type MemoryErrorCode, NETWORK_ERROR_CODES } from '@engram/core/driver';

/** The adapter name used in every error this package raises. */
export const ADAPTER = 'libsql';

const CONNECTION_CODES = new Set([
  ...['CLIENT_CLOSED', 'HRANA_CLOSED_ERROR', 'HRANA_WEBSOCKET_ERROR', 'HRANA_PROTO_ERROR', 'SERVER_ERROR'],
  ...['SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_AUTH', 'SQLITE_PERM'],
]);
const ARGUMENT_CODES = new Set(['URL_INVALID', 'URL_SCHEME_NOT_SUPPORTED', 'URL_PARAM_NOT_SUPPORTED']);

/**
 * The driver's codes found on an error and its causes (`code`, `extendedCode`). The `libsql`
 * package reports only the extended code (`SQLITE_CANTOPEN_ISDIR`): its base code is its first word.
 */
function codesOf(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const { code, extendedCode } = current as { code?: unknown; extendedCode?: unknown };
    for (const value of [code, extendedCode]) {
      if (typeof value === 'string') codes.push(value, ...(/^SQLITE_[A-Z]+(?=_)/.exec(value) ?? []));
    }
    current = current.cause;
  }
  return codes;
}

/**
 * True when a statement failed because another connection held the database lock
 * (`SQLITE_BUSY`, `SQLITE_LOCKED`, their extended codes): a client that saw this is discarded.
 */
export function isBusyError(error: unknown): boolean {
  if (error instanceof MemoryError) return isBusyError(error.cause);
  return codesOf(error).some((code) => code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** libSQL's classification table; `undefined` leaves the error to core's defaults. */
function classify(error: unknown): MemoryErrorCode | undefined {
  const codes = codesOf(error);
  if (isBusyError(error) || codes.some((code) => code.startsWith('SQLITE_CONSTRAINT'))) return 'CONFLICT';
  if (codes.some((code) => ARGUMENT_CODES.has(code))) return 'INVALID_ARGUMENT';
  if (codes.some((code) => CONNECTION_CODES.has(code) || NETWORK_ERROR_CODES.has(code))) return 'CONNECTION';
  if (error instanceof TypeError && /fetch failed|network/i.test(error.message)) return 'CONNECTION';
  // The embedded engine reports a file it cannot open as a plain Error without a code.
  if (error instanceof Error && /ConnectionFailed|Unable to open connection/.test(error.message)) {
    return 'CONNECTION';
  }
  return undefined; // STORAGE, or MIGRATION during init
}

/** SQLite's result code 14 (`SQLITE_CANTOPEN`), as the embedded engine reports it after a path. */
const CANT_OPEN = /Unable to open connection to local database (.+): 14\b/;

/**
 * Why a local file did not open, in words, instead of the engine's bare `…: 14`: its directory
 * is missing, or the file cannot be opened (permissions, a directory at that path).
 */
function cantOpenReason(error: unknown): string | undefined {
  const path = error instanceof Error ? CANT_OPEN.exec(error.message)?.[1] : undefined;
  if (path === undefined) return undefined;
  const directory = dirname(path);
  return existsSync(directory)
    ? `cannot open the database file ${path} (SQLITE_CANTOPEN: check that it is a file this process may read and write)`
    : `cannot open the database file ${path}: its directory ${directory} does not exist (create it first)`;
}

/** How core maps anything `@libsql/client` or the `libsql` package throws to a `MemoryError`. */
export const errors: Driver['errors'] = {
  classify,
  driverDetails: (error) => ({ driverCodes: codesOf(error) }),
  describe: (_code, reason, error) =>
    isBusyError(error)
      ? `${reason} (the database stayed locked by another writer past the busy timeout)`
      : (cantOpenReason(error) ?? reason),
};
