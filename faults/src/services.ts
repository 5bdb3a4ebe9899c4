import { randomBytes } from 'node:crypto';
import { adapters, serviceHint } from '../../scripts/adapters.mjs';
import { descriptorOf, type Target } from './targets.ts';

/** A namespace of its own on a service (a file, a schema, a key prefix, a database). */
export interface Provisioned {
  target: Target;
  /** Removes everything the run wrote. */
  cleanup(): Promise<void>;
}

/** An adapter the scenarios can run against, and how to find its service. */
export interface AdapterService {
  /** The adapter's name in adapters.json. */
  name: string;
  /** The env variable naming the shared service, or `undefined` for embedded databases. */
  envVar?: string;
  /** How to get the service: the script that starts it, or why none can here. */
  hint?: string;
  /** The servers its restart scenario starts for itself, in order (see `DEDICATED_SERVERS`). */
  dedicatedServers?: string[];
  /** Why it has none. */
  noDedicatedServer?: string;
}

/** Every adapter of the repository's one list (adapters.json), in its order. */
export const ADAPTERS: readonly AdapterService[] = adapters.map((a) => ({
  name: a.name,
  envVar: a.envVar,
  hint: serviceHint(a),
  dedicatedServers: a.dedicatedServers,
  noDedicatedServer: a.noDedicatedServer,
}));

/** A random lowercase suffix for names of this run. */
export function runId(): string {
  return randomBytes(5).toString('hex');
}

/**
 * A fresh namespace for one run on the adapter's shared service (a file, schema, key prefix or
 * database of its own), made by the adapter's descriptor from the env variables.
 */
export async function provision(name: AdapterService['name'], label: string): Promise<Provisioned> {
  const id = `${label}_${runId()}`;
  const space = await (await descriptorOf(name)).service.provision(id);
  return {
    target: { adapter: name, url: space.url, options: space.options },
    cleanup: () => space.drop(),
  };
}
