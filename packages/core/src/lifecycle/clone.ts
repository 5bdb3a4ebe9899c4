import { MemoryError } from '../errors.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import { ownedThread } from '../storage/ownership.ts';
import type { JsonObject, Message, Thread } from '../storage/records.ts';
import {
  assertId,
  assertJsonObject,
  assertOptionalId,
  describe,
  isPlainObject,
} from '../storage/validate.ts';
import { messagePages } from '../storage/walk.ts';

/** The metadata key where a clone records where it came from (see `ClonedFrom`). */
export const CLONED_FROM_KEY = 'clonedFrom';

/**
 * What a clone keeps at `metadata.clonedFrom`: the source thread and the last source message it
 * copied (`null` when the source had no messages to copy).
 */
export interface ClonedFrom {
  threadId: string;
  messageId: string | null;
}

/** Arguments of `memory.cloneThread`. */
export interface CloneThreadArgs {
  /** The thread to branch from. */
  threadId: string;
  /** When given, it must own `threadId` (`INVALID_ARGUMENT` otherwise, nothing written). */
  resourceId?: string;
  /** The clone's id; default a UUID. An id that exists is `CONFLICT` and nothing is written. */
  newThreadId?: string;
  /** Copy messages up to and including this one (a message of `threadId`); default all. */
  upToMessageId?: string;
  /** The clone's title; default the source's title. */
  title?: string;
  /**
   * Shallow-merged over the source's metadata (which the clone copies, thread-scope working
   * memory at `metadata.workingMemory` included), after `clonedFrom` is set.
   */
  metadata?: JsonObject;
}

/** What `memory.cloneThread` made. */
export interface CloneThreadResult {
  /** The new thread, as stored before its messages were copied. */
  thread: Thread;
  /**
   * The ids of the copies, in the order of the source messages they copy (`(createdAt, id)`):
   * one fresh UUID per clone followed by `-` and the zero-padded position, so copies sharing a
   * `createdAt` keep their sources' order.
   */
  clonedMessageIds: string[];
  /** The id of each copied source message → the id of its copy. */
  messageIdMap: Record<string, string>;
}

/** What the clone needs from `Memory`: its storage and the step that indexes saved messages. */
export interface CloneHost {
  storage: MemoryStorage;
  /**
   * Indexes saved copies for recall (`sources`: source id → copy id, whose stored vectors the
   * copies can take instead of being embedded again); never throws.
   */
  afterCopy(saved: Message[], sources: ReadonlyMap<string, string>): Promise<void>;
}

/** How many source messages are read, and copies saved, per page. */
export const CLONE_PAGE = 200;

/**
 * Copies a thread into a new thread of the same resource: the thread's title and metadata (with
 * `clonedFrom`), and its messages page by page (at most `CLONE_PAGE` held at once), each with a
 * new id, the same `createdAt`, role, type and content. Everything that can be refused is checked
 * before the first write; the new thread is inserted with the store's atomic insert-if-absent,
 * so an existing `newThreadId` is `CONFLICT` with nothing written. If a later page fails, the
 * partly filled clone is deleted (best effort) and the error is thrown.
 */
