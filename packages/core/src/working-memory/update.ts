import { MemoryError } from '../errors.ts';
import { capabilitiesOf } from '../storage/capabilities.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import { ownedThread } from '../storage/ownership.ts';
import type { JsonObject, Thread, WorkingMemoryScope } from '../storage/records.ts';
import { RETRY, retry } from '../storage/retry.ts';
import {
  assertJson,
  assertOptionalId,
  describe,
  isPlainObject,
  isStorableJson,
} from '../storage/validate.ts';
import { fallbackLockFor } from './fallback-lock.ts';
import { mergeWorkingMemory, parsePatch, parseStored } from './merge.ts';
import type { ResolvedSchema, SchemaCheck } from './schema.ts';

/**
 * Every working-memory read and write of `Memory`, in one module on its way to the storage:
 * which document a call addresses (scope, ids, ownership), replaces, atomic edits and schema-mode
 * merges. On a storage declaring `capabilities.atomicWorkingMemory` an edit is one
 * `updateWorkingMemoryAtomically` (core's store runs the driver's strategy and validates the
 * value once); otherwise writers are serialised per `(scope, id)` inside this process.
 */

/** Which working memory a call addresses; which id is needed depends on the configured scope. */
export interface WorkingMemoryTarget {
  /** Needed for thread scope (the thread must exist). */
  threadId?: string;
  /** Needed for resource scope. When both ids are given they must agree. */
  resourceId?: string;
}

/**
 * Where one working-memory document is stored, after the ids were checked. At resource scope,
 * `threadId` is the thread the call named when it exists (checked to be the resource's).
 */
export type WorkingMemoryLocation =
  | { scope: 'resource'; resourceId: string; threadId?: string }
  | { scope: 'thread'; threadId: string; thread: Thread };

/** Computes the next document from the stored one (`null` when none). */
export type WorkingMemoryEdit = (current: string | null) => string | null;

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

function notFound(threadId: string): MemoryError {
  return new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
}

/** True when the storage declares atomic working-memory updates and implements them. */
export function isAtomicStorage(storage: MemoryStorage): boolean {
  return capabilitiesOf(storage).atomicWorkingMemory;
}

/**
 * Resolves the ids of a call to the storage location of `scope`. Resource scope needs a
 * `resourceId`; thread scope needs a `threadId` of an existing thread (`NOT_FOUND`). When both
 * ids are given, the thread must belong to the resource (`ownedThread`: `INVALID_ARGUMENT`).
 */
async function locate(
  storage: MemoryStorage,
  scope: WorkingMemoryScope,
  args: WorkingMemoryTarget,
  operation: string,
): Promise<WorkingMemoryLocation> {
  if (!isPlainObject(args)) throw invalid(`${operation} expects an arguments object, got ${describe(args)}`);
  const { threadId, resourceId } = args;
  assertOptionalId(threadId, 'threadId');
  assertOptionalId(resourceId, 'resourceId');
  if (scope === 'resource') {
    if (resourceId === undefined)
      throw invalid(`${operation}: resource-scoped working memory needs a resourceId`);
    // A thread not created yet is allowed here, and not checked after the write (`keepForThread`).
    const thread =
      threadId === undefined ? null : await ownedThread(storage, operation, threadId, resourceId);
    return thread ? { scope, resourceId, threadId: thread.id } : { scope, resourceId };
  }
  if (threadId === undefined) throw invalid(`${operation}: thread-scoped working memory needs a threadId`);
  const thread =
    resourceId === undefined
      ? await storage.getThreadById({ threadId })
      : await ownedThread(storage, operation, threadId, resourceId);
  if (!thread) throw notFound(threadId);
  return { scope, threadId, thread };
}

/** The thread-scoped document stored in a thread's metadata, or `null`. */
export function threadMemory(thread: Thread): string | null {
  const value = thread.metadata.workingMemory;
  return typeof value === 'string' ? value : null;
}

