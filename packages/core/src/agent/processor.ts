import { MemoryError } from '../errors.ts';
import type { Memory } from '../memory.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import { ownedThread } from '../storage/ownership.ts';
import type { WorkingMemoryScope } from '../storage/records.ts';
import { defaultWorkingMemoryTemplate } from '../working-memory/template.ts';
import { readMemoryIds } from './context.ts';
import { workingMemoryInstructions } from './instructions.ts';
import type {
  AgentLogger,
  AgentMessage,
  MemoryIds,
  MessageListLike,
  RequestContextLike,
  WorkingMemoryTemplate,
  WorkingMemoryTemplateProvider,
} from './types.ts';

export interface WorkingMemoryProcessorOptions {
  /** Where the working memory is read from. */
  storage: MemoryStorage;
  /** The template; the provider's wins when it returns one. Default: a Markdown user profile. */
  template?: WorkingMemoryTemplate;
  /** `'resource'` (default): shared by the resource's threads; `'thread'`: one per thread. */
  scope?: WorkingMemoryScope;
  /** Guidance for the vnext tool (append, clarify or replace by search string). Markdown only. */
  useVNext?: boolean;
  /** Show the data only, with a note that it cannot be changed. */
  readOnly?: boolean;
  /** Resolves the template at run time (a `Memory` instance is one). */
  templateProvider?: WorkingMemoryTemplateProvider;
  logger?: AgentLogger;
  /**
   * The data is delivered as a state signal (see `WorkingMemoryState`); the system message then
   * holds the guidance and the template only, naming the tool `setWorkingMemory`.
   */
  useStateSignals?: boolean;
}

export interface ProcessInputArgs {
  messages: AgentMessage[];
  messageList?: MessageListLike;
  /** Holds `threadId` and `resourceId`: a `Map`-like object or a plain object. */
  requestContext?: RequestContextLike;
  abort?: (reason?: string) => never;
}

/** The tag on every message engram adds to a conversation. */
export const MEMORY_SOURCE = 'memory';

/**
 * An input processor that adds the working memory to a conversation as one system message
 * tagged `source: 'memory'`: guidance, the template (or, for JSON, an empty object shaped like
 * the schema) and the current data. In read-only mode it holds only the data and says it cannot
 * be changed. The memory is updated through the working-memory tool, not by this processor.
 */
export class WorkingMemory {
  readonly id = 'working-memory';
  readonly name = 'WorkingMemory';
  /** The Markdown template used when no template is configured. */
  readonly defaultWorkingMemoryTemplate = defaultWorkingMemoryTemplate;
  readonly options: Readonly<WorkingMemoryProcessorOptions>;

  constructor(options: WorkingMemoryProcessorOptions) {
    if (!options || typeof options.storage !== 'object' || options.storage === null) {
      throw new MemoryError('INVALID_ARGUMENT', 'WorkingMemory needs a storage');
    }
    if (options.scope !== undefined && options.scope !== 'resource' && options.scope !== 'thread') {
      throw new MemoryError('INVALID_ARGUMENT', `WorkingMemory scope must be 'resource' or 'thread'`);
    }
    if (options.template && options.template.format !== 'markdown' && options.template.format !== 'json') {
      throw new MemoryError('INVALID_ARGUMENT', `template.format must be 'markdown' or 'json'`);
    }
    if (options.useStateSignals && options.useVNext) {
      throw new MemoryError('INVALID_ARGUMENT', 'useStateSignals cannot be combined with the vnext tool');
    }
    this.options = { ...options };
  }

  /**
   * The processor matching a `Memory`'s configuration: its storage, scope, template (the memory
   * is the template provider), read-only flag, vnext and state-signal settings. `readOnly: true`
   * here makes it read-only even when the memory is not.
   */
  static fromMemory(
    memory: Memory,
    overrides: { readOnly?: boolean; logger?: AgentLogger } = {},
  ): WorkingMemory {
    const config = memory.options.workingMemory;
    return new WorkingMemory({
      storage: memory.storage,
      scope: config.scope,
      templateProvider: memory,
      readOnly: memory.options.readOnly || overrides.readOnly === true,
      useVNext: config.version === 'vnext',
      useStateSignals: config.useStateSignals,
      logger: overrides.logger,
    });
  }

