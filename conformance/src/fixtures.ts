import type { JsonObject, JsonValue, Message, MessageRole, Thread } from '@engram/core';

/** A fixed instant plus `ms` milliseconds; fixtures use these so equal timestamps are easy to make. */
export function at(ms: number): Date {
  return new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678) + ms);
}

/** A thread record with defaults. */
export function thread(id: string, resourceId: string, overrides: Partial<Thread> = {}): Thread {
  return {
    id,
    resourceId,
    title: `title of ${id}`,
    metadata: {},
    createdAt: at(0),
    updatedAt: at(0),
    ...overrides,
  };
}

/** A message record with defaults. */
export function message(
  id: string,
  owner: { id: string; resourceId: string },
  createdAt: Date,
  overrides: Partial<Message> = {},
): Message {
  return {
    id,
    threadId: owner.id,
    resourceId: owner.resourceId,
    role: 'user' as MessageRole,
    content: `content of ${id}`,
    type: 'text',
    createdAt,
    ...overrides,
  };
}

/** AI-SDK-style parts content, with unicode and nested JSON. */
export function partsContent(text: string): JsonValue {
  return {
    format: 2,
    parts: [
      { type: 'text', text },
      {
        type: 'tool-invocation',
        toolInvocation: {
          state: 'result',
          toolCallId: 'call_1',
          toolName: 'lookup',
          args: { q: 'naïve café', n: 3, ok: true, nothing: null, list: [1, 2.5, -7, 'x', [], {}] },
          result: { rows: [{ id: 1, tags: ['a', 'b'] }], empty: {} },
        },
      },
    ],
    experimental_attachments: [],
  };
}

/** A metadata object with nested values and awkward keys. */
export function richMetadata(): JsonObject {
  return {
    plain: 'value',
    'dotted.key': 1,
    'spaced key': [true, false, null],
    nested: { deeper: { deepest: 'ok', list: [{ a: 1 }, { b: [2, 3] }] } },
    number: 1234567.891,
    big: 9007199254740991,
    tiny: 1e-7,
    unicode: 'Grüße, 世界 🌍 — "quoted" \\ back\\slash',
    empty: '',
  };
}
