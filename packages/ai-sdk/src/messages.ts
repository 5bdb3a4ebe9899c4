import {
  type AgentMessage,
  type JsonValue,
  type Message,
  type MessageInput,
  readStateSignal,
  STATE_MESSAGE_TYPE,
  stateSignalText,
} from '@engram/core';
import { isPlainObject } from '@engram/core/driver';
import type { ModelMessage } from 'ai';

/** `Message.type` of messages holding AI SDK parts (`content: { format: 2, parts }`). */
export const PARTS_MESSAGE_TYPE = 'v2';

/** Node's `Buffer` when present (fast base64); edge runtimes fall back to `btoa`. */
const NodeBuffer = (
  globalThis as { Buffer?: { from(bytes: Uint8Array): { toString(enc: 'base64'): string } } }
).Buffer;

function base64(bytes: Uint8Array): string {
  if (NodeBuffer) return NodeBuffer.from(bytes).toString('base64');
  let binary = '';
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

/**
 * The bytes of binary data (`Buffer`, any typed array, `DataView`, `ArrayBuffer`), exactly the
 * range a view covers; `undefined` for anything else. Checked by tag, so data from another realm
 * counts too.
 */
function bytesOf(value: unknown): Uint8Array | undefined {
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  const tag = Object.prototype.toString.call(value);
  if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') {
    return new Uint8Array(value as ArrayBuffer);
  }
  return undefined;
}

/**
 * A JSON copy of AI SDK content. Binary data becomes a base64 string in the same field (its
 * media type stays in the part's own `mediaType`); URLs and dates become strings. The binary
 * check sees each value before its `toJSON` runs, so a `Buffer` is not turned into
 * `{ type: 'Buffer', data: [...] }`. A base64 string and a URL string are both valid AI SDK
 * `DataContent`, so what is stored goes back to the model as it is.
 */
function toJson(value: unknown): JsonValue {
  const text = JSON.stringify(value, function (this: Record<string, unknown>, key, v: unknown) {
    const bytes = bytesOf(this[key]);
    return bytes ? base64(bytes) : v;
  });
  return JSON.parse(text) as JsonValue;
}

/**
 * An AI SDK message as an engram message to save: string content stays a string (`type:
 * 'text'`), parts are stored as `{ format: 2, parts }` (`type: 'v2'`).
 */
export function fromModelMessage(
  message: ModelMessage,
  ids: { threadId: string; resourceId: string },
): MessageInput {
  const content = message.content;
  if (typeof content === 'string') return { ...ids, role: message.role, content, type: 'text' };
  return {
    ...ids,
    role: message.role,
    content: { format: 2, parts: toJson(content) },
    type: PARTS_MESSAGE_TYPE,
  };
}

/**
 * Engram messages (recalled history, or messages added by the processors) as AI SDK messages.
 * State signals become a user message with their text; `{ format: 2, parts }` becomes the parts.
 */
export function toModelMessages(messages: readonly (Message | AgentMessage)[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const message of messages) {
    const signal = message.type === STATE_MESSAGE_TYPE ? readStateSignal(message) : null;
    if (signal) {
      out.push({ role: 'user', content: stateSignalText(signal) });
      continue;
    }
    const content = message.content;
    const parts = isPlainObject(content) && Array.isArray(content.parts) ? content.parts : content;
    if (typeof parts === 'string' || Array.isArray(parts)) {
      out.push({ role: message.role, content: parts } as ModelMessage);
    } else {
      out.push({ role: message.role, content: JSON.stringify(parts) } as ModelMessage);
    }
  }
  return out;
}
