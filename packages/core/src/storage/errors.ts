import { MemoryError, type MemoryErrorCode, NETWORK_ERROR_CODES } from '../errors.ts';
import { redactCredentials } from './credentials.ts';
import { redactDriverError } from './driver-error.ts';

/** How deep `driverCodes` and `hasNetworkCode` follow an error's `cause` chain. */
const MAX_CAUSE_DEPTH = 5;

/** The string `code` of a driver or socket error (`'23505'`, `'ORA-00001'`, `'ECONNREFUSED'`), if any. */
export function driverCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** An error's message; the members' messages joined with `; ` for an `AggregateError` that has some. */
export function driverMessage(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(driverMessage).join('; ');
  }
  return error instanceof Error ? error.message : String(error);
}

/** The string `code`s of an error and of its causes, outermost first. */
export function driverCodes(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current instanceof Error; depth++) {
    const code = driverCode(current);
    if (code !== undefined) codes.push(code);
    current = current.cause;
  }
  return codes;
}

/** True when the error, one of its causes, or a member of an `AggregateError` carries a code of `NETWORK_ERROR_CODES`. */
export function hasNetworkCode(error: unknown): boolean {
  if (error instanceof AggregateError && error.errors.some(hasNetworkCode)) return true;
  return driverCodes(error).some((code) => NETWORK_ERROR_CODES.has(code));
}

/** What an adapter tells `createErrorMapper` about its driver. */
export interface ErrorMapperOptions {
  /** The adapter name that starts every message and fills `MemoryError.adapter`. */
  adapter: string;
  /**
   * The adapter's classification table: the engram code for a driver error raised by
   * `operation`, or `undefined` to fall through to the defaults — `CONNECTION` when the error
   * carries a code of core's `NETWORK_ERROR_CODES` (also on a cause or an `AggregateError`
   * member), else `MIGRATION` during `init`, else `STORAGE`.
   */
  classify: (error: unknown, operation: string) => MemoryErrorCode | undefined;
  /**
   * The driver's own code(s) for `details` (`{ sqlState }`, `{ serverCode }`, …): codes only,
   * never values. Keys whose value is `undefined` are left out. Default: none.
   */
  driverDetails?: (error: unknown) => Record<string, unknown>;
  /**
   * The text after `"<adapter>: <operation> failed: "`: a clearer reason or a hint for some codes.
   * Gets the driver's message already redacted. Default: that message.
   */
  describe?: (code: MemoryErrorCode, reason: string, error: unknown) => string;
  /**
   * Removes user data a driver puts into its messages (e.g. the command it sent). Applied to
   * the reason in the message and to every message of the cause, before core's
   * `redactCredentials`, which always runs. Default: none needed.
   */
  redact?: (message: string) => string;
}

/** Maps anything a driver throws during `operation` to a `MemoryError`. */
export type ErrorMapper = (error: unknown, operation: string) => MemoryError;

/**
 * The error mapping every adapter shares; the adapter supplies only its classification. The
 * returned function passes a `MemoryError` through unchanged and turns anything else into one
 * whose message is `"<adapter>: <operation> failed: <reason>"` (the reason with credentials
 * redacted), whose `cause` is `redactDriverError(error, redact)` (codes and stack frames, no
 * values, no credentials), and whose `details`
 * hold `operation` and the driver code(s) from `driverDetails`.
 */
export function createErrorMapper(options: ErrorMapperOptions): ErrorMapper {
  const { adapter, classify, driverDetails, describe, redact = (message: string) => message } = options;
  return (error, operation) => {
    if (error instanceof MemoryError) return error;
    const code =
      classify(error, operation) ??
      (hasNetworkCode(error) ? 'CONNECTION' : operation === 'init' ? 'MIGRATION' : 'STORAGE');
    const reason = redactCredentials(redact(driverMessage(error)));
    return new MemoryError(
      code,
      `${adapter}: ${operation} failed: ${describe?.(code, reason, error) ?? reason}`,
      {
        adapter,
        cause: redactDriverError(error, redact),
        details: { operation, ...definedEntries(driverDetails?.(error)) },
      },
    );
  };
}

/** `record` without its `undefined` values. */
function definedEntries(record: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record ?? {}).filter(([, value]) => value !== undefined));
}
