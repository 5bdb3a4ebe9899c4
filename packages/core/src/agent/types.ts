import type { WorkingMemoryTemplate } from '../memory.ts';
import type { JsonObject, JsonValue, MessageRole, WorkingMemoryScope } from '../storage/records.ts';

export type { WorkingMemoryTemplate };

/** How working memory is written down: a Markdown document or a JSON object. */
export type WorkingMemoryFormat = WorkingMemoryTemplate['format'];

/** Resolves the template at run time (a `Memory` instance is one). */
export interface WorkingMemoryTemplateProvider {
  getWorkingMemoryTemplate(args?: { memoryConfig?: unknown }): Promise<WorkingMemoryTemplate | null>;
}

/** A message as it flows through the agent-facing parts. `source` tags who added it. */
export interface AgentMessage {
  id?: string;
  role: MessageRole;
  content: JsonValue;
  /** `'memory'` for messages added by engram (the working-memory system message, state signals). */
  source?: string;
  /** A free-form tag; `'state'` marks a state signal. */
  type?: string;
  createdAt?: Date;
  threadId?: string;
  resourceId?: string;
}

/** Anything that can hold the thread and resource ids of a request: a `Map`, or a plain object. */
export type RequestContextLike =
  | { get(key: string): unknown }
  | { threadId?: unknown; resourceId?: unknown; [key: string]: unknown };

/**
 * A mutable message list, for frameworks that pass one (`addSystem(message, tag)` adds a system
 * message tagged with its origin).
 */
export interface MessageListLike {
  addSystem(message: AgentMessage | string, tag?: string): unknown;
}

/** A minimal structured logger (`console` fits). */
export interface AgentLogger {
  debug?(message: string, data?: Record<string, unknown>): void;
  warn?(message: string, data?: Record<string, unknown>): void;
}

/** The ids a request works on. */
export interface MemoryIds {
  threadId?: string;
  resourceId?: string;
}

/**
 * The part of `Memory` the agent-facing layer uses. `Memory` satisfies it; tests and other
 * frameworks can pass anything of this shape.
 */
export interface WorkingMemoryHost {
  readonly options: {
    lastMessages?: number | false;
    readOnly?: boolean;
    workingMemory?: {
      enabled?: boolean;
      scope?: WorkingMemoryScope;
      version?: 'stable' | 'vnext';
      useStateSignals?: boolean;
    };
  };
  getThreadById(args: { threadId: string; resourceId?: string }): Promise<{ resourceId: string } | null>;
  getWorkingMemory(args: MemoryIds): Promise<string | null>;
  updateWorkingMemory(args: MemoryIds & { workingMemory: string }): Promise<unknown>;
  applyWorkingMemoryPatch(args: MemoryIds & { patch: JsonObject | string }): Promise<unknown>;
  editWorkingMemory(
    args: MemoryIds & { edit: (current: string | null) => string | null },
  ): Promise<string | null>;
  getWorkingMemoryTemplate(): Promise<WorkingMemoryTemplate> | WorkingMemoryTemplate;
  getWorkingMemorySchema(): { jsonSchema: unknown } | null;
}
