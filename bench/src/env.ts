import { adapters } from '../../scripts/adapters.mjs';

/**
 * Returns `name` from the environment, setting it from `make()` first when unset. The parent
 * process picks per-run names (database file, schema, key prefix) this way, so the contention
 * workers it forks inherit them and open the same data.
 */
export function runScoped(name: string, make: () => string): string {
  const existing = process.env[name];
  if (existing) return existing;
  const value = make();
  process.env[name] = value;
  return value;
}

/**
 * The URL in a target's service variable (its `envVar` in adapters.json), or `undefined` when it
 * is unset. `loadTarget` reports an unset one as the reason to skip, so `open()` may count on it.
 */
export function serviceUrl(name: string): string | undefined {
  const envVar = adapters.find((a) => a.name === name)?.envVar;
  return (envVar && process.env[envVar]) || undefined;
}
