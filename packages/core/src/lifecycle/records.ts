import { recordOfRow } from '../agent/turn-record.ts';
import { MemoryError } from '../errors.ts';
import { assertMessage, assertThread } from '../storage/arguments.ts';
import type { ObservationRow } from '../storage/observations.ts';
import type { JsonObject, JsonValue, Message, MessageRole, Resource, Thread } from '../storage/records.ts';
import type { TurnRow } from '../storage/turns.ts';
import {
  assertId,
  assertJsonObject,
  assertStoredDate,
  assertText,
  describe,
  isPlainObject,
} from '../storage/validate.ts';
import { assertSpace, assertVector } from '../storage/vector-store.ts';
import type { EmbeddingSpace, MessageVector } from '../storage/vectors.ts';

/**
 * The versioned plain records of `exportResource` and `importRecords`: JSON-safe (dates as ISO
 * 8601 strings with milliseconds, message content as the JSON value it is stored as), one object
 * per record, so a dump is JSON Lines. `v` is the record format; a reader refuses any other.
 */
export const RECORD_VERSION = 1;

/** A resource: its working memory and metadata. */
export interface ResourceRecord {
  v: 1;
  kind: 'resource';
  id: string;
  workingMemory: string | null;
  metadata: JsonObject;
  createdAt: string;
  updatedAt: string;
}

/** A thread (thread-scope working memory is `metadata.workingMemory`). */
export interface ThreadRecord {
  v: 1;
  kind: 'thread';
  id: string;
  resourceId: string;
  title: string;
  metadata: JsonObject;
  createdAt: string;
  updatedAt: string;
}

/** A message; `content` is exactly the stored JSON value (parts, binary data as the base64 text it holds). */
export interface MessageRecord {
  v: 1;
  kind: 'message';
  id: string;
  threadId: string;
  resourceId: string;
  role: MessageRole;
  content: JsonValue;
  type: string;
  createdAt: string;
}

/** One generation of an observation log. */
export interface ObservationRecord {
  v: 1;
  kind: 'observation';
  key: string;
  resourceId: string;
  threadId: string | null;
  generation: number;
  version: number;
  body: string;
  updatedAt: string;
}

/**
 * A message's vector in its embedding space (`space`, `dimensions`): `vector` is its numbers as
 * little-endian float32, base64, exactly as stored.
 */
export interface VectorRecord {
  v: 1;
  kind: 'vector';
  messageId: string;
  resourceId: string;
  space: string;
  dimensions: number;
  hash: string;
  vector: string;
}

/**
 * A turn record (`options.turnRecords`): what one model call of the thread was given. `body` is
 * the stored record exactly (JSON text: ids, scores, hashes and counts, no message content).
 */
export interface TurnRecordLine {
  v: 1;
  kind: 'turn';
  id: string;
  threadId: string;
  resourceId: string;
  createdAt: string;
  body: string;
}

/** Any record of a dump. */
export type MemoryRecord =
  | ResourceRecord
  | ThreadRecord
  | MessageRecord
  | ObservationRecord
  | VectorRecord
  | TurnRecordLine;

/** The kinds of record, in the order a dump holds them for one thread. */
export type RecordKind = MemoryRecord['kind'];