export async function cloneThread(host: CloneHost, args: CloneThreadArgs): Promise<CloneThreadResult> {
  const { storage } = host;
  assertCloneArgs(args);
  const source =
    args.resourceId === undefined
      ? await storage.getThreadById({ threadId: args.threadId })
      : await ownedThread(storage, 'cloneThread', args.threadId, args.resourceId);
  if (!source) {
    throw new MemoryError(
      'NOT_FOUND',
      `cloneThread: thread ${JSON.stringify(args.threadId)} does not exist; pass the id of an existing thread`,
      { details: { operation: 'cloneThread', threadId: args.threadId } },
    );
  }
  const upTo = args.upToMessageId === undefined ? null : await boundary(storage, source, args.upToMessageId);
  const last = upTo ?? (await lastMessageId(storage, source.id));
  const now = new Date();
  const clonedFrom: ClonedFrom = { threadId: source.id, messageId: last };
  const thread = await storage.createThread({
    id: args.newThreadId ?? crypto.randomUUID(),
    resourceId: source.resourceId,
    title: args.title ?? source.title,
    metadata: { ...source.metadata, [CLONED_FROM_KEY]: { ...clonedFrom }, ...args.metadata },
    createdAt: now,
    updatedAt: now,
  });
  const result: CloneThreadResult = { thread, clonedMessageIds: [], messageIdMap: {} };
  if (last === null) return result;
  try {
    await copyMessages(host, source.id, thread, last, result);
  } catch (error) {
    await storage.deleteThread({ threadId: thread.id }).catch(() => undefined);
    throw error;
  }
  return result;
}

/** Copies the source's messages through `last` into `clone`, one page at a time. */
async function copyMessages(
  host: CloneHost,
  sourceId: string,
  clone: Thread,
  last: string,
  result: CloneThreadResult,
): Promise<void> {
  const prefix = crypto.randomUUID();
  for await (const listed of messagePages(host.storage, sourceId, CLONE_PAGE)) {
    const end = listed.findIndex((m) => m.id === last);
    const batch = end === -1 ? listed : listed.slice(0, end + 1);
    const first = result.clonedMessageIds.length;
    const copies = batch.map(
      (m, i): Message => ({ ...m, id: copyId(prefix, first + i), threadId: clone.id }),
    );
    const saved = await host.storage.saveMessages(copies);
    const sources = new Map<string, string>();
    batch.forEach((m, i) => {
      const id = (copies[i] as Message).id;
      result.clonedMessageIds.push(id);
      result.messageIdMap[m.id] = id;
      sources.set(m.id, id);
    });
    await host.afterCopy(saved, sources);
    if (end !== -1) return;
  }
}

/**
 * The id of the `index`-th copy: one UUID per clone and the zero-padded position, so copies
 * that share a `createdAt` sort by id (UTF-8 byte order) exactly as their sources did.
 */
function copyId(prefix: string, index: number): string {
  return `${prefix}-${String(index).padStart(10, '0')}`;
}

/** `upToMessageId` checked against the source: the id, or `INVALID_ARGUMENT`. */
async function boundary(storage: MemoryStorage, source: Thread, messageId: string): Promise<string> {
  const [found] = await storage.listMessagesById({ ids: [messageId] });
  if (!found || found.threadId !== source.id) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `cloneThread: upToMessageId ${JSON.stringify(messageId)} is not a message of thread ${JSON.stringify(source.id)}; pass the id of one of its messages, or leave it out to copy them all`,
      { details: { operation: 'cloneThread', threadId: source.id } },
    );
  }
  return found.id;
}

/** The id of the newest message of a thread, or `null` when it has none. */
async function lastMessageId(storage: MemoryStorage, threadId: string): Promise<string | null> {
  const { messages } = await storage.listMessages({ threadId, perPage: 1, direction: 'DESC' });
  return messages[0]?.id ?? null;
}

function assertCloneArgs(args: unknown): asserts args is CloneThreadArgs {
  if (!isPlainObject(args)) {
    throw new MemoryError('INVALID_ARGUMENT', `cloneThread expects { threadId, … }, got ${describe(args)}`);
  }
  assertId(args.threadId, 'threadId');
  assertOptionalId(args.resourceId, 'resourceId');
  assertOptionalId(args.newThreadId, 'newThreadId');
  assertOptionalId(args.upToMessageId, 'upToMessageId');
  if (args.title !== undefined && typeof args.title !== 'string') {
    throw new MemoryError('INVALID_ARGUMENT', `title must be a string, got ${describe(args.title)}`);
  }
  if (args.metadata !== undefined) assertJsonObject(args.metadata, 'metadata');
}
