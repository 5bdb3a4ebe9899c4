import { randomUUID } from 'node:crypto';
import type { Message, Thread } from '@engram/core';

/** A random id with a readable prefix. */
export function rid(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

/** A thread with millisecond dates and the given fields. */
export function thread(fields: Partial<Thread> = {}): Thread {
  const at = new Date(Date.UTC(2026, 0, 1, 12, 0, 0, 123));
  return {
    id: rid('t'),
    resourceId: rid('r'),
    title: 'A thread',
    metadata: {},
    createdAt: at,
    updatedAt: at,
    ...fields,
  };
}

/** A message of `t`, `offsetMs` after a fixed instant. */
export function message(t: Thread, offsetMs: number, fields: Partial<Message> = {}): Message {
  return {
    id: rid('m'),
    threadId: t.id,
    resourceId: t.resourceId,
    role: 'user',
    content: { format: 2, parts: [{ type: 'text', text: `message ${offsetMs}` }] },
    type: 'v2',
    createdAt: new Date(Date.UTC(2026, 0, 1, 12, 0, 0, 0) + offsetMs),
    ...fields,
  };
}
