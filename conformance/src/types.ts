import type { MemoryStorage } from '@engram/core';

/** The areas of the suite, in the order they run. */
export const AREAS = [
  'lifecycle',
  'records',
  'threads',
  'clone',
  'messages',
  'resources',
  'working-memory',
  'concurrency',
  'isolation',
  'errors',
  'differential',
  'recall',
  'observations',
  'turns',
  'purge',
  'settings',
] as const;

/** One area of the suite. */
export type AreaName = (typeof AREAS)[number];

/** Human names of the areas, used as `describe` titles and in the CLI table. */
export const AREA_TITLES: Record<AreaName, string> = {
  lifecycle: 'lifecycle',
  records: 'records',
  threads: 'threads',
  clone: 'cloning a thread',
  messages: 'messages',
  resources: 'resources',
  'working-memory': 'working memory',
  concurrency: 'concurrency',
  isolation: 'isolation & hostile ids',
  errors: 'errors',
  differential: 'differential (property tests)',
  recall: 'semantic recall (vectors and keywords)',
  observations: 'observational memory',
  turns: 'turn records',
  purge: 'deleting and exporting a resource',
  settings: 'settings (recorded memory configuration)',
};

/** How an adapter hands its store to the suite. */
export interface ConformanceInit {
  /** Shown in test names and the CLI table (`'pg'`, `'libsql'`, …). */
  name: string;
  /** A fresh store instance; called once or more per check. The suite calls `init()` on it. */
  create: () => MemoryStorage | Promise<MemoryStorage>;
  /** Called on every store `create` returned, after its check (typically `store.close()`). */
  destroy?: (store: MemoryStorage) => void | Promise<void>;
  /**
   * A module (URL, `file:` URL string or path) exporting `async function create()`. The
   * concurrency area forks `processes` OS processes that each import it and race one another.
   * Forked processes inherit `process.env`: pass connection details through env variables.
   */
  worker?: URL | string;
  /**
   * A new, empty place for a store that nothing has initialised yet: a database file, schema, key
   * prefix or database name of its own. The concurrency area has `processes` OS processes (each
   * with its `worker` store, opened with `env` added to its environment) call `init()` on it at
   * once. Without it (or without `worker`) that check is skipped, unless the store is `processLocal`.
   */
  fresh?: () => FreshStore | Promise<FreshStore>;
  /** Makes this instance's backend fail (close its pool, socket, client) for the errors area. */
  breakConnection?: (store: MemoryStorage) => void | Promise<void>;
  /**
   * The longest the store lets a lock or lease be held before other writers break it, in ms
   * (give the `worker` stores the same lease, e.g. through an env variable). The concurrency
   * area stops a racing process with SIGSTOP for twice this long (at least 1 s) while it writes,
   * so that any lease it holds runs out; declare a short lease so that this takes seconds.
   * Stores that hold locks without a lease need not declare one.
   */
  leaseMs?: number;
  /**
   * Stores configured with `secret` as their credential (the password in the URL, the token, the
   * `authToken`) against an endpoint where every call must fail: a closed port, or the real
   * server refusing the login. Keyed by what each one is (`'password in the URL, closed port'`).
   * A factory may also throw, when the adapter refuses the configuration at construction. The
   * errors area checks that no error any of them raises carries `secret` in its message,
   * `String(error)`, stack or anywhere in its `cause` chain. Without it that check is skipped.
   */
  withSecret?: (secret: string) => Record<string, () => MemoryStorage | Promise<MemoryStorage>>;
  /**
   * Every row the store's backend holds for `store` (each table, key or document, bookkeeping
   * included), each as text. The purge area checks that after `deleteResource` none names the
   * erased resource, its threads or its messages, and that another resource's rows are listed.
   * Without it that check is skipped.
   */
  storedRows?: (store: MemoryStorage) => Promise<string[]>;
  /** How many OS processes race in the concurrency area. Default 4. */
  processes?: number;
  /**
   * Skips the whole suite with this reason in the test name (e.g. the service is not
   * available). `true` skips with a generic reason; `false`/`undefined` runs it.
   */
  skip?: string | boolean;
}

/** A new, empty store location handed out by `ConformanceInit.fresh`. */
export interface FreshStore {
  /** Environment variables that make the `worker` module's `create()` open this location. */
  env: Record<string, string>;
  /** A store on this location, in the suite's own process (the suite calls `init()` on it). */
  create: () => MemoryStorage | Promise<MemoryStorage>;
  /** Removes the location afterwards (drop the database, schema or keys). */
  drop?: () => void | Promise<void>;
  /**
   * A store on this location with the keyword index off (the adapter's `keywords: false`). The
   * recall area saves, edits, moves and deletes messages through it between two stores from
   * `create`, and checks the second indexes them as the reference does. Without it that check is
   * skipped.
   */
  createWithoutKeywords?: () => MemoryStorage | Promise<MemoryStorage>;
}

/** What a check gets to work with. */
export interface CheckContext {
  /** The initializer the suite was started with. */
  readonly init: ConformanceInit;
  /** Creates a store with `init.create()`, calls `init()` on it and destroys it after the check. */
  store(): Promise<MemoryStorage>;
  /** Like `store()`, but without calling `init()`: for checks of the lifecycle itself. */
  storeWithoutInit(): Promise<MemoryStorage>;
  /** A fresh random id with a readable prefix; use it for every record a check creates. */
  id(prefix?: string): string;
  /** A line of output (shown by vitest and by the CLI). */
  log(line: string): void;
}

/** One named assertion about a store, runnable with or without vitest. */
export interface Check {
  area: AreaName;
  /** The test name; a function when it depends on the initializer (e.g. the process count). */
  name: string | ((init: ConformanceInit) => string);
  /**
   * A reason to skip, known from the initializer alone (e.g. no `breakConnection`). Checks that
   * depend on a capability the store declares call `skipCheck(reason)` once they have the store.
   */
  skipReason?: (init: ConformanceInit) => string | undefined;
  run: (ctx: CheckContext) => Promise<void>;
}

/** The outcome of one check. */
export interface CheckResult {
  area: AreaName;
  name: string;
  status: 'pass' | 'fail' | 'skip';
  /** Why it was skipped. */
  reason?: string;
  /** Why it failed. */
  error?: unknown;
  /** Lines the check logged. */
  output: string[];
  durationMs: number;
}
