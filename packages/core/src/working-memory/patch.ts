import { MemoryError } from '../errors.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import type { JsonObject } from '../storage/records.ts';
import { assertJson, describe, isPlainObject, isStorableJson } from '../storage/validate.ts';
import { editMemory, readMemory, type WorkingMemoryLocation } from './location.ts';
import { mergeWorkingMemory, parseStored } from './merge.ts';
import type { ResolvedSchema, SchemaCheck } from './schema.ts';

/** How many times an async-validated merge is retried when the document keeps changing. */
const ASYNC_ATTEMPTS = 20;

/** Thrown inside an edit to abandon it (nothing is written). */
class Abandon {
  constructor(readonly reason: 'stale' | 'async') {}
}

/**
 * What a merge does when the stored document itself fails the schema (a schema that changed
 * after it was written): `'reject'` throws `VALIDATION` saying so; `'reset'` merges the patch
 * into `{}` instead (the stored fields are dropped); a function receives a copy of the stored
 * document and its issues and returns the repaired document, which must pass the schema. It
 * runs inside the atomic update, so it must be synchronous and pure (it may run more than once).
 */
export type InvalidStoredPolicy =
  | 'reject'
  | 'reset'
  | ((stored: JsonObject, issues: readonly string[]) => JsonObject);

/** How to repair an invalid stored document, for error messages. */
const REPAIR_HINT =
  "Repair it: set options.workingMemory.onInvalidStored to 'reset' (start from {}) or to a function returning the repaired document, replace it with memory.updateWorkingMemory, or edit it in the inspector (engram-inspect --allow-edits)";

/** Throws `VALIDATION` listing the issues unless the check passed. */
export function throwIfInvalid(check: SchemaCheck): void {
  if (!check.ok) throw invalidMerge(check.issues);
}

function invalidMerge(issues: string[], after = ''): MemoryError {
  return new MemoryError(
    'VALIDATION',
    `working memory does not match the schema${after}: ${issues.join('; ')}`,
    {
      details: { issues },
    },
  );
}

function invalidStored(message: string, issues: string[], storedIssues: string[]): MemoryError {
  return new MemoryError('VALIDATION', message, { details: { issues, storedIssues, invalidStored: true } });
}

/** The schema's output as the document to store: `VALIDATION` unless it is a JSON object. */
function output(value: unknown): JsonObject {
  if (!isPlainObject(value) || !isStorableJson(value, 0)) {
    const issue = `the schema's output is ${describe(value)}, not a JSON object (check its transforms)`;
    throw new MemoryError('VALIDATION', `working memory does not match the schema: ${issue}`, {
      details: { issues: [issue] },
    });
  }
  return value as JsonObject;
}

/** Runs an `onInvalidStored` function; `VALIDATION` unless it returns a JSON object. */
function repair(
  policy: Exclude<InvalidStoredPolicy, string>,
  stored: JsonObject,
  issues: string[],
): JsonObject {
  const repaired: unknown = policy(stored, [...issues]);
  if (isPlainObject(repaired) && isStorableJson(repaired, 0)) return repaired as JsonObject;
  const got =
    typeof (repaired as { then?: unknown } | null)?.then === 'function' ? 'a Promise' : describe(repaired);
  throw invalidStored(
    `options.workingMemory.onInvalidStored must return the repaired document synchronously as a JSON object, got ${got}; nothing was written`,
    issues,
    issues,
  );
}

/** A merge as steps: yields each document to validate, receives its check, returns the one to store. */
type MergePlan = Generator<JsonObject, JsonObject, SchemaCheck>;

/**
 * Merges `patch` into `current` and, when the result fails the schema, finds out whether the
 * stored document was already invalid: then `policy` decides (see `InvalidStoredPolicy`). The
 * document returned is the schema's output for the final merge.
 */
function* planMerge(current: string | null, patch: JsonObject, policy: InvalidStoredPolicy): MergePlan {
  const check = yield mergeWorkingMemory(current, patch);
  if (check.ok) return output(check.value);
  if (current === null) throw invalidMerge(check.issues);
  const stored = parseStored(current);
  const storedCheck = yield stored;
  if (storedCheck.ok) throw invalidMerge(check.issues);
  const storedIssues = storedCheck.issues;
  if (policy === 'reject') {
    throw invalidStored(
      `the stored working memory does not match the schema, so no patch can be merged into it (the stored document is invalid, perhaps written under an older schema): ${storedIssues.join('; ')}. Nothing was written. ${REPAIR_HINT}`,
      check.issues,
      storedIssues,
    );
  }
  let base: JsonObject = {};
  if (policy !== 'reset') {
    base = repair(policy, stored, storedIssues);
    const repaired = yield base;
    if (!repaired.ok) {
      throw invalidStored(
        `options.workingMemory.onInvalidStored returned a document that does not match the schema: ${repaired.issues.join('; ')}; nothing was written`,
        repaired.issues,
        storedIssues,
      );
    }
  }
  const retried = yield mergeWorkingMemory(base, patch);
  if (!retried.ok) {
    const after =
      policy === 'reset'
        ? " (merged into {} by onInvalidStored: 'reset')"
        : ' (merged into the document onInvalidStored repaired)';
    throw invalidMerge(retried.issues, after);
  }
  return output(retried.value);
}

/** Runs a plan with a synchronous schema; abandons the edit if the schema answers with a Promise. */
function runSync(plan: MergePlan, schema: ResolvedSchema): JsonObject {
  let step = plan.next();
  while (!step.done) {
    const check = schema.validate(step.value);
    if (isThenable(check)) {
      check.then(undefined, () => undefined);
      throw new Abandon('async');
    }
    step = plan.next(check);
  }
  return step.value;
}

async function runAsync(plan: MergePlan, schema: ResolvedSchema): Promise<JsonObject> {
  let step = plan.next();
  while (!step.done) step = plan.next(await schema.validate(step.value));
  return step.value;
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

/** What a merge needs besides the patch: the schema, what to do with an invalid stored document. */
export interface PatchRules {
  schema: ResolvedSchema;
  onInvalidStored: InvalidStoredPolicy;
}

/**
 * Merges `patch` into the stored document, validates the result with the schema and writes the
 * schema's output in one edit (see `editMemory`). When the merge fails and the stored document
 * is itself invalid, `onInvalidStored` decides, inside the same edit. A synchronous schema runs inside the edit, so the document
 * validated is exactly the one written. An async schema cannot run inside a storage
 * transaction: the merge of the value just read is validated outside, then written only if
 * the stored value is unchanged, retried a bounded number of times (`CONFLICT` past it).
 * Throws `VALIDATION` with nothing written when the merged document fails the schema.
 */
export async function patchWorkingMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  rules: PatchRules,
  patch: JsonObject,
  state: PatchState,
  operation: string,
): Promise<JsonObject> {
  const { schema, onInvalidStored } = rules;
  if (!state.asyncSchema) {
    let merged: JsonObject = {};
    try {
      await editMemory(storage, location, (current) => {
        merged = runSync(planMerge(current, patch, onInvalidStored), schema);
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
    const merged = await runAsync(planMerge(current, patch, onInvalidStored), schema);
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
