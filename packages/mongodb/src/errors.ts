import { type Driver, MemoryError, type MemoryErrorCode, redactDriverError } from '@engram/core/driver';

/** Duplicate key (`E11000`); 11001 is its legacy form. */
const DUPLICATE_KEY = new Set([11000, 11001]);

/**
 * Server codes meaning the server is going away, unreachable, or timed the operation out:
 * HostUnreachable, HostNotFound, MaxTimeMSExpired, NetworkTimeout, ShutdownInProgress,
 * PrimarySteppedDown, ExceededTimeLimit, SocketException, NotWritablePrimary,
 * InterruptedAtShutdown, InterruptedDueToReplStateChange, NotPrimaryNoSecondaryOk,
 * NotPrimaryOrSecondary.
 */
const CONNECTION_CODES = new Set([6, 7, 50, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

/** Server codes for values MongoDB cannot store: BSONObjectTooLarge, too large for an update, Overflow (nesting). */
const UNSTORABLE_CODES = new Set([10334, 17419, 15]);

/** Driver classes (and their subclasses) meaning the server could not be reached or went away. */
const CONNECTION_CLASSES = [
  'MongoNetworkError',
  'MongoServerSelectionError',
  'MongoTopologyClosedError',
  'MongoNotConnectedError',
  'MongoClientClosedError',
  'MongoServerClosedError',
  'MongoOperationTimeoutError',
];

/** Driver classes for a value or argument the driver refuses before sending it. */
const INVALID_CLASSES = ['BSONError', 'MongoInvalidArgumentError'];

/**
 * The class names along an error's prototype chain (and its `name`). Errors are recognised by
 * name, not `instanceof`: a client from another copy of the driver in the user's tree throws
 * that copy's classes, which `instanceof` against this package's copy would not match.
 */
function classNames(error: unknown): Set<string> {
  const names = new Set<string>();
  if (typeof error !== 'object' || error === null) return names;
  const name = (error as { name?: unknown }).name;
  if (typeof name === 'string') names.add(name);
  for (let proto = Object.getPrototypeOf(error); proto && proto !== Object.prototype; ) {
    const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
    if (typeof ctor?.name === 'string') names.add(ctor.name);
    proto = Object.getPrototypeOf(proto);
  }
  return names;
}

/** The server's code of a driver error, or of the first write error of a bulk write. */
function numericCode(error: unknown): number | undefined {
  const names = classNames(error);
  const { code, writeErrors } = error as { code?: unknown; writeErrors?: unknown };
  const first = names.has('MongoBulkWriteError') ? [writeErrors].flat()[0] : undefined;
  if (names.has('MongoError') && typeof code === 'number') return code;
  const bulk = (first as { code?: unknown } | undefined)?.code;
  return typeof bulk === 'number' ? bulk : undefined;
}

/** True for a duplicate-key error, also when it comes inside a bulk write. */
export function isDuplicateKey(error: unknown): boolean {
  const code = numericCode(error);
  return code !== undefined && DUPLICATE_KEY.has(code);
}

/** The engram code for a driver error raised by `operation`. */
export function classify(error: unknown, operation: string): MemoryErrorCode {
  const names = classNames(error);
  const code = numericCode(error);
  const wrapped = (error as { errorResponse?: unknown }).errorResponse; // a bulk write's driver error
  if (names.has('MongoBulkWriteError') && wrapped instanceof Error) return classify(wrapped, operation);
  if (CONNECTION_CLASSES.some((name) => names.has(name))) return 'CONNECTION';
  if (names.has('MongoServerError') && code !== undefined && CONNECTION_CODES.has(code)) return 'CONNECTION';
  if (operation === 'init') return 'MIGRATION';
  if (code !== undefined && DUPLICATE_KEY.has(code)) return 'CONFLICT';
  if (code !== undefined && UNSTORABLE_CODES.has(code)) return 'INVALID_ARGUMENT';
  if (INVALID_CLASSES.some((name) => names.has(name))) return 'INVALID_ARGUMENT';
  return 'STORAGE';
}

export const errors: Driver['errors'] = {
  classify,
  driverDetails: (error) => ({ serverCode: numericCode(error) }),
};

/** A `MemoryError` of this adapter (`mongodb: <message>`), with a redacted `cause` when given. */
export function mongoError(code: MemoryErrorCode, message: string, cause?: unknown): MemoryError {
  return new MemoryError(code, `mongodb: ${message}`, {
    adapter: 'mongodb',
    ...(cause !== undefined && { cause: redactDriverError(cause) }),
  });
}
