import {
  type JsonObject,
  type JsonValue,
  MemoryError,
  type Message,
  type MessageRole,
  type Resource,
  resourceValues,
  type Thread,
  threadValues,
} from '@engram/core/adapter';
import type { InValue, Row } from '@libsql/client';
import { ADAPTER } from './errors.ts';

/**
 * Row ⇄ record conversion. Dates are stored as integer milliseconds since the epoch, JSON
 * (metadata, message content) as text.
 */

function corrupt(column: string, value: unknown): MemoryError {
  return new MemoryError('STORAGE', `${ADAPTER}: column ${column} holds an unexpected ${typeof value}`, {
    adapter: ADAPTER,
  });
}

function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw corrupt(column, value);
  return value;
}

function date(row: Row, column: string): Date {
  const value = row[column];
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value));
  throw corrupt(column, value);
}

function json(row: Row, column: string): JsonValue {
  const raw = text(row, column);
  try {
    return JSON.parse(raw) as JsonValue;
  } catch (error) {
    throw new MemoryError('STORAGE', `${ADAPTER}: column ${column} does not hold valid JSON`, {
      adapter: ADAPTER,
      cause: error,
    });
  }
}

function jsonObject(row: Row, column: string): JsonObject {
  const value = json(row, column);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw corrupt(column, value);
  return value;
}

/** Thread row → `Thread`. */
export function toThread(row: Row): Thread {
  return {
    id: text(row, 'id'),
    resourceId: text(row, 'resource_id'),
    title: text(row, 'title'),
    metadata: jsonObject(row, 'metadata'),
    createdAt: date(row, 'created_at'),
    updatedAt: date(row, 'updated_at'),
  };
}

/** `Thread` → values for `THREAD_COLUMNS`. */
export function threadRow(thread: Thread): InValue[] {
  return threadValues(thread, epochMs);
}

/** Message row → `Message`. */
export function toMessage(row: Row): Message {
  return {
    id: text(row, 'id'),
    threadId: text(row, 'thread_id'),
    resourceId: text(row, 'resource_id'),
    role: text(row, 'role') as MessageRole,
    content: json(row, 'content'),
    type: text(row, 'type'),
    createdAt: date(row, 'created_at'),
  };
}

/** `Message` → values for `MESSAGE_COLUMNS`. */
export function messageRow(message: Message): InValue[] {
  return [
    message.id,
    message.threadId,
    message.resourceId,
    message.role,
    JSON.stringify(message.content),
    message.type,
    message.createdAt.getTime(),
  ];
}

/** `Message` → one entry of a `saveMessageBatch` (the thread and resource are the batch's). */
export function batchRow(message: Message): [string, string, string, string, number] {
  return [
    message.id,
    message.role,
    JSON.stringify(message.content),
    message.type,
    message.createdAt.getTime(),
  ];
}

/** The `working_memory` column of a resource row, or `null` when there is no row. */
export function workingMemoryOf(row: Row | undefined): string | null {
  const value = row?.working_memory ?? null;
  if (value !== null && typeof value !== 'string') throw corrupt('working_memory', value);
  return value;
}

/** Resource row → `Resource`. */
export function toResource(row: Row): Resource {
  const workingMemory = row.working_memory;
  if (workingMemory !== null && typeof workingMemory !== 'string')
    throw corrupt('working_memory', workingMemory);
  return {
    id: text(row, 'id'),
    workingMemory: workingMemory ?? null,
    metadata: jsonObject(row, 'metadata'),
    createdAt: date(row, 'created_at'),
    updatedAt: date(row, 'updated_at'),
  };
}

/** `Resource` → values for `RESOURCE_COLUMNS`. */
export function resourceRow(resource: Resource): InValue[] {
  return resourceValues(resource, epochMs);
}

const epochMs = (date: Date) => date.getTime();
