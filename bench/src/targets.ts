import type { BenchTarget } from './target.ts';

/**
 * Every backend the bench knows, by the name `--adapters` takes, as a loader: a process imports
 * only the adapter (and driver) it runs, which keeps the forked contention workers quick to start.
 */
export const targetLoaders: Record<string, () => Promise<BenchTarget>> = {
  libsql: async () => (await import('./adapters/libsql.ts')).libsql,
  pg: async () => (await import('./adapters/pg.ts')).postgres,
  upstash: async () => (await import('./adapters/upstash.ts')).upstash,
  mongodb: async () => (await import('./adapters/mongodb.ts')).mongodb,
};

/** Loads one target by name; throws naming the known ones for an unknown name. */
export async function loadTarget(name: string): Promise<BenchTarget> {
  const load = targetLoaders[name];
  if (!load) throw new Error(`unknown adapter ${name}; known: ${Object.keys(targetLoaders).join(', ')}`);
  return load();
}
