/** Any value that survives `JSON.stringify` / `JSON.parse` unchanged. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A plain JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** Who wrote a message. */
export type MessageRole = 'user' | 'assistant' | 'system' | 'tool';

/** A conversation. Thread-scoped working memory lives at `metadata.workingMemory` (a string). */
export interface Thread {
  id: string;
  /** The user or tenant the thread belongs to. */
  resourceId: string;
  /** May be `''`; round-trips as `''`. */
  title: string;
  metadata: JsonObject;
  createdAt: Date;
  updatedAt: Date;
}

/** One message of a thread. `content` is any JSON value and round-trips deep-equal. */
export interface Message {
  id: string;
  threadId: string;
  /** Must equal the thread's `resourceId`. */
  resourceId: string;
  role: MessageRole;
  content: JsonValue;
  /** A free-form tag such as `'text'` or `'v2'`. */
  type: string;
  createdAt: Date;
}

/** A user or tenant. Resource-scoped working memory lives in `workingMemory`. */
export interface Resource {
  id: string;
  /** `null` when never set; `''` round-trips as `''`. */
  workingMemory: string | null;
  metadata: JsonObject;
  createdAt: Date;
  updatedAt: Date;
}

/** Where working memory is kept: on the resource (shared by its threads) or on one thread. */
export type WorkingMemoryScope = 'resource' | 'thread';

/** Sort direction. */
export type Direction = 'ASC' | 'DESC';