/** Reads the stored document (fresh from storage). */
async function readMemory(storage: MemoryStorage, location: WorkingMemoryLocation): Promise<string | null> {
  if (location.scope === 'resource') {
    const resource = await storage.getResourceById({ resourceId: location.resourceId });
    return resource?.workingMemory ?? null;
  }
  const thread = await storage.getThreadById({ threadId: location.threadId });
  if (!thread) throw notFound(location.threadId);
  return threadMemory(thread);
}

async function writeMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  value: string | null,
): Promise<void> {
  if (location.scope === 'resource') {
    await storage.updateResource({ resourceId: location.resourceId, workingMemory: value });
  } else {
    await storage.updateThread({ id: location.threadId, metadata: { workingMemory: value } });
  }
}

/**
 * After a resource-scope write that named an existing thread and found no document there: the
 * thread is read again, and when it is gone or moved — its resource erased, or the thread
 * deleted, while the write ran — the write is undone (the document set back to `null` if it is
 * still `value`) and the call refused `NOT_FOUND`. Without it, an erasure whose delete of the
 * resource row ran before this write would find the row written again with what the turn wrote.
 * Erasure deletes the resource's threads before the row, so a thread still there after the write
 * means any erasure removes the row after it. What an undo leaves, at most, is the resource's row
 * with no document. A write that found a document is not checked: the row was there, so an
 * erasure removes it after the write.
 */
async function keepForThread(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  value: string | null,
): Promise<void> {
  if (location.scope !== 'resource' || location.threadId === undefined || value === null) return;
  const thread = await storage.getThreadById({ threadId: location.threadId });
  if (thread?.resourceId === location.resourceId) return;
  let found: string | null = value;
  const undo = (current: string | null) => {
    found = current;
    if (current !== value) throw new Abandon('kept');
    return null;
  };
  try {
    await editMemory(storage, { scope: 'resource', resourceId: location.resourceId }, undo);
  } catch (error) {
    if (!(error instanceof Abandon)) throw error;
  }
  // `null`: the erasure removed the row after the write.
  const undone =
    found === value
      ? 'the write was undone'
      : found === null
        ? 'nothing of it is left'
        : 'another write has changed the document since';
  throw new MemoryError(
    'NOT_FOUND',
    `thread ${JSON.stringify(location.threadId)} was deleted (or its resource erased) while working memory was written for it; ${undone}`,
    { details: { threadId: location.threadId, resourceId: location.resourceId } },
  );
}

/**
 * Replaces a document. Nothing is read: on a storage with atomic updates this is one
 * `updateResource` or `updateThread` (a single write, atomic on its own, so it cannot split an
 * atomic merge running elsewhere); otherwise the write takes the in-process fallback lock of
 * `(scope, id)`, so it queues behind a merge of this process instead of landing between its
 * read and its write.
 */
async function replaceMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  value: string,
): Promise<void> {
  if (isAtomicStorage(storage)) return writeMemory(storage, location, value);
  const id = location.scope === 'resource' ? location.resourceId : location.threadId;
  await fallbackLockFor(storage).run(location.scope, id, () => writeMemory(storage, location, value));
}

/**
 * One read-modify-write of a document: the storage's `updateWorkingMemoryAtomically` when it
 * declares support, else read and write under the in-process fallback lock of `(scope, id)`.
 * If `edit` throws, nothing is written and the error propagates. Returns the stored value.
 */
function editMemory(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  edit: WorkingMemoryEdit,
): Promise<string | null> {
  if (isAtomicStorage(storage)) {
    // The store checks what `edit` returns, once, inside its atomic update.
    const update = storage.updateWorkingMemoryAtomically!.bind(storage);
    return location.scope === 'resource'
      ? update({ scope: 'resource', resourceId: location.resourceId, update: edit })
      : update({ scope: 'thread', threadId: location.threadId, update: edit });
  }
  const id = location.scope === 'resource' ? location.resourceId : location.threadId;
  return fallbackLockFor(storage).run(location.scope, id, async () => {
    const next: unknown = edit(await readMemory(storage, location));
    if (next !== null && typeof next !== 'string') {
      throw invalid(`edit must return a string or null, got ${describe(next)}`);
    }
    await writeMemory(storage, location, next);
    return next;
  });
}

