import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createLexicalEmbedder,
  Memory,
  type MemoryOptions,
  type MemoryStorage,
  type SchemaSource,
  type SemanticRecallOptions,
} from '@engram/core';
import { redactCredentials } from '@engram/core/driver';
import { openWithDescriptor } from './adapters.ts';
import { type ConfigurationInfo, describeRecord, readRecord, recordedOptions } from './configuration.ts';

/** How to build a `Memory` when the store is given as a URL (a module brings its own). */
export interface StoreSettings {
  /** Working-memory scope the agent uses. Default `'resource'`. */
  scope?: 'resource' | 'thread';
  /** Path of a JSON Schema file: the memory is in schema (JSON) mode. */
  schemaFile?: string;
  /** Path of a Markdown template file. */
  templateFile?: string;
  /** Key prefix (Upstash), table prefix (pg) or collection prefix (MongoDB). */
  prefix?: string;
  /** PostgreSQL schema. Default `'public'`. */
  pgSchema?: string;
  /** MongoDB database; default: the URL's path, else `'engram'`. */
  dbName?: string;
  /**
   * Semantic recall with core's lexical embedder of this many dimensions
   * (`createLexicalEmbedder({ dimensions })`). Only useful when the store's vectors were made by
   * that same embedder: core refuses another space with an error naming both. Needs a store
   * that declares vectors.
   */
  lexicalEmbedder?: number;
  /** With `lexicalEmbedder`: the agent's `semanticRecall` settings (default: core's defaults). */
  recall?: SemanticRecallOptions;
  /** Environment to read tokens from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** An opened store: the memory to inspect and a label safe to print (no password, no token). */
export interface OpenedStore {
  memory: Memory;
  label: string;
  /**
   * Set when the working-memory mode and template were assumed rather than given (a URL without
   * `--schema` or `--template`, or a module exporting only a storage): how to give the real ones.
   * Absent when the configuration is exact (a module exporting the configured `Memory`).
   */
  assumed?: string;
  /** Where the configuration came from, and the record found in the store (see `ConfigurationInfo`). */
  configuration: ConfigurationInfo;
  /**
   * Set when the configuration was read from the store's `memory-config` record: one line naming
   * it, for stderr. Or, when a record exists but cannot be used, why.
   */
  note?: string;
  close(): Promise<void>;
}

/** How to give the real configuration of a store opened from a URL. */
const URL_CONFIGURATION_HINT =
  'pass --schema <file.json> (JSON mode) or --template <file.md>, or open a module exporting the configured Memory';

/**
 * Thrown for a store that cannot be opened or reached; the CLI prints the message and exits 1.
 * The message has credentials redacted (core's `redactCredentials`).
 */
export class StoreError extends Error {
  override name = 'StoreError';

