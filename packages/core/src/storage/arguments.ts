import { MemoryError } from '../errors.ts';
import { assertKnownKeys, keysOf } from '../known-keys.ts';
import type {
  AtomicWorkingMemoryUpdate,
  DateRange,
  IncludeWindow,
  ListMessagesArgs,
  ListThreadsArgs,
  MessagePatch,
  UpdateResourceArgs,
  UpdateThreadArgs,
} from './contract.ts';
import type { Direction, JsonObject, Message, Thread } from './records.ts';
import {
  assertCount,
  assertDate,
  assertId,
  assertJson,
  assertJsonObject,
  assertStoredDate,
  assertText,
  describe,
  isPlainObject,
  isStorableId,
  isStorableJson,
  isStorableText,
  isStoredDate,
  MAX_LISTING_COUNT,
  MAX_TYPE_LENGTH,
} from './validate.ts';

/**
 * Validation of the arguments of `MemoryStorage` calls, run once by `Store` before a driver sees
 * them: each throws `INVALID_ARGUMENT` naming the argument.
 */

const ROLES = new Set(['user', 'assistant', 'system', 'tool']);

export function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

/** The keys each `MemoryStorage` call takes in its arguments object (see `assertArgs`). */
export const STORAGE_ARGS = {
  getThreadById: keysOf<{ threadId: string; resourceId?: string }>({ threadId: true, resourceId: true }),
  updateThread: keysOf<UpdateThreadArgs>({ id: true, title: true, metadata: true }),
  deleteThread: keysOf<{ threadId: string }>({ threadId: true }),
  listThreads: keysOf<ListThreadsArgs>({
    resourceId: true,
    metadata: true,
    dateRange: true,
    page: true,
    perPage: true,
    orderBy: true,
    direction: true,
  }),
  listMessages: keysOf<ListMessagesArgs>({
    threadId: true,
    resourceId: true,
    page: true,
    perPage: true,
    direction: true,
    dateRange: true,
    include: true,
  }),
  include: keysOf<IncludeWindow>({ id: true, withPreviousMessages: true, withNextMessages: true }),
  dateRange: keysOf<DateRange>({ start: true, end: true, startExclusive: true, endExclusive: true }),
  listMessagesById: keysOf<{ ids: string[] }>({ ids: true }),
  resource: keysOf<{ resourceId: string }>({ resourceId: true }),
  updateResource: keysOf<UpdateResourceArgs>({ resourceId: true, workingMemory: true, metadata: true }),
  listResourceIds: keysOf<{ after?: string; limit?: number }>({ after: true, limit: true }),
  updateWorkingMemoryAtomically: keysOf<AtomicWorkingMemoryUpdate>({
    scope: true,
    resourceId: true,
    threadId: true,
    update: true,
  }),
};

/**
 * Throws `INVALID_ARGUMENT` unless `args` is a plain object and, with `known` (see `keysOf`), has
 * no other keys: a misspelt key (`resourceID`) is refused, naming the closest known one, rather
 * than ignored (an ignored `resourceId` filter would widen a read to every resource).
 */
export function assertArgs(args: unknown, operation: string, known?: readonly string[]): void {
  if (!isPlainObject(args)) throw invalid(`${operation} expects an arguments object, got ${describe(args)}`);
  if (known) assertKnownKeys(args, known, '', `${operation} argument`);
}

/**
 * Validates `page` and `perPage` (each an integer from 0 to `MAX_LISTING_COUNT`, `perPage` also
 * `false`) and their row offset `page × perPage`, which must not pass `MAX_LISTING_COUNT` either.
 */
export function assertPaging(
  page: unknown,
  perPage: unknown,
  defaultPerPage: number,
): { page: number; perPage: number | false } {
  const p = assertCount(page, 'page') ?? 0;
  const size = perPage === false ? false : (assertCount(perPage, 'perPage') ?? defaultPerPage);
  if (size !== false && p * size > MAX_LISTING_COUNT) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `page × perPage (the row offset) must be at most ${MAX_LISTING_COUNT}, got ${p} × ${size}; with perPage ${size}, page is at most ${Math.floor(MAX_LISTING_COUNT / size)}`,
      { details: { field: 'page', min: 0, max: Math.floor(MAX_LISTING_COUNT / size) } },
    );
  }
  return { page: p, perPage: size };
}

export function assertDirection(direction: unknown, fallback: Direction): Direction {
  if (direction === undefined) return fallback;
  if (direction !== 'ASC' && direction !== 'DESC') {
    throw invalid(`direction must be 'ASC' or 'DESC', got ${describe(direction)}`);
  }
  return direction;
}

