import { createErrorMapper, MemoryError, type MemoryErrorCode } from '@engram/core';
import {
  BSON,
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoError,
  MongoInvalidArgumentError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

const ADAPTER = 'mongodb';

/** Duplicate key (`E11000`); 11001 is its legacy form. */
const DUPLICATE_KEY = new Set([11000, 11001]);

/** Server codes meaning the server is going away, unreachable, or timed the operation out. */
const CONNECTION_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  50, // MaxTimeMSExpired
  89, // NetworkTimeout
  91, // ShutdownInProgress
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Server codes for values MongoDB cannot store (too large, nested too deeply). */
const UNSTORABLE_CODES = new Set([
  10334, // BSONObjectTooLarge
  17419, // document too large for an update
  15, // Overflow (nesting depth)
]);

function numericCode(error: unknown): number | undefined {
  if (error instanceof MongoError && typeof error.code === 'number') return error.code;
  if (error instanceof MongoBulkWriteError) {
    const first = error.writeErrors;
    const list = Array.isArray(first) ? first : [first];
    const code = list[0]?.code;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

/** True for a duplicate-key error, also when it comes inside a bulk write. */
export function isDuplicateKey(error: unknown): boolean {
  const code = numericCode(error);
  return code !== undefined && DUPLICATE_KEY.has(code);
}

/** True when the error means the server could not be reached, the link dropped, or it timed out. */
export function isConnectionError(error: unknown): boolean {
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoClientClosedError ||
    error instanceof MongoServerClosedError ||
    error instanceof MongoOperationTimeoutError
  ) {
    return true;
  }
  if (error instanceof MongoServerError && typeof error.code === 'number')
    return CONNECTION_CODES.has(error.code);
  return false;
}

/** The engram code for a driver error raised by `operation`. */
export function classify(error: unknown, operation: string): MemoryErrorCode {
  if (isConnectionError(error)) return 'CONNECTION';
  if (operation === 'init') return 'MIGRATION';
  if (isDuplicateKey(error)) return 'CONFLICT';
  const code = numericCode(error);
  if (code !== undefined && UNSTORABLE_CODES.has(code)) return 'INVALID_ARGUMENT';
  if (error instanceof BSON.BSONError || error instanceof MongoInvalidArgumentError)
    return 'INVALID_ARGUMENT';
  return 'STORAGE';
}

/** Maps anything the driver throws to a `MemoryError` naming the adapter and the operation. */
export const toMemoryError = createErrorMapper({
  adapter: ADAPTER,
  classify,
  driverDetails: (error) => ({ serverCode: numericCode(error) }),
});

/** `NOT_FOUND` for a thread a call needs. */
export function threadNotFound(threadId: string, detail = 'does not exist'): MemoryError {
  return new MemoryError('NOT_FOUND', `${ADAPTER}: thread ${JSON.stringify(threadId)} ${detail}`, {
    adapter: ADAPTER,
  });
}