  constructor(message: string, options?: ErrorOptions) {
    super(redactCredentials(message), options);
  }
}

/** The exports `engram-inspect` looks for in a store module, in this order. */
interface StoreModule {
  memory?: unknown;
  default?: unknown;
  create?: () => unknown;
}

/**
 * True for a URL, which `openStore` opens through the adapter whose descriptor claims its scheme
 * (anything else is a module path). Read by scheme only, never with `new URL`, which rejects
 * multi-host URLs (`mongodb://h1,h2/db`); a one-letter scheme is a Windows drive, not a URL.
 */
export function isStoreUrl(spec: string): boolean {
  return /^[a-z][a-z0-9+.-]+:/i.test(spec);
}

/** The URL without its password, query string and hash, for printing. */
export function redactUrl(spec: string): string {
  // A relative file: URL (`file:./x.db`) holds no secret and is printed as given.
  return redactCredentials(spec.replace(/[?#][\s\S]*$/, ''));
}

/**
 * The path of a store URL without its leading `/` (`db` of
 * `mongodb://user:pw@h1:27017,h2:27017/db?replicaSet=rs0`), read without `new URL` for the same
 * reason as `isStoreUrl`.
 */
export function urlPath(spec: string): string {
  return spec
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '')
    .replace(/[?#][\s\S]*$/, '')
    .replace(/^\//, '');
}

/**
 * Opens a store from a URL (`file:` libSQL, `postgres://`, `mongodb://`, an Upstash
 * `https://` REST URL with its token in `ENGRAM_UPSTASH_TOKEN` or `UPSTASH_REDIS_REST_TOKEN`) or
 * from a module exporting a configured `Memory` (`memory`, the default export, or `create()`
 * returning a `Memory` or a `MemoryStorage`). Calls `storage.init()`, so an unreachable store
 * fails here with a `StoreError`.
 */
export async function openStore(spec: string, settings: StoreSettings = {}): Promise<OpenedStore> {
  const opened = isStoreUrl(spec) ? await fromUrl(spec, settings) : await fromModule(spec);
  try {
    await opened.memory.storage.init();
  } catch (error) {
    await opened.memory.storage.close().catch(() => undefined);
    throw new StoreError(`cannot reach the store ${opened.label}: ${message(error)}`, { cause: error });
  }
  return opened;
}

async function fromModule(path: string): Promise<OpenedStore> {
  const href = pathToFileURL(isAbsolute(path) ? path : resolve(path)).href;
  let mod: StoreModule;
  try {
    mod = (await import(href)) as StoreModule;
  } catch (error) {
    throw new StoreError(`cannot import ${path}: ${message(error)}`, { cause: error });
  }
  let found: unknown = mod.memory ?? mod.default;
  if (found === undefined && typeof mod.create === 'function') found = await mod.create();
  const exported = asMemory(found);
  if (!exported) {
    throw new StoreError(
      `${path} must export a configured Memory (as \`memory\` or default) or a create() returning a Memory or a MemoryStorage`,
    );
  }
  const { memory, wrapped } = exported;
  const assumed = wrapped
    ? { assumed: `${path} exports a storage, not a Memory: export the configured Memory instead` }
    : {};
  return {
    memory,
    label: `${path} (${memory.storage.name})`,
    ...assumed,
    configuration: { source: wrapped ? 'assumed' : 'module', recorded: null },
    close: () => memory.storage.close(),
  };
}

/**
 * A `Memory` as is, or a bare storage wrapped in a Memory with working memory enabled
 * (`wrapped`: its configuration is assumed).
 */
function asMemory(value: unknown): { memory: Memory; wrapped: boolean } | null {
  if (typeof value !== 'object' || value === null) return null;
  const candidate = value as Partial<Memory> & Partial<MemoryStorage>;
  if (typeof candidate.recall === 'function' && typeof candidate.storage === 'object') {
    return { memory: value as Memory, wrapped: false };
  }
  if (typeof candidate.getThreadById === 'function' && typeof candidate.listThreads === 'function') {
    const options = { workingMemory: { enabled: true }, recordConfiguration: false };
    return { memory: new Memory({ storage: value as MemoryStorage, options }), wrapped: true };
  }
  return null;
}

/**
 * A memory over the store at `spec`. Its configuration is, in this order: `--schema` or
 * `--template` when given; else the `memory-config` record the agent's `Memory` wrote into the
 * store; else assumed (core's default template, with a warning). The inspector's own `Memory`
 * never records its configuration.
 */
async function fromUrl(spec: string, settings: StoreSettings): Promise<OpenedStore> {
  const given = settings.schemaFile !== undefined || settings.templateFile !== undefined;
  const flagged = given ? await memoryOptions(settings) : undefined;
  const storage = await storageFor(spec, settings);
  const label = `${redactUrl(spec)} (${storage.name})`;
  const fail = async (what: string, error: unknown): Promise<never> => {
    await storage.close().catch(() => undefined);
    throw new StoreError(`${what} ${label}: ${message(error)}`, { cause: error });
  };
  let found: Awaited<ReturnType<typeof readRecord>> = null;
  try {
    await storage.init();
    found = await readRecord(storage);
  } catch (error) {
    return fail('cannot reach the store', error);
  }
  const record = typeof found === 'string' ? null : found;
  const use = !given && record !== null;
  const fromRecord = use ? recordedOptions(record, settings) : undefined;
  const options: MemoryOptions = {
    ...(flagged ?? fromRecord?.options ?? (await memoryOptions(settings))),
    recordConfiguration: false,
  };
  const opened = {
    label,
    ...(given || use ? {} : { assumed: URL_CONFIGURATION_HINT }),
    configuration: { source: given ? 'flags' : use ? 'recorded' : 'assumed', recorded: record } as const,
    ...(use
      ? { note: describeRecord(record, settings.lexicalEmbedder !== undefined) }
      : typeof found === 'string' && !given
        ? { note: `the store's recorded memory configuration cannot be used: ${found}` }
        : {}),
    close: () => storage.close(),
  };
  if (settings.lexicalEmbedder === undefined) return { memory: new Memory({ storage, options }), ...opened };
  try {
    const embedder = createLexicalEmbedder({ dimensions: settings.lexicalEmbedder });
    const semanticRecall = fromRecord?.recall ?? settings.recall ?? true;
    return { memory: new Memory({ storage, embedder, options: { ...options, semanticRecall } }), ...opened };
  } catch (error) {
    return fail('cannot turn on semantic recall for', error);
  }
}

async function memoryOptions(settings: StoreSettings): Promise<MemoryOptions> {
  const workingMemory: NonNullable<MemoryOptions['workingMemory']> = {
    enabled: true,
    scope: settings.scope ?? 'resource',
  };
  if (settings.schemaFile) workingMemory.schema = (await readJson(settings.schemaFile)) as SchemaSource;
  if (settings.templateFile) workingMemory.template = await readText(settings.templateFile);
  return { workingMemory };
}

async function storageFor(spec: string, settings: StoreSettings): Promise<MemoryStorage> {
  const options = {
    prefix: settings.prefix,
    schema: settings.pgSchema,
    database: settings.dbName,
    maxConnections: 4,
  };
  const opened = await openWithDescriptor(spec, options, settings.env ?? process.env);
  if ('unknown' in opened) throw new StoreError(`cannot open ${redactUrl(spec)}: ${opened.unknown}`);
  return loadAdapter(opened.descriptor.package, spec, () => opened.storage);
}

/**
 * Loads an optional adapter package (by default: imports it); when it or a package it imports
 * (its driver, such as `@libsql/client`) is not installed, a `StoreError` names the package that
 * is missing.
 */
export async function loadAdapter<T>(
  name: string,
  spec: string,
  load: () => Promise<T> = () => import(name) as Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec(String((error as Error).message))?.[1];
    if (code === 'ERR_MODULE_NOT_FOUND' && missing !== undefined) {
      const driver = missing === name || /^(?:\/|file:)/.test(missing) ? name : missing;
      const needed = driver === name ? driver : `${driver} (imported by ${name})`;
      throw new StoreError(
        `the store ${redactUrl(spec)} needs the package ${needed}; install it next to @engram/inspector (for example \`pnpm add ${driver}\`)`,
      );
    }
    throw error;
  }
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new StoreError(`cannot read ${path}: ${message(error)}`, { cause: error });
  }
}

async function readJson(path: string): Promise<unknown> {
  const text = await readText(path);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StoreError(`${path} is not valid JSON: ${message(error)}`, { cause: error });
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
