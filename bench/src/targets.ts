import { adapters, unavailable } from '../../scripts/adapters.mjs';
import type { BenchTarget, LoadedTarget } from './target.ts';

/**
 * The bench module of each adapter of adapters.json, by name, as a loader: a process imports
 * only the adapter (and driver) it runs, which keeps the forked contention workers quick to start.
 * `pnpm check:repo` checks that every adapter of the list has one.
 */
const loaders: Record<string, () => Promise<BenchTarget>> = {
  libsql: async () => (await import('./adapters/libsql.ts')).libsql,
  pg: async () => (await import('./adapters/pg.ts')).postgres,
  upstash: async () => (await import('./adapters/upstash.ts')).upstash,
  mongodb: async () => (await import('./adapters/mongodb.ts')).mongodb,
  oracle: async () => (await import('./adapters/oracle.ts')).oracle,
};

/** Every adapter of adapters.json, in its order: the default of `--adapters`. */
export const ADAPTER_NAMES: readonly string[] = adapters.map((a) => a.name);

/**
 * Loads one target by name; throws naming the known ones for an unknown name. Its `unavailable()`
 * reports first an unset service variable (adapters.json's `envVar`, with the list's hint on how
 * to get the service), then the target's own reason.
 */
export async function loadTarget(name: string): Promise<LoadedTarget> {
  const entry = adapters.find((a) => a.name === name);
  const load = loaders[name];
  if (!entry || !load) throw new Error(`unknown adapter ${name}; known: ${ADAPTER_NAMES.join(', ')}`);
  const target = await load();
  return { ...target, unavailable: () => unavailable(entry) ?? target.unavailable?.() ?? null };
}
