import { MemoryError } from '../errors.ts';
import type { EmbeddingSpace } from '../storage/vectors.ts';

/**
 * Any AI SDK embedding model (`EmbeddingModelV3` of `ai` 6, or the same shape with another
 * `specificationVersion`), such as `openai.embedding('text-embedding-3-small')` or
 * `createLexicalEmbedder()`. Core needs no `ai` dependency: only this shape.
 */
export interface EmbeddingModelLike {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  /** Values per `doEmbed` call; `undefined` means no limit. */
  readonly maxEmbeddingsPerCall?: PromiseLike<number | undefined> | number | undefined;
  doEmbed(options: {
    values: string[];
    abortSignal?: AbortSignal;
  }): PromiseLike<{ embeddings: number[][]; usage?: { tokens: number } }>;
}

/** Embedding token usage, summed over calls. */
export interface EmbeddingUsage {
  tokens: number;
  /** `doEmbed` calls made. */
  calls: number;
}

/** Values sent per call when the model states no limit. */
const DEFAULT_BATCH = 100;

/** Checks that `model` has the embedding-model shape. */
export function assertEmbedder(model: unknown): asserts model is EmbeddingModelLike {
  const m = model as Partial<EmbeddingModelLike> | null;
  if (
    typeof m !== 'object' ||
    m === null ||
    typeof m.doEmbed !== 'function' ||
    typeof m.provider !== 'string' ||
    typeof m.modelId !== 'string'
  ) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      'embedder must be an AI SDK embedding model (provider, modelId, doEmbed), e.g. openai.embedding(…) or createLexicalEmbedder()',
    );
  }
}

/** The space name of an embedder: `provider:modelId`. */
export function embedderId(model: EmbeddingModelLike): string {
  return `${model.provider}:${model.modelId}`;
}

/** `provider:modelId/dimensions`, as errors show a space. */
export function describeSpace(space: EmbeddingSpace): string {
  return `${space.id} (${space.dimensions} dimensions)`;
}

/**
 * Scales `values` to unit length, in double precision; `null` for a vector with no direction
 * (every value zero) or with a non-finite value, which then gets no vector at all (a message is
 * not found by recall, a query finds nothing). Values are divided by the largest magnitude
 * before squaring, so huge (`1e200`) and subnormal (`1e-310`) values keep their direction
 * instead of overflowing to a zero vector or underflowing to none.
 */
export function normalize(values: ArrayLike<number>): Float32Array | null {
  let max = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v)) return null;
    max = Math.max(max, Math.abs(v));
  }
  if (max === 0) return null;
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    const v = (values[i] as number) / max;
    sum += v * v;
  }
  // sum is in [1, values.length]: no overflow, no underflow.
  const norm = Math.sqrt(sum);
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = (values[i] as number) / max / norm;
  return out;
}

/**
 * Embeds `texts` in batches of the model's `maxEmbeddingsPerCall`, one call after another, and
 * adds the tokens used to `usage`. Every vector must have the same length. Errors from the model
 * propagate unchanged (callers decide what a failure means).
 */
export async function embedAll(
  model: EmbeddingModelLike,
  texts: string[],
  usage: EmbeddingUsage,
  abortSignal?: AbortSignal,
): Promise<number[][]> {
  const limit = (await model.maxEmbeddingsPerCall) ?? DEFAULT_BATCH;
  const size = Number.isInteger(limit) && limit > 0 ? limit : DEFAULT_BATCH;
  const out: number[][] = [];
  for (let at = 0; at < texts.length; at += size) {
    const values = texts.slice(at, at + size);
    const result = await model.doEmbed({ values, abortSignal });
    usage.calls++;
    usage.tokens += result.usage?.tokens ?? 0;
    if (!Array.isArray(result.embeddings) || result.embeddings.length !== values.length) {
      throw new MemoryError(
        'VALIDATION',
        `embedder ${embedderId(model)} returned ${result.embeddings?.length} embeddings for ${values.length} values`,
      );
    }
    out.push(...result.embeddings);
  }
  return out;
}