export function resourceRecord(r: Resource): ResourceRecord {
  return {
    v: 1,
    kind: 'resource',
    id: r.id,
    workingMemory: r.workingMemory,
    metadata: r.metadata,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

export function threadRecord(t: Thread): ThreadRecord {
  return {
    v: 1,
    kind: 'thread',
    id: t.id,
    resourceId: t.resourceId,
    title: t.title,
    metadata: t.metadata,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

export function messageRecord(m: Message): MessageRecord {
  return {
    v: 1,
    kind: 'message',
    id: m.id,
    threadId: m.threadId,
    resourceId: m.resourceId,
    role: m.role,
    content: m.content,
    type: m.type,
    createdAt: m.createdAt.toISOString(),
  };
}

export function observationRecord(o: ObservationRow): ObservationRecord {
  return {
    v: 1,
    kind: 'observation',
    key: o.key,
    resourceId: o.resourceId,
    threadId: o.threadId,
    generation: o.generation,
    version: o.version,
    body: o.body,
    updatedAt: o.updatedAt.toISOString(),
  };
}

export function vectorRecord(space: EmbeddingSpace, resourceId: string, v: MessageVector): VectorRecord {
  const bytes = new Uint8Array(v.vector.buffer, v.vector.byteOffset, v.vector.byteLength);
  return {
    v: 1,
    kind: 'vector',
    messageId: v.messageId,
    resourceId,
    space: space.id,
    dimensions: space.dimensions,
    hash: v.hash,
    vector: Buffer.from(bytes).toString('base64'),
  };
}

export function turnLine(t: TurnRow): TurnRecordLine {
  return {
    v: 1,
    kind: 'turn',
    id: t.id,
    threadId: t.threadId,
    resourceId: t.resourceId,
    createdAt: t.createdAt.toISOString(),
    body: t.body,
  };
}

/** A vector record read back: its space and the vector as `upsertVectors` takes it. */
export interface ParsedVector {
  space: EmbeddingSpace;
  vector: MessageVector;
}

/** A record read back into what a store takes. */
export type ParsedRecord =
  | { kind: 'resource'; resourceId: string; value: Resource }
  | { kind: 'thread'; resourceId: string; value: Thread }
  | { kind: 'message'; resourceId: string; value: Message }
  | { kind: 'observation'; resourceId: string; value: ObservationRow }
  | { kind: 'vector'; resourceId: string; value: ParsedVector }
  | { kind: 'turn'; resourceId: string; value: TurnRow };

const FIELDS: Record<RecordKind, readonly string[]> = {
  resource: ['v', 'kind', 'id', 'workingMemory', 'metadata', 'createdAt', 'updatedAt'],
  thread: ['v', 'kind', 'id', 'resourceId', 'title', 'metadata', 'createdAt', 'updatedAt'],
  message: ['v', 'kind', 'id', 'threadId', 'resourceId', 'role', 'content', 'type', 'createdAt'],
  observation: ['v', 'kind', 'key', 'resourceId', 'threadId', 'generation', 'version', 'body', 'updatedAt'],
  vector: ['v', 'kind', 'messageId', 'resourceId', 'space', 'dimensions', 'hash', 'vector'],
  turn: ['v', 'kind', 'id', 'threadId', 'resourceId', 'createdAt', 'body'],
};

/**
 * Checks one record of a dump (the `at`-th, 1-based: the line of a JSON Lines file) and turns it
 * into the record a store takes. `VALIDATION` naming the record and what is wrong.
 */
export function parseRecord(record: unknown, at: number): ParsedRecord {
  try {
    return parse(record);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new MemoryError('VALIDATION', `record ${at}${label(record)}: ${why}`, {
      details: { record: at },
      cause: error,
    });
  }
}

function label(record: unknown): string {
  if (!isPlainObject(record)) return '';
  const { kind, id, key } = record as Record<string, unknown>;
  const name = typeof id === 'string' ? id : typeof key === 'string' ? key : undefined;
  return typeof kind === 'string' ? ` (${kind}${name === undefined ? '' : ` ${JSON.stringify(name)}`})` : '';
}

function parse(record: unknown): ParsedRecord {
  if (!isPlainObject(record)) throw new Error(`a record is a JSON object, got ${describe(record)}`);
  const r = record as Record<string, unknown>;
  if (r.v !== RECORD_VERSION)
    throw new Error(`unknown record version ${describe(r.v)} (this reader knows v: 1)`);
  const kind = r.kind as RecordKind;
  const fields = FIELDS[kind];
  if (typeof r.kind !== 'string' || !Object.hasOwn(FIELDS, r.kind) || !fields) {
    throw new Error(`unknown record kind ${describe(r.kind)}`);
  }
  for (const field of fields) if (!Object.hasOwn(r, field)) throw new Error(`${field} is missing`);
  for (const field of Object.keys(r)) if (!fields.includes(field)) throw new Error(`unknown field ${field}`);
  switch (kind) {
    case 'resource': {
      assertId(r.id, 'id');
      if (r.workingMemory !== null)
        assertText(string(r.workingMemory, 'workingMemory'), 'workingMemory', true);
      assertJsonObject(r.metadata, 'metadata');
      const value: Resource = {
        id: r.id,
        workingMemory: r.workingMemory as string | null,
        metadata: r.metadata,
        createdAt: date(r.createdAt, 'createdAt'),
        updatedAt: date(r.updatedAt, 'updatedAt'),
      };
      return { kind, resourceId: value.id, value };
    }
    case 'thread': {
      const value = {
        ...fieldsOf(r),
        createdAt: date(r.createdAt, 'createdAt'),
        updatedAt: date(r.updatedAt, 'updatedAt'),
      };
      assertThread(value, 'thread');
      return { kind, resourceId: value.resourceId, value };
    }
    case 'message': {
      const value = { ...fieldsOf(r), createdAt: date(r.createdAt, 'createdAt') };
      assertMessage(value, 'message');
      return { kind, resourceId: value.resourceId, value };
    }
    case 'observation': {
      assertId(r.resourceId, 'resourceId');
      if (r.threadId !== null) assertId(r.threadId, 'threadId');
      for (const field of ['generation', 'version'] as const) {
        if (!Number.isSafeInteger(r[field]) || (r[field] as number) < 1)
          throw new Error(`${field} must be a positive integer, got ${describe(r[field])}`);
      }
      const value: ObservationRow = {
        key: string(r.key, 'key'),
        resourceId: r.resourceId,
        threadId: r.threadId as string | null,
        generation: r.generation as number,
        version: r.version as number,
        body: string(r.body, 'body'),
        updatedAt: date(r.updatedAt, 'updatedAt'),
      };
      const expected = value.threadId === null ? `resource:${value.resourceId}` : `thread:${value.threadId}`;
      if (value.key !== expected) throw new Error(`key must be ${JSON.stringify(expected)}`);
      return { kind, resourceId: value.resourceId, value };
    }
    case 'vector': {
      assertId(r.messageId, 'messageId');
      assertId(r.resourceId, 'resourceId');
      const space = { id: string(r.space, 'space'), dimensions: r.dimensions as number };
      assertSpace(space);
      const hash = string(r.hash, 'hash');
      if (hash === '') throw new Error('hash must not be empty');
      const bytes = Buffer.from(string(r.vector, 'vector'), 'base64');
      if (bytes.length !== space.dimensions * 4 || bytes.toString('base64') !== r.vector) {
        throw new Error(`vector must be ${space.dimensions} float32 numbers in base64`);
      }
      const numbers = new Float32Array(space.dimensions);
      new Uint8Array(numbers.buffer).set(bytes);
      assertVector(numbers, space, 'vector');
      return {
        kind,
        resourceId: r.resourceId,
        value: { space, vector: { messageId: r.messageId, hash, vector: numbers } },
      };
    }
    case 'turn': {
      for (const field of ['id', 'threadId', 'resourceId'] as const) assertId(r[field], field);
      const value: TurnRow = {
        id: r.id as string,
        threadId: r.threadId as string,
        resourceId: r.resourceId as string,
        createdAt: date(r.createdAt, 'createdAt'),
        body: string(r.body, 'body'),
      };
      try {
        recordOfRow(value);
      } catch {
        throw new Error('body must be a version-1 turn record (the JSON text an export wrote)');
      }
      return { kind, resourceId: value.resourceId, value };
    }
  }
}

/** A record's own fields, without its format (`v`) and `kind`. */
function fieldsOf(r: Record<string, unknown>): Record<string, unknown> {
  const { v: _v, kind: _kind, ...fields } = r;
  return fields;
}

function string(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new Error(`${field} must be a string, got ${describe(value)}`);
  return value;
}

/** An ISO 8601 date exactly as `toISOString` writes it (UTC, milliseconds), within `STORED_DATES`. */
function date(value: unknown, field: string): Date {
  const text = string(value, field);
  const parsed = new Date(text);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString() !== text) {
    throw new Error(
      `${field} must be an ISO 8601 date like 2026-01-02T03:04:05.678Z, got ${JSON.stringify(text)}`,
    );
  }
  assertStoredDate(parsed, field);
  return parsed;
}