export function assertDateRange(range: unknown): asserts range is DateRange {
  assertArgs(range, 'dateRange', STORAGE_ARGS.dateRange);
  const { start, end } = range as DateRange;
  if (start !== undefined) assertDate(start, 'dateRange.start');
  if (end !== undefined) assertDate(end, 'dateRange.end');
  for (const key of ['startExclusive', 'endExclusive'] as const) {
    const flag = (range as DateRange)[key];
    if (flag !== undefined && typeof flag !== 'boolean') {
      throw invalid(`dateRange.${key} must be a boolean, got ${describe(flag)}`);
    }
  }
}

export function assertThread(thread: unknown, operation: string): asserts thread is Thread {
  assertArgs(thread, operation);
  const t = thread as Thread;
  assertId(t.id, 'thread.id');
  assertId(t.resourceId, 'thread.resourceId');
  if (typeof t.title !== 'string') throw invalid(`thread.title must be a string, got ${describe(t.title)}`);
  assertText(t.title, 'thread.title', true);
  assertJsonObject(t.metadata, 'thread.metadata');
  assertWorkingMemoryField(t.metadata);
  assertStoredDate(t.createdAt, 'thread.createdAt');
  assertStoredDate(t.updatedAt, 'thread.updatedAt');
}

/** Thread-scoped working memory must be a string (or null) where it is stored. */
export function assertWorkingMemoryField(metadata: JsonObject): void {
  const value = metadata.workingMemory;
  if (value !== undefined && value !== null && typeof value !== 'string') {
    throw invalid(`metadata.workingMemory must be a string, got ${describe(value)}`);
  }
}

/**
 * True for a message `assertMessage` accepts, checked without building a field name per check:
 * a batch of valid messages (the usual case) costs no strings; anything else goes through
 * `assertMessage`, which names the problem.
 */
export function isStorableMessage(message: unknown): message is Message {
  if (!isPlainObject(message)) return false;
  const m = message as unknown as Message;
  return (
    isStorableId(m.id) &&
    isStorableId(m.threadId) &&
    isStorableId(m.resourceId) &&
    ROLES.has(m.role) &&
    m.content !== undefined &&
    isStorableJson(m.content, 0) &&
    typeof m.type === 'string' &&
    m.type.length <= MAX_TYPE_LENGTH &&
    isStorableText(m.type, true) &&
    isStoredDate(m.createdAt)
  );
}

/** Throws `INVALID_ARGUMENT` unless `value` is a storable message type (see `MAX_TYPE_LENGTH`). */
function assertType(value: unknown, field: string): asserts value is string {
  if (typeof value !== 'string') throw invalid(`${field} must be a string, got ${describe(value)}`);
  if (value.length > MAX_TYPE_LENGTH) {
    throw invalid(
      `${field} is ${value.length} characters long; a message type is at most ${MAX_TYPE_LENGTH}`,
    );
  }
  assertText(value, field, true);
}

export function assertMessage(message: unknown, field: string): asserts message is Message {
  assertArgs(message, field);
  const m = message as Message;
  assertId(m.id, `${field}.id`);
  assertId(m.threadId, `${field}.threadId`);
  assertId(m.resourceId, `${field}.resourceId`);
  if (!ROLES.has(m.role)) throw invalid(`${field}.role must be user, assistant, system or tool`);
  if (m.content === undefined) throw invalid(`${field}.content is missing`);
  assertJson(m.content, `${field}.content`);
  assertType(m.type, `${field}.type`);
  assertStoredDate(m.createdAt, `${field}.createdAt`);
}

export function assertPatch(patch: unknown, field: string): asserts patch is MessagePatch {
  assertArgs(patch, field);
  const p = patch as MessagePatch;
  assertId(p.id, `${field}.id`);
  if (p.role !== undefined && !ROLES.has(p.role)) {
    throw invalid(`${field}.role must be user, assistant, system or tool`);
  }
  if (p.content !== undefined) assertJson(p.content, `${field}.content`);
  if (p.type !== undefined) assertType(p.type, `${field}.type`);
  if (p.createdAt !== undefined) assertStoredDate(p.createdAt, `${field}.createdAt`);
  for (const key of ['threadId', 'resourceId']) {
    if (Object.hasOwn(p, key)) {
      throw invalid(`${field}.${key}: updateMessages cannot move a message; save it again with saveMessages`);
    }
  }
}
