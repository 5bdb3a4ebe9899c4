import {
  isMemoryError,
  type JsonObject,
  type JsonValue,
  type MemoryStorage,
  type Message,
  type Thread,
} from '@engram/core';
import { jsonEqual } from '@engram/core/driver';
import { runId } from './services.ts';
import { schemaMemory } from './workload.ts';

/** How one hostile input ended: stored and read back exactly, or refused with a clear error. */
export type Outcome = { stored: true } | { stored: false; code: string; message: string };

/** Codes that tell a caller their input was refused (anything else is not a clear rejection). */
export const REJECTION_CODES = new Set(['INVALID_ARGUMENT', 'VALIDATION']);

/** Thrown when a value came back different from what was stored, or storage was left changed. */
export class Inconsistent extends Error {}

function expectSame(what: string, got: JsonValue | undefined, want: JsonValue | undefined): void {
  if (!jsonEqual(got, want)) {
    const show = (v: unknown) => {
      const text = JSON.stringify(v) ?? 'undefined';
      return text.length > 120 ? `${text.slice(0, 120)}… (${text.length} chars)` : text;
    };
    throw new Inconsistent(`${what}: read back ${show(got)}, stored ${show(want)}`);
  }
}

/**
 * Runs `write`; when it succeeds, `readBack` must find exactly what was written; when it throws,
 * the error must be a `MemoryError` with a rejection code and `unchanged` must find storage as
 * it was. Either way the store must still answer (`unchanged`/`readBack` are reads).
 */
async function storedOrRejected(
  write: () => Promise<unknown>,
  readBack: () => Promise<void>,
  unchanged: () => Promise<void>,
): Promise<Outcome> {
  try {
    await write();
  } catch (error) {
    if (!isMemoryError(error) || !REJECTION_CODES.has(error.code)) throw error;
    await unchanged();
    return { stored: false, code: error.code, message: error.message };
  }
  await readBack();
  return { stored: true };
}

/** A thread of a fresh resource, saved, for one case. */
async function freshThread(store: MemoryStorage, label: string): Promise<Thread> {
  const id = runId();
  const now = new Date();
  return store.saveThread({
    id: `hostile-${label}-t-${id}`,
    resourceId: `hostile-${label}-r-${id}`,
    title: 'before',
    metadata: { keep: 1 },
    createdAt: now,
    updatedAt: now,
  });
}

function message(thread: Thread, content: JsonValue, id = `m-${runId()}`): Message {
  return {
    id,
    threadId: thread.id,
    resourceId: thread.resourceId,
    role: 'user',
    content,
    type: 'text',
    createdAt: new Date(),
  };
}

/** Saves a message holding `content` and reads it back (by id and through the thread's listing). */
export async function messageContent(
  store: MemoryStorage,
  label: string,
  content: JsonValue,
): Promise<Outcome> {
  const thread = await freshThread(store, label);
  const m = message(thread, content);
  return storedOrRejected(
    () => store.saveMessages([m]),
    async () => {
      const [got] = await store.listMessagesById({ ids: [m.id] });
      expectSame('message content (by id)', got?.content, content);
      const page = await store.listMessages({ threadId: thread.id });
      expectSame('message content (listed)', page.messages[0]?.content, content);
    },
    async () => {
      const page = await store.listMessages({ threadId: thread.id });
      if (page.total !== 0 || page.messages.length !== 0)
        throw new Inconsistent('a refused message was saved');
    },
  );
}

/** Sets a thread's title and merges `patch` into its metadata, then reads the thread back. */
export async function threadFields(
  store: MemoryStorage,
  label: string,
  title: string | undefined,
  patch: JsonObject | undefined,
): Promise<Outcome> {
  const thread = await freshThread(store, label);
  return storedOrRejected(
    () => store.updateThread({ id: thread.id, title, metadata: patch }),
    async () => {
      const got = await store.getThreadById({ threadId: thread.id });
      expectSame('title', got?.title, title ?? 'before');
      const want: JsonObject = { keep: 1 };
      for (const [k, v] of Object.entries(patch ?? {}))
        Object.defineProperty(want, k, { value: v, enumerable: true });
      expectSame('thread metadata', got?.metadata, want);
    },
    async () => {
      const got = await store.getThreadById({ threadId: thread.id });
      expectSame('title after refusal', got?.title, 'before');
      expectSame('thread metadata after refusal', got?.metadata, { keep: 1 });
    },
  );
}

