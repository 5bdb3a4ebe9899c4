import { MemoryError } from '../errors.ts';

/**
 * Any AI SDK language model object (`LanguageModelV2`/`V3` of `ai` 5–7, e.g. `openai('gpt-5-mini')`
 * or `MockLanguageModelV3` from `ai/test`). Core needs no `ai` dependency: only this shape.
 */
export interface LanguageModelLike {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: {
    prompt: Array<
      { role: 'system'; content: string } | { role: 'user'; content: Array<{ type: 'text'; text: string }> }
    >;
    abortSignal?: AbortSignal;
    // biome-ignore lint/suspicious/noExplicitAny: the options and result differ per specification version
  }): PromiseLike<any>;
}

/** Checks that `model` has the language-model shape, naming `field`. */
export function assertLanguageModel(model: unknown, field: string): asserts model is LanguageModelLike {
  const m = model as Partial<LanguageModelLike> | null;
  if (typeof m !== 'object' || m === null || typeof m.doGenerate !== 'function') {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `${field} must be an AI SDK language model object (with doGenerate), e.g. openai('gpt-5-mini'); model id strings are not resolved here`,
    );
  }
}

/** A model call that took longer than its timeout. */
export class ModelTimeoutError extends Error {
  override readonly name = 'ModelTimeoutError';
}

/**
 * One model call: `system` and one user message, the text of the answer. Aborted and rejected
 * with `ModelTimeoutError` after `timeoutMs`, whether or not the model honours the abort.
 */
export async function generate(
  model: LanguageModelLike,
  system: string,
  user: string,
  timeoutMs: number,
): Promise<string> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(
        new ModelTimeoutError(`${model.provider}:${model.modelId} gave no answer within ${timeoutMs} ms`),
      );
    }, timeoutMs);
  });
  try {
    const call = Promise.resolve(
      model.doGenerate({
        prompt: [
          { role: 'system', content: system },
          { role: 'user', content: [{ type: 'text', text: user }] },
        ],
        abortSignal: controller.signal,
      }),
    );
    call.catch(() => undefined); // a call that fails after the timeout is not unhandled
    const result = await Promise.race([call, timeout]);
    return textOf(result);
  } finally {
    clearTimeout(timer);
  }
}

/** The text of a `doGenerate` result: `content` text parts (V2/V3), or `text` (V1). */
function textOf(result: unknown): string {
  const r = result as { content?: unknown; text?: unknown } | null;
  if (Array.isArray(r?.content)) {
    return r.content
      .filter((p): p is { type: 'text'; text: string } => p?.type === 'text' && typeof p.text === 'string')
      .map((p) => p.text)
      .join('');
  }
  return typeof r?.text === 'string' ? r.text : '';
}
