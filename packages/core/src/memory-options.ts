import { MemoryError } from './errors.ts';
import { assertKnownKeys } from './known-keys.ts';
import {
  type ObservationalMemoryOptions,
  type ResolvedObservationalMemory,
  resolveObservationalMemory,
} from './observations/options.ts';
import {
  DEFAULT_FUSION,
  type RecallFusion,
  type RecallMode,
  type RecallThreshold,
  type ResolvedSemanticRecall,
} from './recall/engine.ts';
import type { WorkingMemoryScope } from './storage/records.ts';
import { describe, isPlainObject } from './storage/validate.ts';
import {
  type ResolvedThreadTitle,
  resolveThreadTitle,
  type ThreadTitleOptions,
} from './threads/title-options.ts';
import type { SchemaSource } from './working-memory/schema.ts';
import type { InvalidStoredPolicy } from './working-memory/update.ts';

/** Working-memory settings of a `Memory`. */
export interface WorkingMemoryOptions {
  /** Default `true` when a `workingMemory` object is given. */
  enabled?: boolean;
  /** `'resource'` (default): shared by every thread of a resource. `'thread'`: one per thread. */
  scope?: WorkingMemoryScope;
  /** Markdown template (template mode). Exclusive with `schema`. */
  template?: string;
  /** A Standard Schema or a JSON Schema object (schema mode). Exclusive with `template`. */
  schema?: SchemaSource;
  /** `'vnext'` selects the search-and-replace tool; template mode only. Default `'stable'`. */
  version?: 'stable' | 'vnext';
  /** Experimental: deliver the memory as a state signal instead of a system message. */
  useStateSignals?: boolean;
  /**
   * Schema mode: what a merge does when the stored document itself fails the schema (say the
   * schema changed since it was written). `'reject'` (default): `VALIDATION` naming the stored
   * document's invalid fields, nothing written. `'reset'`: the patch is merged into `{}`, so
   * the stored fields are dropped. A function `(stored, issues) => repaired`: synchronous and
   * pure, its result must pass the schema (else `VALIDATION`) and the patch is merged into it.
   * Either way the merged result must pass the schema, and it is written in the same atomic
   * update. Only consulted when a merge fails; a valid stored document is never touched.
   */
  onInvalidStored?: InvalidStoredPolicy;
}

/**
 * Semantic recall settings (`true` means every default). The user's latest message is the
 * query; the `topK` best-matching earlier messages are found, and each comes back with
 * `messageRange` neighbours of its own thread.
 */
export interface SemanticRecallOptions {
  /**
   * How messages are ranked: `'vector'` (cosine similarity of embeddings: needs an `embedder`
   * and a storage with `vectors`), `'keyword'` (BM25 on the storage's keyword index: no
   * embedder), or `'hybrid'` (both lists fused by reciprocal rank). Default: `'hybrid'` with an
   * embedder on a storage with both domains, `'vector'` with an embedder on a storage without
   * a keyword index, `'keyword'` without an embedder.
   */
  mode?: RecallMode;
  /**
   * Minimum scores; weaker hits are dropped: `vector` (cosine similarity, −1…1) and `keyword`
   * (BM25, ≥ 0). In hybrid mode each list is cut by its own threshold before fusion. Default:
   * none.
   */
  threshold?: { vector?: number; keyword?: number };
  /**
   * How hybrid mode fuses its two lists: weighted reciprocal-rank fusion, where a hit at rank r
   * (from 1) of a list adds `weight / (rankConstant + r)`. Default: plain RRF, `{ rankConstant:
   * 60, weights: { vector: 1, keyword: 1 } }` (`DEFAULT_FUSION`); with core's lexical embedder,
   * whose vectors know only words, `{ rankConstant: 1, weights: { vector: 1, keyword: 3 } }`
   * (`LEXICAL_FUSION`). Values left out are plain RRF's. A larger keyword weight trusts exact
   * words (names, ids, numbers) over meaning; a smaller `rankConstant` gives the top ranks of
   * each list more lead. Each value is 0 or from 1e-6 to 1e6. Used in hybrid mode only.
   */
  fusion?: { rankConstant?: number; weights?: { vector?: number; keyword?: number } };
  /** How many similar messages to retrieve, 1–1000. Default 3. */
  topK?: number;
  /**
   * Neighbours added around each match, from the match's own thread: a number for both sides,
   * or `{ before, after }`. Default 2 (two before, two after).
   */
  messageRange?: number | { before: number; after: number };
  /** `'resource'` (default): every thread of the resource. `'thread'`: the current thread only. */
  scope?: WorkingMemoryScope;
}

