import type { MemoryStorage } from './contract.ts';

/**
 * What tools need to know about an adapter, in one object its package exports from the
 * `./descriptor` subpath (a light module: the database driver is loaded only by `open`). The
 * inspector opens URLs through it, and the repository's faults scenarios open and provision
 * stores through it, instead of switching on adapter names.
 */
export interface AdapterDescriptor {
  /** The adapter's name, as its stores report it (`'pg'`). */
  readonly name: string;
  /** The package (`'@engram/pg'`). */
  readonly package: string;
  /** The URL schemes it opens, with their colon (`['postgres:', 'postgresql:']`). */
  readonly schemes: readonly string[];
  /**
   * A new store (not yet initialised) for `url`, with options as plain JSON (see
   * `DescriptorOptions`); credentials a URL does not hold (a REST token) are read from `env`
   * (default `process.env`). Loads the adapter and its driver.
   */
  open(
    url: string,
    options?: DescriptorOptions,
    env?: Record<string, string | undefined>,
  ): Promise<MemoryStorage>;
  /**
   * How long a lock or lease of a store opened with `options` lives before other writers break
   * it, in ms; `0` where locks are held by the server and never break.
   */
  leaseMs(options?: DescriptorOptions): number;
  /** The adapter's test service, for the suites that run against real servers. */
  readonly service: {
    /** The env variable holding the service's URL; `undefined` for an embedded database. */
    readonly envVar?: string;
    /**
     * A new, empty namespace of the service (a file, schema, key prefix or database) for one run,
     * named after `label`: how to open stores on it, and how to remove it afterwards.
     */
    provision(label: string, env?: Record<string, string | undefined>): Promise<ProvisionedStore>;
  };
}

/**
 * Options of `AdapterDescriptor.open`, as JSON (they travel to child processes in env variables).
 * Tools speak this shared vocabulary; an adapter ignores what does not apply to it and may take
 * more keys of its own (documented in its README; see `ownOptions`).
 */
export interface DescriptorOptions {
  /** The namespace prefix: table prefix (SQL), key prefix (Upstash), collection prefix (MongoDB). */
  prefix?: string;
  /** The PostgreSQL schema. */
  schema?: string;
  /** The MongoDB database (default: the URL's path). */
  database?: string;
  /** The most connections a pool opens. */
  maxConnections?: number;
  /** How long to wait for a connection (or a server) before failing with `CONNECTION`, in ms. */
  connectTimeoutMs?: number;
  /** How long a lock or lease the store takes lives before other writers break it, in ms. */
  leaseMs?: number;
  [option: string]: string | number | boolean | undefined;
}

/** A namespace of a test service (see `AdapterDescriptor.service.provision`). */
export interface ProvisionedStore {
  url: string;
  options: DescriptorOptions;
  /** Removes everything written there. */
  drop(): Promise<void>;
}

/**
 * The adapter's own options in `options`: those `known` names (its store's `optionKeys`) other than
 * the shared keys of `DescriptorOptions` (`prefix`, `schema`, `database`, `maxConnections`,
 * `connectTimeoutMs`, `leaseMs`), which a descriptor maps to its store's options where they
 * apply. Tools pass one set of options to every adapter, so a key another adapter takes
 * (`synchronous`, `vectorScanLimit`) is left out here; the store's constructor, called directly,
 * refuses a key it does not know.
 */
export function ownOptions(
  options: DescriptorOptions,
  known: readonly string[],
): Record<string, string | number | boolean | undefined> {
  const shared = ['prefix', 'schema', 'database', 'maxConnections', 'connectTimeoutMs', 'leaseMs'];
  return Object.fromEntries(
    Object.entries(options).filter(([key]) => known.includes(key) && !shared.includes(key)),
  );
}
