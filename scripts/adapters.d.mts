/** One entry of adapters.json. */
export interface AdapterEntry {
  /** The package directory under packages/, and the name faults, bench and CI use. */
  name: string;
  package: string;
  /** The driver, a peer dependency of the package. */
  driver: string;
  /** True for a database that runs in-process (no service, no variable). */
  embedded?: boolean;
  /** The variable holding the service's URL. */
  envVar?: string;
  /** scripts/<name>.sh that start the service, in order. */
  serviceScripts?: string[];
  /** docker-compose.yml services of the adapter. */
  compose?: string[];
  /** Why there is no service script on this machine, and how to get a server. */
  noServiceScript?: string;
  /** Servers the faults restart scenario starts for it, in order (faults/src/servers.ts). */
  dedicatedServers?: string[];
  /** Why the restart scenario has no dedicated server for it. */
  noDedicatedServer?: string;
}

/** Every adapter of adapters.json, in its order. */
export const adapters: readonly AdapterEntry[];

/** How to get an adapter's service: the script that starts it, or why none can run here. */
export function serviceHint(adapter: AdapterEntry): string | undefined;

/** Why an adapter cannot run in `env` (its service variable is unset, and how to set it), or null. */
export function unavailable(adapter: AdapterEntry, env?: NodeJS.ProcessEnv): string | null;