/** Default semantic recall settings. */
export const SEMANTIC_RECALL_DEFAULTS: ResolvedSemanticRecall = Object.freeze({
  threshold: Object.freeze({}),
  topK: 3,
  before: 2,
  after: 2,
  scope: 'resource',
});

/** Options of a `Memory`. */
export interface MemoryOptions {
  /** How many of the newest messages `recall` returns; `false` returns all. Default 10. */
  lastMessages?: number | false;
  /** Shows working memory but refuses every write to it (`UNSUPPORTED`). Default `false`. */
  readOnly?: boolean;
  workingMemory?: WorkingMemoryOptions;
  /** Semantic recall; see `SemanticRecallOptions`. Default `false` (off). */
  semanticRecall?: boolean | SemanticRecallOptions;
  /**
   * Observational memory: an Observer model turns old messages into a dated observation log that
   * replaces them in the prompt; a Reflector condenses the log (see the README). Off by default.
   */
  observationalMemory?: boolean | ObservationalMemoryOptions;
  /**
   * Titles each new thread with a model, from its first exchange (the first user message and the
   * first assistant reply), when that reply is saved. Only an empty title is replaced. Off by default.
   */
  threadTitle?: ThreadTitleOptions;
  /**
   * Keeps a turn record for every turn `memoryStep` saves: the ids of the history window, the
   * recall hits with their scores, a hash of the working memory shown, the observation
   * generation and token counts (ids and numbers, no content); read them with
   * `memory.listTurns` or the inspector. Needs a storage with the `turns` domain. Default `false`.
   */
  turnRecords?: boolean;
  /**
   * Records this configuration (working-memory mode, template or schema, recall settings) in the
   * store's `settings` domain after the first write, so tools that open the store from a URL
   * (the inspector) render the prompt the agent gets. Skipped on a store without the domain.
   * Default `true`.
   */
  recordConfiguration?: boolean;
}

/** `MemoryOptions` with every default filled in. */
export interface ResolvedMemoryOptions {
  readonly lastMessages: number | false;
  readonly readOnly: boolean;
  readonly workingMemory: {
    readonly enabled: boolean;
    readonly scope: WorkingMemoryScope;
    /** `'json'` when a schema is set, else `'markdown'`. */
    readonly format: 'markdown' | 'json';
    /** The template as given (`undefined` when none was; the default is used then). */
    readonly template?: string;
    readonly schema?: SchemaSource;
    readonly version: 'stable' | 'vnext';
    readonly useStateSignals: boolean;
    readonly onInvalidStored: InvalidStoredPolicy;
  };
  /** `false` when off, else the settings with defaults filled in. */
  readonly semanticRecall: false | ResolvedSemanticRecall;
  readonly observationalMemory: false | ResolvedObservationalMemory;
  readonly threadTitle: false | ResolvedThreadTitle;
  readonly turnRecords: boolean;
  readonly recordConfiguration: boolean;
}

/** Every key of `MemoryOptions`; the `satisfies` makes a key added to the interface a type error here. */
const OPTION_KEYS = Object.keys({
  lastMessages: true,
  readOnly: true,
  workingMemory: true,
  semanticRecall: true,
  observationalMemory: true,
  threadTitle: true,
  turnRecords: true,
  recordConfiguration: true,
} satisfies Record<keyof MemoryOptions, true>);

/** Every key of `SemanticRecallOptions`, checked the same way. */
const SEMANTIC_RECALL_KEYS = Object.keys({
  mode: true,
  threshold: true,
  fusion: true,
  topK: true,
  messageRange: true,
  scope: true,
} satisfies Record<keyof SemanticRecallOptions, true>);

/** Every key of `WorkingMemoryOptions`, checked the same way. */
const WORKING_MEMORY_KEYS = Object.keys({
  enabled: true,
  scope: true,
  template: true,
  schema: true,
  version: true,
  useStateSignals: true,
  onInvalidStored: true,
} satisfies Record<keyof WorkingMemoryOptions, true>);

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw invalid(`${field} must be a boolean, got ${describe(value)}`);
  }
  return value;
}

/**
 * Checks options and fills in defaults. Throws `INVALID_ARGUMENT` (also for an unknown key, at
 * the top level or in `workingMemory`, naming it and the closest valid one) or `UNSUPPORTED`.
 */
