import type { AdapterDescriptor, DescriptorOptions, MemoryStorage } from '@engram/core/driver';
import { memoryDescriptor } from '@engram/core/driver';
import { adapters } from '../../scripts/adapters.mjs';
import type { Scene } from './workload.ts';

/**
 * Everything needed to open a store, as plain JSON: the parent builds one per run and hands it
 * to every child process (in `FAULTS_TARGET`), so each process opens its own store on the same
 * data, through the adapter's descriptor.
 */
export interface Target {
  /** The adapter's name in adapters.json, or `'memory'` for core's reference store. */
  adapter: string;
  url: string;
  options: DescriptorOptions;
  /** Credentials the URL does not hold (a REST token), read by the descriptor. */
  env?: Record<string, string>;
}

/**
 * The descriptor of an adapter of adapters.json (or core's reference store), loaded from its
 * package's light `./descriptor` entry: a child process loads only its adapter's driver.
 */
export async function descriptorOf(adapter: string): Promise<AdapterDescriptor> {
  if (adapter === memoryDescriptor.name) return memoryDescriptor;
  const entry = adapters.find((a) => a.name === adapter);
  if (!entry)
    throw new Error(
      `unknown adapter ${adapter}; adapters.json lists ${adapters.map((a) => a.name).join(', ')}`,
    );
  return ((await import(`${entry.package}/descriptor`)) as { descriptor: AdapterDescriptor }).descriptor;
}

/** A new, not yet initialised store on the target's data. */
export async function openStore(target: Target): Promise<MemoryStorage> {
  return (await descriptorOf(target.adapter)).open(target.url, target.options, {
    ...process.env,
    ...target.env,
  });
}

/** The target a child process was given, from `FAULTS_TARGET`. */
export function targetFromEnv(): Target {
  const raw = process.env.FAULTS_TARGET;
  if (!raw) throw new Error('FAULTS_TARGET is not set');
  return JSON.parse(raw) as Target;
}

/**
 * The longest a lease of this target's store lives before other writers break it, in ms; 0 where
 * locks are held by the server (a row lock, SQLite's write lock) and never break.
 */
export async function leaseMs(target: Target): Promise<number> {
  return (await descriptorOf(target.adapter)).leaseMs(target.options);
}

/**
 * How long a writer may wait for another writer's lock on this target before failing, in ms:
 * half as long again as a lease (a lock whose holder was killed is broken when its lease ends),
 * and at least the 5 s every adapter waits for a lock the server holds.
 */
export async function lockTimeoutMs(target: Target): Promise<number> {
  return Math.max(5_000, 1.5 * (await leaseMs(target)));
}

/**
 * A new resource and thread for one run (ids `<prefix>-r-<run>` and `<prefix>-t-<run>`), the
 * thread saved through a store of its own that is closed again.
 */
export async function openScene(target: Target, prefix: string, title: string, run: string): Promise<Scene> {
  const scene: Scene = { resourceId: `${prefix}-r-${run}`, threadId: `${prefix}-t-${run}` };
  const setup = await openStore(target);
  await setup.init();
  const now = new Date();
  await setup.saveThread({
    id: scene.threadId,
    resourceId: scene.resourceId,
    title,
    metadata: {},
    createdAt: now,
    updatedAt: now,
  });
  await setup.close();
  return scene;
}
