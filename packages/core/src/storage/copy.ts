import { copyJson } from '../working-memory/merge.ts';
import type { JsonObject, Message, Resource, Thread } from './records.ts';

/**
 * Copies of records, as a store returns what it was given: sharing no objects with the caller's
 * (JSON deep-copied, dates new), without the cost of a `structuredClone`.
 */

export function copyThread(thread: Thread): Thread {
  return {
    id: thread.id,
    resourceId: thread.resourceId,
    title: thread.title,
    metadata: copyJson(thread.metadata) as JsonObject,
    createdAt: new Date(thread.createdAt.getTime()),
    updatedAt: new Date(thread.updatedAt.getTime()),
  };
}

export function copyMessage(message: Message): Message {
  return {
    id: message.id,
    threadId: message.threadId,
    resourceId: message.resourceId,
    role: message.role,
    content: copyJson(message.content),
    type: message.type,
    createdAt: new Date(message.createdAt.getTime()),
  };
}

export function copyResource(resource: Resource): Resource {
  return {
    id: resource.id,
    workingMemory: resource.workingMemory,
    metadata: copyJson(resource.metadata) as JsonObject,
    createdAt: new Date(resource.createdAt.getTime()),
    updatedAt: new Date(resource.updatedAt.getTime()),
  };
}
