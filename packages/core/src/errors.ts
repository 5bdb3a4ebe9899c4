import { redactCredentials } from './storage/credentials.ts';

/** What went wrong, as a closed set. */
export type MemoryErrorCode =
  /** A caller passed something that can never be valid (bad id, bad patch, bad option). */
  | 'INVALID_ARGUMENT'
  /**
   * A schema-mode working-memory document is not a JSON object, or fails the schema; nothing
   * was written.
   */
  | 'VALIDATION'
  /** A thread (or other record) the call needs does not exist. */
  | 'NOT_FOUND'
  /** A write lost a race too many times, or hit a uniqueness constraint. */
  | 'CONFLICT'
  /** The configuration or the storage cannot do what was asked. */
  | 'UNSUPPORTED'
  /** The database answered with an error. */
  | 'STORAGE'
  /** The database could not be reached, or the connection dropped. */
  | 'CONNECTION'
  /** Creating or upgrading the schema failed. */
  | 'MIGRATION';

export interface MemoryErrorOptions {
  /** The adapter that raised it (`'pg'`, `'libsql'`, …); `'core'` for checks done in core. */
  adapter?: string;
  /** The underlying error. */
  cause?: unknown;
  /** Extra facts for logs (the operation, the offending key, …). */
  details?: Record<string, unknown>;
}

/**
 * The one error class engram throws. Switch on `code`. The message is passed through
 * `redactCredentials` (URL passwords, token and password parameters are replaced by `***`), so a
 * message that quotes a connection string is still safe to log.
 */
export class MemoryError extends Error {
  override readonly name = 'MemoryError';
  readonly code: MemoryErrorCode;
  readonly adapter: string;
  readonly details: Record<string, unknown>;

  constructor(code: MemoryErrorCode, message: string, options: MemoryErrorOptions = {}) {
    super(redactCredentials(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.adapter = options.adapter ?? 'core';
    this.details = options.details ?? {};
  }
}

/** True for a `MemoryError`, optionally of one code. */
export function isMemoryError(error: unknown, code?: MemoryErrorCode): error is MemoryError {
  return error instanceof MemoryError && (code === undefined || error.code === code);
}

/**
 * Node socket error codes that mean a server could not be reached or the link dropped. Adapters
 * map a driver error carrying one of these to `CONNECTION`.
 */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
]);
