import {
  type AgentMessage,
  isPlainObject,
  type JsonValue,
  type Message,
  type MessageInput,
  readStateSignal,
  STATE_MESSAGE_TYPE,
  stateSignalText,
} from '@engram/core';
import type { ModelMessage } from 'ai';

/** `Message.type` of messages holding AI SDK parts (`content: { format: 2, parts }`). */
export const PARTS_MESSAGE_TYPE = 'v2';

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A JSON copy of AI SDK content: binary data becomes base64, URLs and dates become strings. */
function toJson(value: unknown): JsonValue {
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) => (v instanceof Uint8Array ? base64(v) : v)),
  ) as JsonValue;
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
