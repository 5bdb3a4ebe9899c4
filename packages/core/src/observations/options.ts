import { MemoryError } from '../errors.ts';
import { assertKnownKeys } from '../known-keys.ts';
import { describe, isPlainObject } from '../storage/validate.ts';
import { assertLanguageModel, type LanguageModelLike } from './model.ts';

/** `options.observationalMemory.observation`: when and how the Observer runs. */
export interface ObservationOptions {
  /** The Observer's model, when it differs from `observationalMemory.model`. */
  model?: LanguageModelLike;
  /** Unobserved message tokens that trigger an observation. Default 30,000. */
  messageTokens?: number;
  /**
   * Background buffering: observe a chunk each time this many new tokens arrived (a number of
   * tokens, or a fraction of `messageTokens`), or `false` to observe only when the threshold is
   * reached. Default 0.2 (every 20% of the threshold).
   */
  bufferTokens?: number | false;
  /** Share of the threshold that activation turns into observations (the rest stays raw). Default 0.8. */
  bufferActivation?: number;
  /** Past this many times the threshold, a turn waits for a synchronous observation. Default 1.2. */
  blockAfter?: number;
  /**
   * The Observer also returns working-memory changes, applied with the same atomic merge (or
   * template replace) as the tool; the main model then gets no working-memory tool. Default false.
   */
  manageWorkingMemory?: boolean;
}

/** `options.observationalMemory.reflection`: when the Reflector condenses the log. */
export interface ReflectionOptions {
  /** The Reflector's model, when it differs from `observationalMemory.model`. */
  model?: LanguageModelLike;
  /** Observation tokens that trigger a reflection. Default 40,000. */
  observationTokens?: number;
}

/** `options.observationalMemory`: the fourth layer (see the README). */
export interface ObservationalMemoryOptions {
  /** The model of the Observer and the Reflector (an AI SDK `LanguageModel` object). */
  model?: LanguageModelLike;
  /** `'thread'` (default): one log per thread; `'resource'`: one log per resource, lines attributed to threads. */
  scope?: 'thread' | 'resource';
  observation?: ObservationOptions;
  reflection?: ReflectionOptions;
  /** How long a model call may take before the turn goes on without it (ms). Default 5,000. */
  timeoutMs?: number;
  /**
   * Messages may use what the log leaves of `messageTokens + observationTokens` (the threshold
   * grows while the log is small). Needs `observation.bufferTokens: false`. Default false.
   */
  shareTokenBudget?: boolean;
}

/** The options with every default filled in. */
export interface ResolvedObservationalMemory {
  readonly scope: 'thread' | 'resource';
  readonly observer: LanguageModelLike;
  readonly reflector: LanguageModelLike;
  readonly messageTokens: number;
  /** Tokens per background chunk; `false` when buffering is off. */
  readonly bufferTokens: number | false;
  readonly bufferActivation: number;
  readonly blockAfter: number;
  readonly manageWorkingMemory: boolean;
  readonly observationTokens: number;
  readonly timeoutMs: number;
  readonly shareTokenBudget: boolean;
}

/** The peer's defaults. */
export const OBSERVATIONAL_DEFAULTS = Object.freeze({
  messageTokens: 30_000,
  bufferTokens: 0.2,
  bufferActivation: 0.8,
  blockAfter: 1.2,
  observationTokens: 40_000,
  timeoutMs: 5_000,
});

const KEYS = ['model', 'scope', 'observation', 'reflection', 'timeoutMs', 'shareTokenBudget'];
const OBSERVATION_KEYS = [
  'model',
  'messageTokens',
  'bufferTokens',
  'bufferActivation',
  'blockAfter',
  'manageWorkingMemory',
];
const REFLECTION_KEYS = ['model', 'observationTokens'];

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

function positive(value: unknown, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalid(`${field} must be a number greater than 0, got ${describe(value)}`);
  }
  return value;
}

function modelOf(value: unknown, field: string): LanguageModelLike | undefined {
  if (value === undefined) return undefined;
  assertLanguageModel(value, field);
  return value;
}

/**
 * `options.observationalMemory` resolved, or `false` when it is off. Each refusal names the
 * option: both `model` and a per-role model, thresholds ≤ 0, a buffer as large as the threshold.
 */
