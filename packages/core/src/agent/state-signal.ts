import { MemoryError } from '../errors.ts';
import { sha256 } from '../hash.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import type { JsonValue, WorkingMemoryScope } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';
import { readMemoryIds } from './context.ts';
import { renderData } from './instructions.ts';
import { MEMORY_SOURCE, WorkingMemory } from './processor.ts';
import type {
  AgentMessage,
  RequestContextLike,
  WorkingMemoryFormat,
  WorkingMemoryHost,
  WorkingMemoryTemplate,
  WorkingMemoryTemplateProvider,
} from './types.ts';

/** The state id of working-memory signals. */
export const WORKING_MEMORY_STATE_ID = 'working-memory';

/** The current working memory, delivered as a state signal instead of inside the system message. */
export interface WorkingMemoryStateSignal {
  type: 'state';
  stateId: typeof WORKING_MEMORY_STATE_ID;
  /** SHA-256 (hex) of the format and the data: equal snapshots have equal keys. */
  cacheKey: string;
  /** The data as the model sees it (never the text `null`). */
  content: string;
}

/** The `type` tag of a message carrying a state signal. */
export const STATE_MESSAGE_TYPE = 'state';

/** SHA-256 (hex) of the format and the stored data. */
export async function workingMemoryCacheKey(
  format: WorkingMemoryFormat,
  data: string | null,
): Promise<string> {
  return sha256(`${format}\n${data ?? ''}`);
}

/** Builds the signal for one snapshot. */
export async function createStateSignal(
  format: WorkingMemoryFormat,
  data: string | null,
): Promise<WorkingMemoryStateSignal> {
  return {
    type: 'state',
    stateId: WORKING_MEMORY_STATE_ID,
    cacheKey: await workingMemoryCacheKey(format, data),
    content: renderData(format, data),
  };
}

/**
 * The message that carries a signal: role `user` (providers accept it anywhere in a
 * conversation), `type: 'state'`, `source: 'memory'`, content `{ format: 2, parts: [signal] }`.
 * It is kept when a turn is saved, so a later turn can see it is still in the context window.
 */
export function stateSignalMessage(signal: WorkingMemoryStateSignal): AgentMessage {
  const part: JsonValue = { ...signal };
  return {
    role: 'user',
    type: STATE_MESSAGE_TYPE,
    source: MEMORY_SOURCE,
    content: { format: 2, parts: [part] },
  };
}

function isSignal(value: unknown): value is WorkingMemoryStateSignal {
  return (
    isPlainObject(value) &&
    value.type === 'state' &&
    value.stateId === WORKING_MEMORY_STATE_ID &&
    typeof value.cacheKey === 'string' &&
    typeof value.content === 'string'
  );
}

/** The working-memory signal a message carries, or `null`. */
export function readStateSignal(message: { content: unknown }): WorkingMemoryStateSignal | null {
  const content = message.content;
  if (isSignal(content)) return content;
  if (isPlainObject(content) && Array.isArray(content.parts)) return content.parts.find(isSignal) ?? null;
  if (Array.isArray(content)) return content.find(isSignal) ?? null;
  return null;
}

/** The latest working-memory signal among `messages` (the context window), or `null`. */
export function latestStateSignal(
  messages: readonly { content: unknown }[],
): WorkingMemoryStateSignal | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const signal = readStateSignal(messages[i]!);
    if (signal) return signal;
  }
  return null;
}

/**
 * True when a signal with `cacheKey` must be emitted: the latest signal in the context window
 * has another key (the snapshot changed), or there is none (it left the window, or never was).
 */
export function shouldEmitStateSignal(messages: readonly { content: unknown }[], cacheKey: string): boolean {
  return latestStateSignal(messages)?.cacheKey !== cacheKey;
}

/** The text a model sees for a signal. */
export function stateSignalText(signal: WorkingMemoryStateSignal): string {
  return `<state id="${signal.stateId}" cacheKey="${signal.cacheKey}">\n${signal.content}\n</state>`;
}

/**
 * Throws `INVALID_ARGUMENT` when a memory's configuration asks for state signals with the vnext
 * tool (not supported).
 */
export function assertStateSignalConfig(memory: Pick<WorkingMemoryHost, 'options'>): void {
  const config = memory.options.workingMemory;
  if (config?.useStateSignals && config.version === 'vnext') {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      "workingMemory.useStateSignals cannot be combined with version 'vnext'",
    );
  }
}

export interface WorkingMemoryStateOptions {
  storage: MemoryStorage;
  scope?: WorkingMemoryScope;
  template?: WorkingMemoryTemplate;
  templateProvider?: WorkingMemoryTemplateProvider;
}

/**
 * An input processor that delivers the working memory as a state signal. It adds a signal
 * message (before the trailing user message) only when the snapshot changed or the previous
 * signal is no longer among the messages; otherwise the messages come back unchanged.
 */
export class WorkingMemoryState {
  readonly id = 'working-memory-state';
  readonly name = 'WorkingMemoryState';
  private readonly reader: WorkingMemory;

  constructor(options: WorkingMemoryStateOptions) {
    this.reader = new WorkingMemory({ ...options, useStateSignals: true });
  }

  /** The signal for the current snapshot of these ids. */
  async snapshot(requestContext?: RequestContextLike): Promise<WorkingMemoryStateSignal> {
    const ids = readMemoryIds(requestContext);
    const [template, data] = await Promise.all([this.reader.resolveTemplate(), this.reader.load(ids)]);
    return createStateSignal(template.format, data);
  }

  async processInput(args: {
    messages: AgentMessage[];
    requestContext?: RequestContextLike;
  }): Promise<AgentMessage[]> {
    const ids = readMemoryIds(args.requestContext);
    if (!ids.threadId && !ids.resourceId) return args.messages;
    const signal = await this.snapshot(args.requestContext);
    if (!shouldEmitStateSignal(args.messages, signal.cacheKey)) return args.messages;
    const message = stateSignalMessage(signal);
    const last = args.messages.at(-1);
    if (last?.role === 'user' && last.type !== STATE_MESSAGE_TYPE) {
      return [...args.messages.slice(0, -1), message, last];
    }
    return [...args.messages, message];
  }
}