export function resolveMemoryOptions(options: MemoryOptions | undefined): ResolvedMemoryOptions {
  const o: MemoryOptions = options ?? {};
  if (!isPlainObject(o)) throw invalid(`options must be an object, got ${describe(o)}`);
  assertKnownKeys(o, OPTION_KEYS, 'options.');

  const lastMessages = o.lastMessages ?? 10;
  if (
    lastMessages !== false &&
    (typeof lastMessages !== 'number' || !Number.isInteger(lastMessages) || lastMessages < 0)
  ) {
    throw invalid(
      `options.lastMessages must be a non-negative integer or false, got ${describe(lastMessages)}`,
    );
  }
  const readOnly = optionalBoolean(o.readOnly, 'options.readOnly') ?? false;
  const recordConfiguration = optionalBoolean(o.recordConfiguration, 'options.recordConfiguration') ?? true;

  const semanticRecall = resolveSemanticRecall(o.semanticRecall);
  const observationalMemory = resolveObservationalMemory(o.observationalMemory);
  const threadTitle = resolveThreadTitle(o.threadTitle);
  const turnRecords = optionalBoolean(o.turnRecords, 'options.turnRecords') ?? false;

  const wm = o.workingMemory;
  if (wm !== undefined && !isPlainObject(wm)) {
    throw invalid(`options.workingMemory must be an object, got ${describe(wm)}`);
  }
  const w: WorkingMemoryOptions = wm ?? {};
  assertKnownKeys(w, WORKING_MEMORY_KEYS, 'options.workingMemory.');
  const enabled = optionalBoolean(w.enabled, 'options.workingMemory.enabled') ?? wm !== undefined;
  const scope = w.scope ?? 'resource';
  if (scope !== 'resource' && scope !== 'thread') {
    throw invalid(`options.workingMemory.scope must be 'resource' or 'thread', got ${describe(scope)}`);
  }
  if (w.template !== undefined && typeof w.template !== 'string') {
    throw invalid(`options.workingMemory.template must be a string, got ${describe(w.template)}`);
  }
  if (w.template !== undefined && w.schema !== undefined) {
    throw invalid('options.workingMemory: set either template (Markdown) or schema (JSON), not both');
  }
  const version = w.version ?? 'stable';
  if (version !== 'stable' && version !== 'vnext') {
    throw invalid(`options.workingMemory.version must be 'stable' or 'vnext', got ${describe(version)}`);
  }
  if (version === 'vnext' && w.schema !== undefined) {
    throw invalid("options.workingMemory.version 'vnext' works with templates only, not with a schema");
  }
  const useStateSignals =
    optionalBoolean(w.useStateSignals, 'options.workingMemory.useStateSignals') ?? false;
  if (useStateSignals && version === 'vnext') {
    throw invalid("options.workingMemory.useStateSignals cannot be combined with version 'vnext'");
  }

  const onInvalidStored = w.onInvalidStored ?? 'reject';
  if (onInvalidStored !== 'reject' && onInvalidStored !== 'reset' && typeof onInvalidStored !== 'function') {
    throw invalid(
      `options.workingMemory.onInvalidStored must be 'reject', 'reset' or a function (stored, issues) => repaired, got ${describe(onInvalidStored)}`,
    );
  }
  if (w.onInvalidStored !== undefined && w.schema === undefined) {
    throw invalid(
      'options.workingMemory.onInvalidStored works with a schema only (template mode replaces the whole document)',
    );
  }

  return Object.freeze({
    lastMessages,
    readOnly,
    workingMemory: Object.freeze({
      enabled,
      scope,
      format: w.schema === undefined ? 'markdown' : 'json',
      template: w.template,
      schema: w.schema,
      version,
      useStateSignals,
      onInvalidStored,
    }),
    semanticRecall,
    observationalMemory,
    threadTitle,
    turnRecords,
    recordConfiguration,
  });
}

function count(value: unknown, field: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw invalid(`${field} must be an integer from 0 to ${max}, got ${describe(value)}`);
  }
  return value;
}

