import { MemoryError } from '../errors.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import type { JsonObject } from '../storage/records.ts';
import { assertJson, describe, isPlainObject } from '../storage/validate.ts';
import { editMemory, readMemory, type WorkingMemoryLocation } from './location.ts';
import { mergeWorkingMemory } from './merge.ts';
import type { ResolvedSchema, SchemaCheck } from './schema.ts';

/** How many times an async-validated merge is retried when the document keeps changing. */
const ASYNC_ATTEMPTS = 20;

/** Thrown inside an edit to abandon it (nothing is written). */
class Abandon {
  constructor(readonly reason: 'stale' | 'async') {}
}

/** Throws `VALIDATION` listing the issues unless the check passed. */
export function throwIfInvalid(check: SchemaCheck): void {
  if (!check.ok) {
    throw new MemoryError(
      'VALIDATION',
      `working memory does not match the schema: ${check.issues.join('; ')}`,
      {
        details: { issues: check.issues },
      },
    );
  }
}

/**
 * Reads a whole schema-mode document (what `updateWorkingMemory` and thread metadata store): a
 * string holding a JSON object. Anything else is a document the schema can never accept, so it
 * throws `VALIDATION` (nothing is written). The message names `what`, never the text itself
 * (nor does a `cause`: the parser's message quotes the text). Text a database cannot store (a
 * lone surrogate in an escape) is `INVALID_ARGUMENT`, as in a patch.
 */
export function parseDocument(text: string, what: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const issue = 'the document is not valid JSON';
    throw new MemoryError('VALIDATION', `${what} must be a JSON object document in schema mode: ${issue}`, {
      details: { issues: [issue] },
    });
  }
  if (!isPlainObject(value)) {
    const issue = `the document is ${describe(value)}, not a JSON object`;
    throw new MemoryError('VALIDATION', `${what} must be a JSON object document in schema mode: ${issue}`, {
      details: { issues: [issue] },
    });
  }
  assertJson(value, what);
  return value as JsonObject;
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Remembers whether a schema answered asynchronously, so later merges go straight to that path. */
export interface PatchState {
  asyncSchema: boolean;
}

/**
 * Merges `patch` into the stored document, validates the result with `schema` and writes it in
 * one edit (see `editMemory`). A synchronous schema runs inside the edit, so the document
 * validated is exactly the one written. An async schema cannot run inside a storage
 * transaction: the merge of the value just read is validated outside, then written only if
 * the stored value is unchanged, retried a bounded number of times (`CONFLICT` past it).
 * Throws `VALIDATION` with nothing written when the merged document fails the schema.
 */
export async function patchWorkingMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  schema: ResolvedSchema,
  patch: JsonObject,
  state: PatchState,
  operation: string,
): Promise<JsonObject> {
  if (!state.asyncSchema) {
    let merged: JsonObject = {};
    try {
      await editMemory(storage, location, (current) => {
        merged = mergeWorkingMemory(current, patch);
        const check = schema.validate(merged);
        if (isThenable(check)) {
          check.then(undefined, () => undefined);
          throw new Abandon('async');
        }
        throwIfInvalid(check);
        return JSON.stringify(merged);
      });
      return merged;
    } catch (error) {
      if (!(error instanceof Abandon)) throw error;
      state.asyncSchema = true;
    }
  }
  for (let attempt = 0; attempt < ASYNC_ATTEMPTS; attempt++) {
    const current = await readMemory(storage, location);
    const merged = mergeWorkingMemory(current, patch);
    throwIfInvalid(await schema.validate(merged));
    const text = JSON.stringify(merged);
    try {
      await editMemory(storage, location, (now) => {
        if (now !== current) throw new Abandon('stale');
        return text;
      });
      return merged;
    } catch (error) {
      if (!(error instanceof Abandon)) throw error;
    }
  }
  throw new MemoryError(
    'CONFLICT',
    `${operation}: the working memory kept changing; gave up after ${ASYNC_ATTEMPTS} attempts`,
  );
}
