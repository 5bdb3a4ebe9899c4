import type { JsonObject, JsonValue, Message, MessageRole, Resource, Thread } from '@engram/core';

/** A `threads` row as `pg` returns it (jsonb parsed, timestamptz as `Date`). */
export interface ThreadRow {
  id: string;
  resource_id: string;
  title: string;
  metadata: JsonObject;
  createdAt: Date;
  updatedAt: Date;
}

/** A `messages` row as `pg` returns it. */
export interface MessageRow {
  id: string;
  thread_id: string;
  resource_id: string;
  role: string;
  content: JsonValue;
  type: string;
  createdAt: Date;
}

/** A `resources` row as `pg` returns it. */
export interface ResourceRow {
  id: string;
  workingMemory: string | null;
  metadata: JsonObject;
  createdAt: Date;
  updatedAt: Date;
}

export function toThread(row: ThreadRow): Thread {
  return {
    id: row.id,
    resourceId: row.resource_id,
    title: row.title,
    metadata: row.metadata,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    threadId: row.thread_id,
    resourceId: row.resource_id,
    role: row.role as MessageRole,
    content: row.content,
    type: row.type,
    createdAt: row.createdAt,
  };
}

export function toResource(row: ResourceRow): Resource {
  return {
    id: row.id,
    workingMemory: row.workingMemory,
    metadata: row.metadata,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** The parameters of `sql.upsertThread`. */
export function threadParams(thread: Thread): unknown[] {
  return [
    thread.id,
    thread.resourceId,
    thread.title,
    JSON.stringify(thread.metadata),
    thread.createdAt,
    thread.updatedAt,
  ];
}

/** The parallel arrays of `sql.upsertMessages`. */
export function messageArrays(messages: readonly Message[]): unknown[] {
  return [
    messages.map((m) => m.id),
    messages.map((m) => m.threadId),
    messages.map((m) => m.resourceId),
    messages.map((m) => m.role),
    messages.map((m) => JSON.stringify(m.content)),
    messages.map((m) => m.type),
    messages.map((m) => m.createdAt),
  ];
}

/** A copy of a record as returned to callers, so later changes to the input never leak in. */
export function copy<T>(value: T): T {
  return structuredClone(value);
}