/** `false`, or the semantic recall settings with defaults; `INVALID_ARGUMENT` for bad values. */
function resolveSemanticRecall(value: unknown): false | ResolvedSemanticRecall {
  if (value === undefined || value === false) return false;
  if (value === true) return SEMANTIC_RECALL_DEFAULTS;
  if (!isPlainObject(value)) {
    throw invalid(`options.semanticRecall must be a boolean or an object, got ${describe(value)}`);
  }
  assertKnownKeys(value, SEMANTIC_RECALL_KEYS, 'options.semanticRecall.');
  const d = SEMANTIC_RECALL_DEFAULTS;
  const topK = value.topK === undefined ? d.topK : count(value.topK, 'options.semanticRecall.topK', 1000);
  if (topK === 0)
    throw invalid(
      'options.semanticRecall.topK must be at least 1 (set semanticRecall: false to turn it off)',
    );
  const range = value.messageRange;
  let before = d.before;
  let after = d.after;
  if (typeof range === 'number') {
    before = after = count(range, 'options.semanticRecall.messageRange', 100);
  } else if (isPlainObject(range)) {
    assertKnownKeys(range, ['before', 'after'], 'options.semanticRecall.messageRange.');
    before = count(range.before ?? 0, 'options.semanticRecall.messageRange.before', 100);
    after = count(range.after ?? 0, 'options.semanticRecall.messageRange.after', 100);
  } else if (range !== undefined) {
    throw invalid(
      `options.semanticRecall.messageRange must be a number or { before, after }, got ${describe(range)}`,
    );
  }
  const scope = value.scope ?? d.scope;
  if (scope !== 'resource' && scope !== 'thread') {
    throw invalid(`options.semanticRecall.scope must be 'resource' or 'thread', got ${describe(scope)}`);
  }
  const mode = value.mode;
  if (mode !== undefined && mode !== 'vector' && mode !== 'keyword' && mode !== 'hybrid') {
    throw invalid(
      `options.semanticRecall.mode must be 'vector', 'keyword' or 'hybrid', got ${describe(mode)}`,
    );
  }
  const threshold = resolveThreshold(value.threshold);
  const fusion = resolveFusion(value.fusion);
  return Object.freeze({
    ...(mode === undefined ? {} : { mode }),
    threshold,
    ...(fusion === undefined ? {} : { fusion }),
    topK,
    before,
    after,
    scope,
  });
}

/** The range of a fusion weight or rank constant other than 0. */
const FUSION_MIN = 1e-6;
const FUSION_MAX = 1e6;

/** The fusion given, its missing values from `DEFAULT_FUSION`; `undefined` when none is given. */
function resolveFusion(value: unknown): RecallFusion | undefined {
  if (value === undefined) return undefined;
  const at = 'options.semanticRecall.fusion';
  if (!isPlainObject(value)) {
    throw invalid(`${at} must be { rankConstant?, weights?: { vector?, keyword? } }, got ${describe(value)}`);
  }
  assertKnownKeys(value, ['rankConstant', 'weights'], `${at}.`);
  // Bounded so that fused scores neither overflow nor underflow and ranks stay apart.
  const nonNegative = (n: unknown, name: string, fallback: number): number => {
    if (n === undefined) return fallback;
    if (typeof n !== 'number' || !(n === 0 || (n >= FUSION_MIN && n <= FUSION_MAX))) {
      throw invalid(
        `${at}.${name} must be 0 or a number from ${FUSION_MIN} to ${FUSION_MAX}, got ${describe(n)}`,
      );
    }
    return n;
  };
  const weights = value.weights ?? {};
  if (!isPlainObject(weights)) {
    throw invalid(`${at}.weights must be { vector?, keyword? }, got ${describe(weights)}`);
  }
  assertKnownKeys(weights, ['vector', 'keyword'], `${at}.weights.`);
  const d = DEFAULT_FUSION;
  const vector = nonNegative(weights.vector, 'weights.vector', d.weights.vector);
  const keyword = nonNegative(weights.keyword, 'weights.keyword', d.weights.keyword);
  if (vector === 0 && keyword === 0) {
    throw invalid(`${at}.weights cannot both be 0 (use mode 'vector' or 'keyword' for one list)`);
  }
  const rankConstant = nonNegative(value.rankConstant, 'rankConstant', d.rankConstant);
  return Object.freeze({ rankConstant, weights: Object.freeze({ vector, keyword }) });
}

function resolveThreshold(value: unknown): RecallThreshold {
  if (value === undefined) return SEMANTIC_RECALL_DEFAULTS.threshold;
  if (!isPlainObject(value)) {
    throw invalid(`options.semanticRecall.threshold must be { vector?, keyword? }, got ${describe(value)}`);
  }
  assertKnownKeys(value, ['vector', 'keyword'], 'options.semanticRecall.threshold.');
  const out: { vector?: number; keyword?: number } = {};
  for (const key of ['vector', 'keyword'] as const) {
    const n = value[key];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isFinite(n)) {
      throw invalid(`options.semanticRecall.threshold.${key} must be a finite number, got ${describe(n)}`);
    }
    out[key] = n;
  }
  return Object.freeze(out);
}
