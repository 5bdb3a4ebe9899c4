import { adapters, unavailable } from '../../scripts/adapters.mjs';
import type { BenchTarget, LoadedTarget } from './target.ts';

/**
 * The bench module of an adapter of adapters.json: `./adapters/<name>.ts`, exporting its target
 * as `target`. A process imports only the adapter (and driver) it runs, which keeps the forked
 * contention workers quick to start. `pnpm check:repo` checks that every adapter of the list has one.
 */
async function load(name: string): Promise<BenchTarget> {
  return ((await import(`./adapters/${name}.ts`)) as { target: BenchTarget }).target;
}

/** Every adapter of adapters.json, in its order: the default of `--adapters`. */
export const ADAPTER_NAMES: readonly string[] = adapters.map((a) => a.name);

/**
 * Loads one target by name; throws naming the known ones for an unknown name. Its `unavailable()`
 * reports first an unset service variable (adapters.json's `envVar`, with the list's hint on how
 * to get the service), then the target's own reason.
 */
export async function loadTarget(name: string): Promise<LoadedTarget> {
  const entry = adapters.find((a) => a.name === name);
  if (!entry) throw new Error(`unknown adapter ${name}; known: ${ADAPTER_NAMES.join(', ')}`);
  const target = await load(name);
  return { ...target, unavailable: () => unavailable(entry) ?? target.unavailable?.() ?? null };
}