export function resolveObservationalMemory(value: unknown): ResolvedObservationalMemory | false {
  const field = 'options.observationalMemory';
  if (value === undefined || value === false) return false;
  const o: ObservationalMemoryOptions = value === true ? {} : (value as ObservationalMemoryOptions);
  if (!isPlainObject(o)) throw invalid(`${field} must be true, false or an object, got ${describe(value)}`);
  assertKnownKeys(o, KEYS, `${field}.`);
  const observation = o.observation ?? {};
  const reflection = o.reflection ?? {};
  if (!isPlainObject(observation)) throw invalid(`${field}.observation must be an object`);
  if (!isPlainObject(reflection)) throw invalid(`${field}.reflection must be an object`);
  assertKnownKeys(observation, OBSERVATION_KEYS, `${field}.observation.`);
  assertKnownKeys(reflection, REFLECTION_KEYS, `${field}.reflection.`);

  const shared = modelOf(o.model, `${field}.model`);
  const observer = modelOf(observation.model, `${field}.observation.model`);
  const reflector = modelOf(reflection.model, `${field}.reflection.model`);
  if (shared && (observer || reflector)) {
    const which = observer ? 'observation.model' : 'reflection.model';
    throw invalid(`${field}: set either model (for both) or ${which}, not both`);
  }
  if (!(shared ?? observer) || !(shared ?? reflector)) {
    throw invalid(
      `${field} needs a language model: set ${field}.model (or both observation.model and reflection.model), e.g. openai('gpt-5-mini')`,
    );
  }

  const scope = o.scope ?? 'thread';
  if (scope !== 'thread' && scope !== 'resource') {
    throw invalid(`${field}.scope must be 'thread' or 'resource', got ${describe(scope)}`);
  }
  const messageTokens = positive(
    observation.messageTokens,
    `${field}.observation.messageTokens`,
    OBSERVATIONAL_DEFAULTS.messageTokens,
  );
  const buffer = observation.bufferTokens ?? OBSERVATIONAL_DEFAULTS.bufferTokens;
  let bufferTokens: number | false = false;
  if (buffer !== false) {
    const n = positive(buffer, `${field}.observation.bufferTokens`, 0);
    bufferTokens = n < 1 ? Math.max(1, Math.round(n * messageTokens)) : n;
    if (bufferTokens >= messageTokens) {
      throw invalid(
        `${field}.observation.bufferTokens (${bufferTokens} tokens) must be smaller than messageTokens (${messageTokens}); use false to turn buffering off`,
      );
    }
  }
  const bufferActivation = positive(
    observation.bufferActivation,
    `${field}.observation.bufferActivation`,
    OBSERVATIONAL_DEFAULTS.bufferActivation,
  );
  if (bufferActivation > 1) {
    throw invalid(`${field}.observation.bufferActivation must be at most 1, got ${bufferActivation}`);
  }
  const blockAfter = positive(
    observation.blockAfter,
    `${field}.observation.blockAfter`,
    OBSERVATIONAL_DEFAULTS.blockAfter,
  );
  if (blockAfter < 1) throw invalid(`${field}.observation.blockAfter must be at least 1, got ${blockAfter}`);
  const manage = observation.manageWorkingMemory ?? false;
  if (typeof manage !== 'boolean') {
    throw invalid(`${field}.observation.manageWorkingMemory must be a boolean, got ${describe(manage)}`);
  }
  const share = o.shareTokenBudget ?? false;
  if (typeof share !== 'boolean')
    throw invalid(`${field}.shareTokenBudget must be a boolean, got ${describe(share)}`);
  if (share && bufferTokens !== false) {
    throw invalid(
      `${field}.shareTokenBudget cannot be combined with buffering: set ${field}.observation.bufferTokens to false`,
    );
  }
  return Object.freeze({
    scope,
    shareTokenBudget: share,
    observer: (shared ?? observer) as LanguageModelLike,
    reflector: (shared ?? reflector) as LanguageModelLike,
    messageTokens,
    bufferTokens,
    bufferActivation,
    blockAfter,
    manageWorkingMemory: manage,
    observationTokens: positive(
      reflection.observationTokens,
      `${field}.reflection.observationTokens`,
      OBSERVATIONAL_DEFAULTS.observationTokens,
    ),
    timeoutMs: positive(o.timeoutMs, `${field}.timeoutMs`, OBSERVATIONAL_DEFAULTS.timeoutMs),
  });
}
