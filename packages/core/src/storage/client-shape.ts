import { MemoryError } from '../errors.ts';

/** What an adapter expects of a client or pool a user injects: the members it uses, by type. */
export interface ClientShape {
  /** The adapter name, used as the message prefix and in `details`. */
  adapter: string;
  /** The constructor option holding the client, e.g. `'client'` or `'pool'`. */
  option: string;
  /** What the user should pass, as the driver's docs name it, e.g. `'a pg.Pool'`. */
  expected: string;
  /** Members the adapter uses, with their `typeof`: `{ connect: 'function', protocol: 'string' }`. */
  members: Readonly<Record<string, 'function' | 'string' | 'object'>>;
}

/**
 * Checks an injected client by the members the adapter calls, not with `instanceof`: a client
 * built by another copy of the driver (two versions in one dependency tree, a bundled copy, a
 * wrapper or proxy) has other classes but works the same, and is accepted. Anything else is
 * refused with an `INVALID_ARGUMENT` naming the option, what it should be and the members it
 * lacks. Returns the value typed as the adapter's client.
 */
export function checkClientShape<T>(value: unknown, shape: ClientShape): T {
  const { adapter, option, expected } = shape;
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${adapter}: ${option} must be ${expected}, got ${value === null ? 'null' : typeof value}`,
      { adapter, details: { option } },
    );
  }
  const record = value as Record<string, unknown>;
  const missing = Object.entries(shape.members)
    .filter(([name, type]) => typeof record[name] !== type)
    .map(([name, type]) => (type === 'function' ? `${name}()` : `${name} (${type})`));
  if (missing.length > 0) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${adapter}: ${option} must be ${expected}; the object passed lacks ${missing.join(', ')}`,
      { adapter, details: { option, missing } },
    );
  }
  return value as T;
}
