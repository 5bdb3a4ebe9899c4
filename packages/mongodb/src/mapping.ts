import {
  type JsonObject,
  type Message,
  type MessageRole,
  newVersion,
  type Resource,
  type Thread,
} from '@engram/core/driver';
import { BSON } from 'mongodb';
import type { MessageDocument, ResourceDocument, ThreadDocument } from './collections.ts';
import { type Codec, decodeObject, decodeValue, encodeKey, encodeValue, valueHash } from './encoding.ts';
import { mongoError } from './errors.ts';

/** MongoDB's largest document, in bytes. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/** `INVALID_ARGUMENT` for a document larger than MongoDB stores (the driver would throw a bare `RangeError`). */
export function assertDocumentSize(doc: object, what: string): void {
  const bytes = BSON.calculateObjectSize(doc as BSON.Document);
  if (bytes > MAX_DOCUMENT_BYTES) {
    const message = `${what} is ${bytes} bytes as BSON; MongoDB stores documents of at most ${MAX_DOCUMENT_BYTES}`;
    throw mongoError('INVALID_ARGUMENT', message);
  }
}

/**
 * `$set` paths that shallow-merge `patch` into a stored metadata object, one per key, so two
 * writers of different keys never overwrite each other. With `hashes`, each key's hash is set
 * beside it (threads keep them for `listThreads`).
 */
export function metadataSetPaths(patch: JsonObject, codec: Codec, hashes: boolean): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    const stored = encodeKey(key);
    set[`metadata.${stored}`] = encodeValue(value, `metadata.${key}`, codec, 2);
    if (hashes) set[`metadataHash.${stored}`] = valueHash(value);
  }
  return set;
}

/** The document of a thread, with its working-memory `version`. */
export function toThreadDocument(thread: Thread, codec: Codec, version: string): ThreadDocument {
  const { metadata } = thread;
  const doc: ThreadDocument = {
    _id: thread.id,
    resourceId: thread.resourceId,
    title: thread.title,
    metadata: encodeValue(metadata, 'thread.metadata', codec, 1) as Record<string, unknown>,
    metadataHash: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [encodeKey(k), valueHash(v)])),
    createdAt: thread.createdAt,
    updatedAt: thread.updatedAt,
    version,
  };
  assertDocumentSize(doc, `thread ${JSON.stringify(thread.id)}`);
  return doc;
}

export function toThread(doc: ThreadDocument): Thread {
  return {
    id: doc._id,
    resourceId: doc.resourceId,
    title: typeof doc.title === 'string' ? doc.title : '',
    metadata: decodeObject(doc.metadata),
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

export function toMessageDocument(message: Message, field: string, codec: Codec): MessageDocument {
  const doc: MessageDocument = {
    _id: message.id,
    threadId: message.threadId,
    resourceId: message.resourceId,
    role: message.role,
    content: encodeValue(message.content, `${field}.content`, codec, 1),
    type: message.type,
    createdAt: message.createdAt,
    version: newVersion(),
  };
  assertDocumentSize(doc, field);
  return doc;
}

/** A stored message: `_id` as `id`, content decoded (nothing else the document may hold). */
export function toMessage(doc: MessageDocument): Message {
  const { _id: id, threadId, resourceId, type, createdAt } = doc;
  const role = doc.role as MessageRole;
  return { id, threadId, resourceId, role, content: decodeValue(doc.content), type, createdAt };
}

export function toResource(doc: ResourceDocument): Resource {
  return {
    id: doc._id,
    workingMemory: typeof doc.workingMemory === 'string' ? doc.workingMemory : null,
    metadata: decodeObject(doc.metadata),
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}
