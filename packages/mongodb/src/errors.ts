import { createErrorMapper, MemoryError, type MemoryErrorCode } from '@engram/core/adapter';

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

function numericCode(error: unknown): number | undefined {
  const names = classNames(error);
  const { code, writeErrors } = error as { code?: unknown; writeErrors?: unknown };
  if (names.has('MongoError') && typeof code === 'number') return code;
  if (names.has('MongoBulkWriteError')) {
    const list = Array.isArray(writeErrors) ? writeErrors : [writeErrors];
    const first = (list[0] as { code?: unknown } | undefined)?.code;
    if (typeof first === 'number') return first;
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
  const names = classNames(error);
  if (CONNECTION_CLASSES.some((name) => names.has(name))) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return names.has('MongoServerError') && typeof code === 'number' && CONNECTION_CODES.has(code);
}

/** The engram code for a driver error raised by `operation`. */
export function classify(error: unknown, operation: string): MemoryErrorCode {
  if (isConnectionError(error)) return 'CONNECTION';
  if (operation === 'init') return 'MIGRATION';
  if (isDuplicateKey(error)) return 'CONFLICT';
  const code = numericCode(error);
  if (code !== undefined && UNSTORABLE_CODES.has(code)) return 'INVALID_ARGUMENT';
  const names = classNames(error);
  if (INVALID_CLASSES.some((name) => names.has(name))) return 'INVALID_ARGUMENT';
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
