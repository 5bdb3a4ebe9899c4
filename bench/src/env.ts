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
