import { MemoryError } from '../errors.ts';
import { assertKnownKeys } from '../known-keys.ts';
import { assertLanguageModel, type LanguageModelLike } from '../observations/model.ts';
import { describe, isPlainObject } from '../storage/validate.ts';

/** `options.threadTitle`: a model titles each new thread from its first exchange. */
export interface ThreadTitleOptions {
  /** An AI SDK language model object, e.g. `openai('gpt-5-mini')`. */
  model: LanguageModelLike;
  /** The system prompt of the title call; default `DEFAULT_TITLE_INSTRUCTIONS`. */
  instructions?: string;
  /** How long the title call may take before it is given up (ms). Default 5,000. */
  timeoutMs?: number;
}

/** `options.threadTitle` with its defaults filled in. */
export interface ResolvedThreadTitle {
  readonly model: LanguageModelLike;
  readonly instructions: string;
  readonly timeoutMs: number;
}

/** The default system prompt of the title call. */
export const DEFAULT_TITLE_INSTRUCTIONS = [
  'You write the title of a conversation from its first exchange.',
  'Answer with the title only: at most 8 words, in the language of the conversation,',
  'no quotes, no trailing punctuation, no prefix such as "Title:".',
].join(' ');

const KEYS = ['model', 'instructions', 'timeoutMs'];

/** `options.threadTitle` resolved, or `false` when it is not set; `INVALID_ARGUMENT` naming the field. */
export function resolveThreadTitle(value: unknown): ResolvedThreadTitle | false {
  const field = 'options.threadTitle';
  if (value === undefined || value === false) return false;
  if (!isPlainObject(value)) {
    throw invalid(`${field} must be { model, instructions?, timeoutMs? }, got ${describe(value)}`);
  }
  assertKnownKeys(value, KEYS, `${field}.`);
  if (value.model === undefined) {
    throw invalid(`${field} needs a language model: set ${field}.model, e.g. openai('gpt-5-mini')`);
  }
  assertLanguageModel(value.model, `${field}.model`);
  const instructions = value.instructions ?? DEFAULT_TITLE_INSTRUCTIONS;
  if (typeof instructions !== 'string' || instructions.trim() === '') {
    throw invalid(`${field}.instructions must be a non-empty string, got ${describe(instructions)}`);
  }
  const timeoutMs = value.timeoutMs ?? 5_000;
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw invalid(`${field}.timeoutMs must be a number greater than 0, got ${describe(timeoutMs)}`);
  }
  return Object.freeze({ model: value.model, instructions, timeoutMs });
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}