/** Saves a whole new thread with `metadata` and reads it back. */
export async function newThreadMetadata(
  store: MemoryStorage,
  label: string,
  metadata: JsonObject,
): Promise<Outcome> {
  const id = `hostile-${label}-t-${runId()}`;
  const now = new Date();
  return storedOrRejected(
    () =>
      store.saveThread({ id, resourceId: `r-${id}`, title: 't', metadata, createdAt: now, updatedAt: now }),
    async () =>
      expectSame('new thread metadata', (await store.getThreadById({ threadId: id }))?.metadata, metadata),
    async () => {
      if ((await store.getThreadById({ threadId: id })) !== null)
        throw new Inconsistent('a refused thread was saved');
    },
  );
}

/** Replaces a resource's working memory with `text` and merges `metadata`, then reads it back. */
export async function resourceFields(
  store: MemoryStorage,
  label: string,
  text: string | undefined,
  metadata: JsonObject | undefined,
): Promise<Outcome> {
  const resourceId = `hostile-${label}-r-${runId()}`;
  await store.updateResource({ resourceId, workingMemory: 'before', metadata: { keep: 1 } });
  return storedOrRejected(
    () => store.updateResource({ resourceId, workingMemory: text, metadata }),
    async () => {
      const got = await store.getResourceById({ resourceId });
      expectSame('working memory', got?.workingMemory ?? null, text ?? 'before');
      const want: JsonObject = { keep: 1 };
      for (const [k, v] of Object.entries(metadata ?? {}))
        Object.defineProperty(want, k, { value: v, enumerable: true });
      expectSame('resource metadata', got?.metadata, want);
    },
    async () => {
      const got = await store.getResourceById({ resourceId });
      expectSame('working memory after refusal', got?.workingMemory ?? null, 'before');
      expectSame('resource metadata after refusal', got?.metadata, { keep: 1 });
    },
  );
}

/** Merges `patch` into a resource's JSON working memory through `Memory` and reads the document back. */
export async function mergedPatch(store: MemoryStorage, label: string, patch: JsonObject): Promise<Outcome> {
  const memory = schemaMemory(store);
  const resourceId = `hostile-${label}-r-${runId()}`;
  await memory.mergeWorkingMemory({ resourceId, workingMemory: { keep: 1 } });
  const want: JsonObject = { keep: 1 };
  for (const [k, v] of Object.entries(patch)) Object.defineProperty(want, k, { value: v, enumerable: true });
  const read = async () => {
    const text = await memory.getWorkingMemory({ resourceId });
    return text === null ? null : (JSON.parse(text) as JsonValue);
  };
  return storedOrRejected(
    () => memory.mergeWorkingMemory({ resourceId, workingMemory: patch }),
    async () => expectSame('merged working memory', await read(), want),
    async () => expectSame('working memory after refusal', await read(), { keep: 1 }),
  );
}

/** Saves `count` messages in one call and checks all or none of them are there. */
export async function bigBatch(store: MemoryStorage, count: number): Promise<Outcome> {
  const thread = await freshThread(store, 'batch');
  const base = Date.now();
  const messages = Array.from({ length: count }, (_, i) => ({
    ...message(thread, `#${i}`, `m-${String(i).padStart(5, '0')}`),
    createdAt: new Date(base + i),
  }));
  return storedOrRejected(
    () => store.saveMessages(messages),
    async () => {
      const page = await store.listMessages({ threadId: thread.id, perPage: false });
      if (page.total !== count || page.messages.length !== count) {
        throw new Inconsistent(
          `saved ${count} messages, listed ${page.messages.length} (total ${page.total})`,
        );
      }
      page.messages.forEach((m, i) => {
        expectSame(`message ${i}`, m.content, `#${i}`);
      });
    },
    async () => {
      const page = await store.listMessages({ threadId: thread.id, perPage: 1 });
      if (page.total !== 0) throw new Inconsistent(`a refused batch left ${page.total} messages`);
    },
  );
}

/** `depth` levels of nested objects and arrays around a string. */
export function nested(depth: number): JsonValue {
  let value: JsonValue = 'bottom';
  for (let i = 0; i < depth; i += 1) value = i % 2 === 0 ? { d: value } : [value];
  return value;
}