/** `editMemory`, then `keepForThread` when the edit that was written found no document. */
async function editFor(
  storage: MemoryStorage,
  location: WorkingMemoryLocation,
  edit: WorkingMemoryEdit,
): Promise<string | null> {
  let first = false;
  const next = await editMemory(storage, location, (current) => {
    first = current === null;
    return edit(current);
  });
  if (first) await keepForThread(storage, location, next);
  return next;
}

/**
 * Thrown inside an edit to abandon it (nothing is written): the document read is stale, the
 * schema answered asynchronously, or (an undo) the document is no longer the one written.
 */
class Abandon {
  constructor(readonly reason: 'stale' | 'async' | 'kept') {}
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
interface PatchState {
  asyncSchema: boolean;
}

/** What a merge needs besides the patch: the schema, what to do with an invalid stored document. */
interface PatchRules {
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
async function patchWorkingMemory(
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
      await editFor(storage, location, (current) => {
        merged = runSync(planMerge(current, patch, onInvalidStored), schema);
        return JSON.stringify(merged);
      });
      return merged;
    } catch (error) {
      if (!(error instanceof Abandon)) throw error;
      state.asyncSchema = true;
    }
  }
  // Validated outside the storage's update, written only if the document is still the one read:
  // retried by core's policy while other writers keep changing it (then `CONFLICT`).
  return retry(
    async () => {
      const current = await readMemory(storage, location);
      const merged = await runAsync(planMerge(current, patch, onInvalidStored), schema);
      const text = JSON.stringify(merged);
      try {
        await editFor(storage, location, (now) => {
          if (now !== current) throw new Abandon('stale');
          return text;
        });
        return merged;
      } catch (error) {
        if (error instanceof Abandon) return RETRY;
        throw error;
      }
    },
    { adapter: storage.name, what: `${operation} (a schema validating asynchronously)` },
  );
}

/**
 * The working memory of one `Memory`: its storage, scope and schema rules, and whether the
 * storage is atomic (read once, here). Each method resolves the document the call addresses
 * and reads or writes it.
 */
export class WorkingMemoryUpdates {
  /** The storage declares `capabilities.atomicWorkingMemory` and implements the update. */
  readonly atomic: boolean;
  private readonly state: PatchState = { asyncSchema: false };

  constructor(
    private readonly storage: MemoryStorage,
    private readonly scope: WorkingMemoryScope,
    private readonly onInvalidStored: InvalidStoredPolicy,
  ) {
    this.atomic = isAtomicStorage(storage);
  }

  /** The stored document of the configured scope, or `null`. */
  async get(target: WorkingMemoryTarget, operation: string): Promise<string | null> {
    const location = await locate(this.storage, this.scope, target, operation);
    return location.scope === 'thread' ? threadMemory(location.thread) : readMemory(this.storage, location);
  }

  /**
   * Replaces the document (see `replaceMemory`). At resource scope for a named thread it is an
   * edit instead, so that it knows whether it found a document (see `keepForThread`).
   */
  async replace(target: WorkingMemoryTarget, value: string, operation: string): Promise<void> {
    const location = await locate(this.storage, this.scope, target, operation);
    if (location.scope === 'resource' && location.threadId !== undefined) {
      await editFor(this.storage, location, () => value);
    } else {
      await replaceMemory(this.storage, location, value);
    }
  }

  /** One atomic read-modify-write (see `editMemory`); returns the stored value. */
  async edit(
    target: WorkingMemoryTarget,
    edit: WorkingMemoryEdit,
    operation: string,
  ): Promise<string | null> {
    return editFor(this.storage, await locate(this.storage, this.scope, target, operation), edit);
  }

  /** Merges a patch in schema mode (see `patchWorkingMemory`); returns the stored document. */
  async merge(
    target: WorkingMemoryTarget,
    rawPatch: unknown,
    schema: ResolvedSchema,
    operation: string,
  ): Promise<JsonObject> {
    const patch = parsePatch(rawPatch);
    const location = await locate(this.storage, this.scope, target, operation);
    const rules = { schema, onInvalidStored: this.onInvalidStored };
    return patchWorkingMemory(this.storage, location, rules, patch, this.state, operation);
  }
}
