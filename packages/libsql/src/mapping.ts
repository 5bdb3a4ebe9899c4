import {
  type JsonObject,
  type JsonValue,
  MemoryError,
  type Message,
  type MessageRole,
  type Resource,
  type Thread,
  threadValues,
} from '@engram/core/driver';
import type { InValue, Row } from '@libsql/client';
import { ADAPTER } from './errors.ts';

/** Row ⇄ record conversion: dates are integer epoch milliseconds, JSON values text. */
function corrupt(column: string, detail: string, cause?: unknown): MemoryError {
  return new MemoryError('STORAGE', `${ADAPTER}: column ${column} ${detail}`, { adapter: ADAPTER, cause });
}

function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw corrupt(column, `holds an unexpected ${typeof value}`);
  return value;
}

function date(row: Row, column: string): Date {
  const value = row[column];
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value));
  throw corrupt(column, `holds an unexpected ${typeof value}`);
}

function json(row: Row, column: string): JsonValue {
  try {
    return JSON.parse(text(row, column)) as JsonValue;
  } catch (error) {
    throw error instanceof MemoryError ? error : corrupt(column, 'does not hold valid JSON', error);
  }
}

function jsonObject(row: Row, column: string): JsonObject {
  const value = json(row, column);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw corrupt(column, `holds an unexpected ${Array.isArray(value) ? 'array' : typeof value}`);
  }
  return value;
}

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

/** Values for `THREAD_COLUMNS`. */
export const threadRow = (thread: Thread): InValue[] => threadValues(thread, (date) => date.getTime());

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

/** Values for `MESSAGE_COLUMNS`. */
export function messageRow(m: Message): InValue[] {
  return [m.id, m.threadId, m.resourceId, m.role, JSON.stringify(m.content), m.type, m.createdAt.getTime()];
}

export function toResource(row: Row): Resource {
  const workingMemory = row.working_memory ?? null;
  return {
    id: text(row, 'id'),
    workingMemory: workingMemory === null ? null : text(row, 'working_memory'),
    metadata: jsonObject(row, 'metadata'),
    createdAt: date(row, 'created_at'),
    updatedAt: date(row, 'updated_at'),
  };
}
