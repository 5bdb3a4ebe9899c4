import {
  defineKey,
  type JsonObject,
  type JsonValue,
  type Message,
  type MessageRole,
  type Resource,
  type Thread,
} from '@engram/core/adapter';
import { META } from './keys.ts';
import type { MessageRecord } from './scripts.ts';

/** A script's reply after `unframe`: strings, nil and nested lists. */
export type Frame = string | null | Frame[];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Reads back what a script's `frame` wrote (see `scripts.ts`). Lengths count UTF-8 bytes.
 * Uses only web APIs, so the store runs on edge runtimes too.
 */
export function unframe(reply: unknown): Frame {
  if (typeof reply !== 'string') {
    throw new TypeError(`expected a framed string from the script, got ${typeof reply}`);
  }
  const bytes = encoder.encode(reply);
  let at = 0;
  const read = (): Frame => {
    const tag = bytes[at];
    if (tag === 0x5f) {
      at += 1;
      return null;
    }
    const colon = bytes.indexOf(0x3a, at);
    if (colon < 0 || (tag !== 0x24 && tag !== 0x2a)) throw new TypeError('malformed script reply');
    const n = Number(decoder.decode(bytes.subarray(at + 1, colon)));
    at = colon + 1;
    if (tag === 0x24) {
      const text = decoder.decode(bytes.subarray(at, at + n));
      at += n;
      return text;
    }
    const items: Frame[] = [];
    for (let i = 0; i < n; i++) items.push(read());
    return items;
  };
  const frame = read();
  if (at !== bytes.length) throw new TypeError('malformed script reply: trailing bytes');
  return frame;
}

/** The list inside a frame (throws on anything else). */
export function list(frame: Frame): Frame[] {
  if (!Array.isArray(frame)) throw new TypeError('expected a list in the script reply');
  return frame;
}

/** The string inside a frame (throws on anything else). */
export function text(frame: Frame | undefined): string {
  if (typeof frame !== 'string') throw new TypeError('expected a string in the script reply');
  return frame;
}

/** A flat HGETALL reply as a map of field → value. */
function fields(frame: Frame): Map<string, string> {
  const flat = list(frame);
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(text(flat[i]), text(flat[i + 1]));
  return map;
}

function required(map: Map<string, string>, field: string): string {
  const value = map.get(field);
  if (value === undefined) throw new TypeError(`stored record has no ${field} field`);
  return value;
}

function date(map: Map<string, string>, field: string): Date {
  return new Date(Number(required(map, field)));
}

function metadata(map: Map<string, string>): JsonObject {
  const out: JsonObject = {};
  for (const [field, value] of map) {
    if (field.startsWith(META)) defineKey(out, field.slice(META.length), JSON.parse(value) as JsonValue);
  }
  return out;
}

/** Metadata as hash fields: `.key` → the JSON text of the value. */
export function metadataFields(meta: JsonObject | undefined): Record<string, string> {
  if (!meta) return {};
  return Object.fromEntries(Object.entries(meta).map(([key, value]) => [META + key, JSON.stringify(value)]));
}

/** A thread hash → `Thread`, or `null` for an empty hash. */
export function toThread(frame: Frame): Thread | null {
  const map = fields(frame);
  if (map.size === 0) return null;
  return {
    id: required(map, 'id'),
    resourceId: required(map, 'resourceId'),
    title: required(map, 'title'),
    metadata: metadata(map),
    createdAt: date(map, 'createdAt'),
    updatedAt: date(map, 'updatedAt'),
  };
}

/** A message hash → `Message`, or `null` for an empty hash. */
export function toMessage(frame: Frame): Message | null {
  const map = fields(frame);
  if (map.size === 0) return null;
  return {
    id: required(map, 'id'),
    threadId: required(map, 'threadId'),
    resourceId: required(map, 'resourceId'),
    role: required(map, 'role') as MessageRole,
    content: JSON.parse(required(map, 'content')) as JsonValue,
    type: required(map, 'type'),
    createdAt: date(map, 'createdAt'),
  };
}

/** A resource hash → `Resource`, or `null` for an empty hash. */
export function toResource(frame: Frame): Resource | null {
  const map = fields(frame);
  if (map.size === 0) return null;
  return {
    id: required(map, 'id'),
    workingMemory: map.get('workingMemory') ?? null,
    metadata: metadata(map),
    createdAt: date(map, 'createdAt'),
    updatedAt: date(map, 'updatedAt'),
  };
}

/** One message as the `saveMessages` script takes it. */
export function messageRecord(message: Message): MessageRecord {
  return {
    id: message.id,
    threadId: message.threadId,
    resourceId: message.resourceId,
    role: message.role,
    type: message.type,
    content: JSON.stringify(message.content),
    createdAt: ms(message.createdAt),
  };
}

/** Epoch milliseconds as a script argument. */
export function ms(value: Date): string {
  return String(value.getTime());
}
