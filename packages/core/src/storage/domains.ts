import { MemoryError } from '../errors.ts';
import { NO_KEYWORD_INDEX } from '../recall/analyzer.ts';
import type { MemoryStorage } from './contract.ts';
import { type KeywordDriver, type KeywordStore, ValidatedKeywords } from './keywords.ts';
import { type ObservationDriver, type ObservationStore, ValidatedObservations } from './observations.ts';
import { type SettingsDriver, type SettingsStore, ValidatedSettings } from './settings.ts';
import { type TurnDriver, type TurnStore, ValidatedTurns } from './turns.ts';
import { ValidatedVectors } from './vector-store.ts';
import type { VectorDriver, VectorStore } from './vectors.ts';

/**
 * Optional domains: groups of primitives a driver may add beside threads, messages and
 * resources, each behind a feature of `Memory`. Adding one means: its driver interface (with
 * these hooks), an entry in `DOMAINS`, its key in `DriverDomains` and `StoreDomains`, one file
 * per adapter that supports it, and one conformance area. A domain kept for the whole store
 * rather than per message (`settings`) has no hooks and is left out of `CASCADE_DOMAINS`.
 */

/** Runs a domain's driver operation through the store: waits until it is open, maps foreign errors. */
export type DomainRunner = <T>(operation: string, fn: () => Promise<T>) => Promise<T>;

/**
 * Runs `fn` inside one write of the driver that has read the thread's owner (`undefined`: no
 * such thread) through `messages.places`, so the thread cannot be deleted or change hands before
 * the write ends: what a domain writes there for the thread goes with it.
 */
export type ThreadWrite = (
  threadId: string,
  fn: (tx: unknown, owner: string | undefined) => Promise<void>,
) => Promise<void>;

/** What core calls on every present domain inside the writes that delete messages. */
export interface DomainHooks<Tx = unknown> {
  /** Inside a write: removes what the domain keeps for every message of the thread. */
  deleteByThread(tx: Tx, threadId: string): Promise<void>;
  /** Inside a write: removes what the domain keeps for these messages (ids that exist). */
  deleteByMessages(tx: Tx, messageIds: string[]): Promise<void>;
  /**
   * Inside a write: removes what the domain keeps for the resource itself, apart from its threads
   * and messages (for example a resource-scope observation log, or bookkeeping that still names
   * the resource's deleted records). `deleteResource` calls it last, after every thread went, in
   * the write that removes the resource row; required for a domain whose definition says
   * `resourceRows: true`, optional for the others.
   */
  deleteByResource?(tx: Tx, resourceId: string): Promise<void>;
}

/** The optional domains of a driver, by key. */
export interface DriverDomains<Tx> {
  /** Vector search for semantic recall. */
  vectors?: VectorDriver<Tx>;
  /** A keyword (BM25) index of message text, for keyword and hybrid recall. */
  keywords?: KeywordDriver<Tx>;
  /** Observation logs for observational memory. */
  observations?: ObservationDriver<Tx>;
  /** Records of what each model call was given, for `options.turnRecords`. */
  turns?: TurnDriver<Tx>;
  /** Named JSON objects kept for the whole store (the recorded memory configuration). */
  settings?: SettingsDriver;
}

/** The optional domains of a store, as applications see them (validated). */
export interface StoreDomains {
  vectors?: VectorStore;
  keywords?: KeywordStore;
  observations?: ObservationStore;
  turns?: TurnStore;
  settings?: SettingsStore;
}

/** The name of an optional domain. */
export type DomainName = keyof DriverDomains<unknown>;

interface DomainDefinition<K extends DomainName> {
  /** What the domain does, for messages. */
  what: string;
  /** The `Memory` option that needs it. */
  feature: string;
  /** Whether the domain keeps rows of a resource beyond its messages' (`deleteByResource` needed). */
  resourceRows: boolean;
  /**
   * Whether the store offers the domain the driver declares (default: yes). A domain kept but not
   * offered still runs its cascade hooks.
   */
  offered?(driver: NonNullable<DriverDomains<unknown>[K]>): boolean;
  /** What to do about it when `requireDomain` finds it missing. */
  hint?: string;
  /** The store-side object of the domain: validation in front of the driver's primitives. */
  wrap(
    adapter: string,
    driver: NonNullable<DriverDomains<unknown>[K]>,
    run: DomainRunner,
    inThread: ThreadWrite,
  ): NonNullable<StoreDomains[K]>;
}

/** Every optional domain, in the order core runs their cascade hooks. */
export const DOMAINS: { [K in DomainName]: DomainDefinition<K> } = {
  vectors: {
    what: 'vector search',
    feature: 'options.semanticRecall',
    resourceRows: false,
    wrap: (adapter, driver, run) => new ValidatedVectors(adapter, driver, run),
  },
  keywords: {
    what: 'a keyword index',
    feature: 'options.semanticRecall',
    resourceRows: false,
    offered: (driver) => driver.analyzer.id !== NO_KEYWORD_INDEX.id,
    hint: 'a store created with `keywords: false` keeps none: leave that option out',
    wrap: (adapter, driver, run) => new ValidatedKeywords(adapter, driver, run),
  },
  observations: {
    what: 'observation logs',
    feature: 'options.observationalMemory',
    resourceRows: true,
    wrap: (adapter, driver, run, inThread) => new ValidatedObservations(adapter, driver, run, inThread),
  },
  turns: {
    what: 'turn records',
    feature: 'options.turnRecords',
    resourceRows: false,
    wrap: (adapter, driver, run, inThread) => new ValidatedTurns(adapter, driver, run, inThread),
  },
  settings: {
    what: 'settings',
    feature: 'options.recordConfiguration',
    resourceRows: false,
    wrap: (_adapter, driver, run) => new ValidatedSettings(driver, run),
  },
};

/** The names of every optional domain. */
export const DOMAIN_NAMES = Object.keys(DOMAINS) as DomainName[];

/** The domains that keep rows per message, whose hooks run in the delete cascade, in order. */
export const CASCADE_DOMAINS = [
  'vectors',
  'keywords',
  'observations',
  'turns',
] as const satisfies DomainName[];

/**
 * The domain `name` of `storage`, or `UNSUPPORTED` naming the domain, the feature that needs it
 * and the store: the check `Memory` runs at construction for each configured feature.
 */
export function requireDomain<K extends DomainName>(
  storage: MemoryStorage,
  name: K,
): NonNullable<StoreDomains[K]> {
  const domain = (storage as StoreDomains)[name];
  if (domain) return domain as NonNullable<StoreDomains[K]>;
  const { what, feature, hint } = DOMAINS[name];
  throw new MemoryError(
    'UNSUPPORTED',
    `${feature} needs a storage with ${what} (the optional domain "${name}"); ${JSON.stringify(storage.name)} does not declare ${name}${hint ? ` (${hint})` : ''}`,
    { adapter: storage.name, details: { domain: name } },
  );
}
