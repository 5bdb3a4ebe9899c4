import {
  type JsonObject,
  MemoryError,
  type Message,
  type MessagePatch,
  type MessageRole,
  type Resource,
  type Thread,
} from '@engram/core/adapter';
import { BSON, ObjectId } from 'mongodb';
import type { MessageDocument, ResourceDocument, ThreadDocument } from './collections.ts';
import {
  assertStorableString,
  type Codec,
  decodeObject,
  decodeValue,
  encodeKey,
  encodeValue,
  valueHash,
} from './encoding.ts';

/** MongoDB's largest document, in bytes. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/**
 * Throws `INVALID_ARGUMENT` when `doc` (a record or an update's fields) is larger than MongoDB
 * stores; the driver would otherwise fail while serialising with a bare `RangeError`.
 */
export function assertDocumentSize(doc: object, what: string): void {
  const bytes = BSON.calculateObjectSize(doc as BSON.Document);
  if (bytes > MAX_DOCUMENT_BYTES) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `mongodb: ${what} is ${bytes} bytes as BSON; MongoDB stores documents of at most ${MAX_DOCUMENT_BYTES}`,
      { adapter: 'mongodb' },
    );
  }
}

/** A fresh compare-and-set token: unique, so a delete-and-recreate can never look unchanged. */
export function newVersion(): ObjectId {
  return new ObjectId();
}

/** The stored form of a whole metadata object and its per-key hashes. */
export function encodeMetadata(
  metadata: JsonObject,
  field: string,
  codec: Codec,
): { metadata: Record<string, unknown>; metadataHash: Record<string, string> } {
  return {
    metadata: encodeValue(metadata, field, codec, 1) as Record<string, unknown>,
    metadataHash: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [encodeKey(k), valueHash(v)])),
  };
}

/**
 * `$set` paths that shallow-merge `patch` into a stored metadata object, one per key, so two
 * writers of different keys never overwrite each other. With `hashes`, each key's hash is set
 * beside it (threads keep them for `listThreads`).
 */
export function metadataSetPaths(
  patch: JsonObject,
  field: string,
  codec: Codec,
  hashes: boolean,
): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    assertStorableString(key, `a key of ${field}`);
    const stored = encodeKey(key);
    set[`metadata.${stored}`] = encodeValue(value, `${field}.${key}`, codec, 2);
    if (hashes) set[`metadataHash.${stored}`] = valueHash(value);
  }
  return set;
}

/** The document of a thread, with a fresh version. */
export function toThreadDocument(thread: Thread, codec: Codec): ThreadDocument {
  assertStorableString(thread.id, 'thread.id');
  assertStorableString(thread.resourceId, 'thread.resourceId');
  assertStorableString(thread.title, 'thread.title');
  const doc: ThreadDocument = {
    _id: thread.id,
    resourceId: thread.resourceId,
    title: thread.title,
    ...encodeMetadata(thread.metadata, 'thread.metadata', codec),
    createdAt: thread.createdAt,
    updatedAt: thread.updatedAt,
    version: newVersion(),
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

/** The document of a message. */
export function toMessageDocument(message: Message, field: string, codec: Codec): MessageDocument {
  assertStorableString(message.id, `${field}.id`);
  assertStorableString(message.threadId, `${field}.threadId`);
  assertStorableString(message.resourceId, `${field}.resourceId`);
  assertStorableString(message.type, `${field}.type`);
  const doc: MessageDocument = {
    _id: message.id,
    threadId: message.threadId,
    resourceId: message.resourceId,
    role: message.role,
    content: encodeValue(message.content, `${field}.content`, codec, 1),
    type: message.type,
    createdAt: message.createdAt,
  };
  assertDocumentSize(doc, field);
  return doc;
}

/** A stored message: `_id` as `id`, content decoded (nothing else the document may hold). */
export function toMessage(doc: MessageDocument): Message {
  const { _id: id, threadId, resourceId, role, content, type, createdAt } = doc;
  return {
    id,
    threadId,
    resourceId,
    role: role as MessageRole,
    content: decodeValue(content),
    type,
    createdAt,
  };
}

/** The `$set` of a message patch (empty when the patch only names the message). */
export function messagePatchSet(patch: MessagePatch, field: string, codec: Codec): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  if (patch.role !== undefined) set.role = patch.role;
  if (patch.content !== undefined) set.content = encodeValue(patch.content, `${field}.content`, codec, 1);
  if (patch.type !== undefined) {
    assertStorableString(patch.type, `${field}.type`);
    set.type = patch.type;
  }
  if (patch.createdAt !== undefined) set.createdAt = patch.createdAt;
  assertDocumentSize(set, field);
  return set;
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

/** Thread-scoped working memory as stored in `metadata.workingMemory`. */
export function threadWorkingMemory(doc: ThreadDocument): string | null {
  const stored = doc.metadata?.workingMemory;
  return typeof stored === 'string' ? stored : null;
}