  /** The configured scope (`'resource'` unless set). */
  get scope(): WorkingMemoryScope {
    return this.options.scope ?? 'resource';
  }

  /** The template in force: the provider's, then the option, then the default. */
  async resolveTemplate(): Promise<WorkingMemoryTemplate> {
    const provided = await this.options.templateProvider?.getWorkingMemoryTemplate({});
    return provided ?? this.options.template ?? { format: 'markdown', content: defaultWorkingMemoryTemplate };
  }

  /**
   * Reads the stored working memory of the configured scope; `null` when nothing is stored.
   * With both ids, a thread of another resource is `INVALID_ARGUMENT` (`ownedThread`).
   */
  async load(ids: MemoryIds): Promise<string | null> {
    const { storage } = this.options;
    const owned =
      ids.threadId && ids.resourceId
        ? ownedThread(storage, 'WorkingMemory', ids.threadId, ids.resourceId)
        : undefined;
    if (this.scope === 'resource') {
      if (!ids.resourceId) {
        throw new MemoryError('INVALID_ARGUMENT', 'resource-scoped working memory needs a resourceId');
      }
      const [resource] = await Promise.all([storage.getResourceById({ resourceId: ids.resourceId }), owned]);
      return resource?.workingMemory ?? null;
    }
    if (!ids.threadId)
      throw new MemoryError('INVALID_ARGUMENT', 'thread-scoped working memory needs a threadId');
    const thread = await (owned ?? storage.getThreadById({ threadId: ids.threadId }));
    const value = thread?.metadata.workingMemory;
    return typeof value === 'string' ? value : null;
  }

  /** The system message for these ids. */
  async buildMessage(ids: MemoryIds): Promise<AgentMessage> {
    const [template, data] = await Promise.all([this.resolveTemplate(), this.load(ids)]);
    const content = workingMemoryInstructions({
      template,
      data,
      readOnly: this.options.readOnly,
      useVNext: this.options.useVNext && template.format === 'markdown',
      toolName: this.options.useStateSignals ? 'setWorkingMemory' : 'updateWorkingMemory',
      dataInStateSignal: this.options.useStateSignals,
    });
    return { role: 'system', content, source: MEMORY_SOURCE };
  }

  /**
   * Adds the working-memory system message. With a `messageList`, it is added there
   * (`addSystem(message, 'memory')`) and the list is returned; otherwise a new array is returned
   * with the message after any leading system messages. Idempotent on arrays: a working-memory
   * message already there (a system message tagged `source: 'memory'`) is replaced in place, so
   * running the processor twice still leaves one, holding the current memory. Without a thread
   * or resource id in the request context, the messages are returned unchanged.
   */
  async processInput(args: ProcessInputArgs): Promise<AgentMessage[] | MessageListLike> {
    const ids = readMemoryIds(args.requestContext);
    if (!ids.threadId && !ids.resourceId) {
      this.options.logger?.debug?.(
        'working memory skipped: no threadId or resourceId in the request context',
      );
      return args.messageList ?? args.messages;
    }
    const message = await this.buildMessage(ids);
    if (args.messageList) {
      args.messageList.addSystem(message, MEMORY_SOURCE);
      return args.messageList;
    }
    return replaceMemoryMessage(args.messages, message);
  }
}

function isMemoryMessage(message: AgentMessage): boolean {
  return message.role === 'system' && message.source === MEMORY_SOURCE;
}

/**
 * A new array with `message` in place of the first working-memory system message (any others
 * are dropped), or, when there is none, inserted after the leading system messages.
 */
function replaceMemoryMessage(messages: readonly AgentMessage[], message: AgentMessage): AgentMessage[] {
  const at = messages.findIndex(isMemoryMessage);
  if (at < 0) return insertSystemMessage(messages, message);
  return messages.flatMap((m, i) => (i === at ? [message] : isMemoryMessage(m) ? [] : [m]));
}

/** A new array with `message` placed after the leading system messages. */
export function insertSystemMessage(
  messages: readonly AgentMessage[],
  message: AgentMessage,
): AgentMessage[] {
  let at = 0;
  while (at < messages.length && messages[at]?.role === 'system') at++;
  return [...messages.slice(0, at), message, ...messages.slice(at)];
}
