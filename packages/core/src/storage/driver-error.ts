import { redactCredentials } from './credentials.ts';

/**
 * Fields of driver errors that identify what failed by code or by schema name, never by value.
 * Everything else a driver attaches is dropped: a PostgreSQL `detail` ("Failing row contains
 * (…)") or `where` (a JSON excerpt), the document of a failed MongoDB write, the command an
 * Upstash client sent.
 */
const SAFE_FIELDS = [
  'code',
  'errno',
  'syscall',
  'extendedCode',
  'rawCode',
  'severity',
  'routine',
  'constraint',
  'table',
  'column',
  'schema',
  'dataType',
  'codeName',
  'errorNum',
] as const;

/**
 * A copy of a driver error that is safe to keep as a `MemoryError`'s `cause`: the same `name`,
 * its message passed through `redact` and then `redactCredentials` (always: a driver's message
 * may quote the URL it was given, password and token included), the code-like fields above, its stack frames, and its own
 * causes copied the same way. Loggers print an error's causes with all their fields, so keeping
 * the raw driver error would carry message text and working memory into logs; adapters keep this
 * copy instead. Values that are not errors become their redacted string.
 */
export function redactDriverError(error: unknown, redact: (message: string) => string = (m) => m): unknown {
  return copy(error, (message) => redactCredentials(redact(message)), 0);
}

function copy(error: unknown, redact: (message: string) => string, depth: number): unknown {
  if (!(error instanceof Error)) return redact(String(error));
  const message = redact(error.message);
  const cause = depth < 5 && error.cause !== undefined ? copy(error.cause, redact, depth + 1) : undefined;
  const clean = new Error(message, cause === undefined ? undefined : { cause });
  clean.name = error.name;
  const source = error as unknown as Record<string, unknown>;
  const target = clean as unknown as Record<string, unknown>;
  for (const field of SAFE_FIELDS) {
    const value = source[field];
    if (typeof value === 'string' || typeof value === 'number') target[field] = value;
  }
  clean.stack = `${clean.name}: ${message}\n${frames(error.stack)}`;
  return clean;
}

/** The `    at …` lines of a stack, without the message lines that precede them. */
function frames(stack: string | undefined): string {
  return (stack ?? '')
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .join('\n');
}
