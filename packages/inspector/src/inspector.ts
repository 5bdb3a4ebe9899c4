import { createHash } from 'node:crypto';
import {
  getWorkingMemoryTools,
  type JsonObject,
  type JsonSchemaObject,
  type JsonValue,
  Memory,
  MemoryError,
  type Message,
  type Thread,
  WorkingMemory,
  type WorkingMemoryScope,
} from '@engram/core';
import { assumedWarning, contradiction } from './assumed.ts';
import type { ConfigurationInfo } from './configuration.ts';
import {
  type ObservationsRead,
  type ObservationsScope,
  type ObservationsView,
  readObservations,
} from './observations.ts';
import {
  type RecallStatus,
  type RecallView,
  recallForThread,
  recallStatus,
  type TurnRecall,
  turnRecall,
} from './recall.ts';
import { readTurns, type TurnsView } from './turns.ts';

/** How many threads one step of the resource scan reads. */
export const RESOURCE_SCAN_PAGE = 200;
/** Most threads a thread search reads for one resource. */
export const SEARCH_LIMIT = 5_000;
/** How many messages one step of a search within a thread reads. */
export const SEARCH_PAGE = 5_000;
/** Most matches a search within a thread returns. */
export const MATCH_LIMIT = 10_000;

/** What the page and the CLI say about the memory's configuration. */
export interface MemoryInfo {
  adapter: string;
  label: string;
  allowEdits: boolean;
  lastMessages: number;
  workingMemory: {
    enabled: boolean;
    scope: WorkingMemoryScope;
    format: 'markdown' | 'json';
    /** The Markdown template, or the JSON Schema as a string. */
    template: string;
    readOnly: boolean;
  };
  recall: RecallStatus;
  /**
   * Observational memory: whether the store has the `observations` domain, and the log scope
   * looked at (`null`: the thread's log, else its resource's when only that one exists).
   */
  observations: { supported: boolean; scope: ObservationsScope | null };
  /** Whether the store keeps turn records (the `turns` domain). */
  turns: { supported: boolean };
  /**
   * Where the working-memory mode, template and recall settings came from, and the
   * `memory-config` record the agent's `Memory` wrote into the store (`null` when none was read).
   */
  configuration: ConfigurationInfo;
}

/** One resource found by scanning threads. */
export interface ResourceSummary {
  id: string;
  /** Threads seen in this step of the scan. */
  threads: number;
  lastUpdatedAt: string;
}

/** One step of the resource scan (resources are derived from the threads' `resourceId`). */
export interface ResourceScanStep {
  resources: ResourceSummary[];
  page: number;
  scanned: number;
  total: number;
  hasMore: boolean;
}

/** A working-memory document as shown: the raw text and, in JSON mode, its parse and check. */
export interface DocumentView {
  scope: WorkingMemoryScope;
  /** True for the scope the agent reads and writes. */
  active: boolean;
  value: string | null;
  format: 'markdown' | 'json';
  /** JSON mode: the parsed document, or why it does not parse. */
  json?: { parsed: JsonValue } | { error: string };
  /** JSON mode: schema issues (`path: message`); empty when valid. */
  issues?: string[];
}

/** A tool the agent is offered for this thread, as the model sees it. */
export interface ToolView {
  name: string;
  description: string;
  /** The JSON Schema of the tool's input. */
  inputSchema: JsonSchemaObject;
}

/**
 * The system message the `WorkingMemory` processor adds (its instructions and the stored
 * document) and the memory tools offered beside it, or why none is shown. `warning` is set when
 * the mode and template were assumed; `refused` when the stored working memory contradicts the
 * assumed mode (the composed prompt would not be the agent's).
 */
export type PromptView =
  | { text: string; tools: ToolView[]; warning?: string }
  | { unavailable: string; refused?: true };

/** Everything the thread page shows. `version` changes whenever anything shown changes. */
export interface ThreadView {
  thread: Thread;
  messages: Message[];
  totalMessages: number;
  workingMemory: { resource: DocumentView; thread: DocumentView } | null;
  prompt: PromptView;
  /**
   * The recall system message of the agent's next step (`SemanticRecall` processor, query: the
   * latest user message); `null` when recall is not configured.
   */
  turnRecall: TurnRecall | null;
  recall: RecallStatus;
  /** The thread's observation log, its cursor and a mark for each message shown. */
  observations: ObservationsView;
  version: string;
}

/** A working-memory edit from the page: the text the user started from and the new text. */
export interface WorkingMemoryEditRequest {
  scope: WorkingMemoryScope;
  resourceId?: string;
  threadId?: string;
  /** The stored value the edit was made from; the edit is refused when it changed since. */
  base: string | null;
  value: string;
}

/**
 * Reads (and, when allowed, edits) what a `Memory` holds, the way its agent sees it. Every read
 * goes to storage; nothing is cached.
 */
export class Inspector {
  readonly memory: Memory;
  readonly label: string;
  readonly allowEdits: boolean;
  readonly lastMessages: number;
  /** Set when the memory's mode and template were assumed: how to give the real ones. */
  readonly assumed: string | undefined;
  /** The observation log scope to read; `undefined`: the thread's log, else its resource's. */
  readonly observationsScope: ObservationsScope | undefined;
  /** Where the configuration came from (`OpenedStore.configuration`). */
  readonly configuration: ConfigurationInfo;

  constructor(options: {
    memory: Memory;
    label?: string;
    allowEdits?: boolean;
    lastMessages?: number;
    /**
     * Set when the memory's working-memory mode and template were assumed rather than given
     * (`OpenedStore.assumed`): how to give the real ones. The prompt then carries a warning, and
     * is refused when the stored working memory contradicts the assumed mode.
     */
    assumed?: string;
    /**
     * The observation log to read: `'thread'` or `'resource'`. Default: the memory's
     * `observationalMemory.scope` when it is configured, else the thread's log or, when the
     * thread has none, its resource's.
     */
    observationsScope?: ObservationsScope;
    /** Where the configuration came from. Default: `'assumed'` when `assumed` is set, else `'module'`. */
    configuration?: ConfigurationInfo;
  }) {
    this.memory = options.memory;
    const om = options.memory.options.observationalMemory;
    this.observationsScope = options.observationsScope ?? (om ? om.scope : undefined);
    this.assumed = options.assumed;
    this.configuration = options.configuration ?? {
      source: options.assumed === undefined ? 'module' : 'assumed',
      recorded: null,
    };
    this.label = options.label ?? options.memory.storage.name;
    this.allowEdits = options.allowEdits === true;
    const configured = options.memory.options.lastMessages;
    this.lastMessages = options.lastMessages ?? (configured === false ? 40 : configured);
  }

  /** The memory's configuration as the page shows it. */
  async info(): Promise<MemoryInfo> {
    const wm = this.memory.options.workingMemory;
    const template = await this.memory.getWorkingMemoryTemplate();
    return {
      adapter: this.memory.storage.name,
      label: this.label,
      allowEdits: this.allowEdits,
      lastMessages: this.lastMessages,
      workingMemory: {
        enabled: wm.enabled,
        scope: wm.scope,
        format: template.format,
        template: template.content,
        readOnly: this.memory.options.readOnly,
      },
      recall: this.recallStatus(),
      observations: {
        supported: this.memory.storage.observations !== undefined,
        scope: this.observationsScope ?? null,
      },
      turns: { supported: this.memory.storage.turns !== undefined },
      configuration: this.configuration,
    };
  }

  /**
   * A thread's observation log read from the store alone (no model): every generation with its
   * entries and buffered chunks, the thread's cursor, the block the agent gets, the tokens on
   * each side, and for each of the newest `last` messages whether it is observed or in the raw
   * tail. Says so when the store has no `observations` domain or the thread no log.
   */
  async observations(threadId: string, last = this.lastMessages): Promise<ObservationsView> {
    return (await this.readObservations(threadId, last)).view;
  }

  /** `observations` with the raw tail itself (the history the agent gets when a log exists). */
  async readObservations(
    threadId: string,
    last = this.lastMessages,
  ): Promise<ObservationsRead & { messages: Message[] }> {
    const storage = this.memory.storage;
    const thread = await storage.getThreadById({ threadId });
    if (!thread) throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
    const page = await storage.listMessages({ threadId, perPage: last, direction: 'DESC' });
    const messages = page.messages.reverse();
    const read = await readObservations(this.memory, thread, messages, page.total, this.observationsScope);
    return { ...read, messages };
  }

  /**
   * A thread's turn records, newest first: what each model call was given (`options.turnRecords`
   * of the agent's memory), `limit` of them, older than the turn `before` when given.
   */
  async turns(threadId: string, limit = 20, before?: string): Promise<TurnsView> {
    return readTurns(this.memory, threadId, limit, before);
  }

  /** Semantic recall status; see `RecallStatus`. */
  recallStatus(): RecallStatus {
    return recallStatus(this.memory);
  }

  /**
   * The recall system message of the agent's next step in `thread` (core's `SemanticRecall`
   * processor over the recent history); `null` when recall is not configured.
   */
  async turnRecall(thread: Thread): Promise<TurnRecall | null> {
    if (!this.memory.options.semanticRecall) return null;
    const observed = await readObservations(this.memory, thread, [], 0, this.observationsScope);
    return turnRecall(this.memory, thread, observed.tail ?? undefined);
  }

  /**
   * Semantic recall for a query made in `threadId`: the hits, scores and windows the agent would
   * get there (core's `memory.recall`, the recent history left out), each labelled with its
   * thread, and the system message they make. Reads only. `NOT_FOUND` for an absent thread,
   * `UNSUPPORTED` when recall is not configured, `INVALID_ARGUMENT` for a bad request or an
   * embedder whose space differs from the store's.
   */
  async recall(threadId: string, request: unknown): Promise<RecallView> {
    const thread = await this.memory.storage.getThreadById({ threadId });
    if (!thread) throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
    return recallForThread(this.memory, thread, request);
  }

  /**
   * One step of listing resources. The storage contract has no resource listing, so resources
   * are derived from threads (newest first), `RESOURCE_SCAN_PAGE` threads a step; a resource
   * with working memory but no thread is opened by its id instead.
   */
  async scanResources(page: number): Promise<ResourceScanStep> {
    const result = await this.memory.storage.listThreads({
      page,
      perPage: RESOURCE_SCAN_PAGE,
      orderBy: 'createdAt',
      direction: 'DESC',
    });
    const byId = new Map<string, ResourceSummary>();
    for (const thread of result.threads) {
      const updated = thread.updatedAt.toISOString();
      const seen = byId.get(thread.resourceId);
      if (seen) {
        seen.threads++;
        if (updated > seen.lastUpdatedAt) seen.lastUpdatedAt = updated;
      } else byId.set(thread.resourceId, { id: thread.resourceId, threads: 1, lastUpdatedAt: updated });
    }
    return {
      resources: [...byId.values()],
      page,
      scanned: page * RESOURCE_SCAN_PAGE + result.threads.length,
      total: result.total,
      hasMore: result.hasMore,
    };
  }

  /**
   * A resource's threads, most recently updated first. `query` finds threads by exact id, by
   * `key=value` metadata equality (value read as JSON when it parses), or by a case-insensitive
   * substring of the title or of the metadata as JSON.
   */
  async threads(args: { resourceId?: string; page?: number; perPage?: number; query?: string }): Promise<{
    threads: Thread[];
    total: number;
    page: number;
    perPage: number;
    hasMore: boolean;
  }> {
    const page = args.page ?? 0;
    const perPage = args.perPage ?? 20;
    const query = args.query?.trim() ?? '';
    const storage = this.memory.storage;
    if (query === '') {
      const result = await storage.listThreads({
        resourceId: args.resourceId,
        page,
        perPage,
        orderBy: 'updatedAt',
      });
      return { threads: result.threads, total: result.total, page, perPage, hasMore: result.hasMore };
    }
    const found = new Map<string, Thread>();
    if (query.length <= 255) {
      const byId = await storage.getThreadById({ threadId: query, resourceId: args.resourceId });
      if (byId) found.set(byId.id, byId);
    }
    const equality = /^([^=\s]+)=(.*)$/.exec(query);
    if (equality && args.resourceId !== undefined) {
      const [, key, raw] = equality as unknown as [string, string, string];
      const listed = await storage.listThreads({
        resourceId: args.resourceId,
        metadata: { [key]: parseLoose(raw) },
        perPage: SEARCH_LIMIT,
        orderBy: 'updatedAt',
      });
      for (const thread of listed.threads) found.set(thread.id, thread);
    }
    if (args.resourceId !== undefined) {
      const needle = query.toLowerCase();
      const listed = await storage.listThreads({
        resourceId: args.resourceId,
        perPage: SEARCH_LIMIT,
        orderBy: 'updatedAt',
      });
      for (const thread of listed.threads) {
        const text = `${thread.title}\n${JSON.stringify(thread.metadata)}`.toLowerCase();
        if (text.includes(needle)) found.set(thread.id, thread);
      }
    }
    const all = [...found.values()];
    const threads = all.slice(page * perPage, (page + 1) * perPage);
    return { threads, total: all.length, page, perPage, hasMore: (page + 1) * perPage < all.length };
  }

  /** The resource's stored record (working memory and metadata), or `null` when absent. */
  async resource(resourceId: string): Promise<{
    id: string;
    workingMemory: DocumentView | null;
    metadata: JsonObject;
    updatedAt: string | null;
  }> {
    const resource = await this.memory.storage.getResourceById({ resourceId });
    const wm = this.memory.options.workingMemory;
    return {
      id: resourceId,
      workingMemory: wm.enabled
        ? await this.document('resource', resource?.workingMemory ?? null, wm.scope === 'resource')
        : null,
      metadata: resource?.metadata ?? {},
      updatedAt: resource?.updatedAt.toISOString() ?? null,
    };
  }

  /**
   * The thread page: the newest `last` messages (chronological), working memory in both
   * scopes, the system messages the `WorkingMemory` and `SemanticRecall` processors compose for
   * this thread, and the recall status. `NOT_FOUND` when the thread is absent.
   */
  async thread(threadId: string, last = this.lastMessages): Promise<ThreadView> {
    const storage = this.memory.storage;
    const thread = await storage.getThreadById({ threadId });
    if (!thread) throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
    const [page, resource, prompt] = await Promise.all([
      storage.listMessages({ threadId, perPage: last, direction: 'DESC' }),
      storage.getResourceById({ resourceId: thread.resourceId }),
      this.prompt(thread),
    ]);
    const messages = page.messages.reverse();
    const observed = await readObservations(
      this.memory,
      thread,
      messages,
      page.total,
      this.observationsScope,
    );
    // Under observational memory the agent's history is the raw tail, not the newest N.
    const recalled = this.memory.options.semanticRecall
      ? await turnRecall(this.memory, thread, observed.tail ?? undefined)
      : null;
    const wm = this.memory.options.workingMemory;
    const threadValue = thread.metadata.workingMemory;
    const workingMemory = wm.enabled
      ? {
          resource: await this.document('resource', resource?.workingMemory ?? null, wm.scope === 'resource'),
          thread: await this.document(
            'thread',
            typeof threadValue === 'string' ? threadValue : null,
            wm.scope === 'thread',
          ),
        }
      : null;
    const view = {
      thread,
      messages,
      totalMessages: page.total,
      workingMemory,
      prompt,
      turnRecall: recalled,
      recall: this.recallStatus(),
      observations: observed.view,
    };
    return { ...view, version: hashOf(view) };
  }

  /**
   * One page of a thread's messages, oldest first (`'DESC'`: newest first). The page's message
   * list pages through the whole thread with this: oldest first, message `i` of page `page` is
   * message `page × perPage + i` of the thread.
   */
  async messages(
    threadId: string,
    page: number,
    perPage: number,
    direction: 'ASC' | 'DESC' = 'ASC',
  ): Promise<{ messages: Message[]; total: number; page: number; perPage: number; hasMore: boolean }> {
    await this.existingThread(threadId);
    const result = await this.memory.storage.listMessages({ threadId, page, perPage, direction });
    return { messages: result.messages, total: result.total, page, perPage, hasMore: result.hasMore };
  }

  /**
   * Where a message sits in its thread (0: the oldest), counted as `messages` pages: the messages
   * created before it, then its place among those created at the same instant (ties by id).
   * `NOT_FOUND` when the message is not in that thread.
   */
  async messagePosition(threadId: string, messageId: string): Promise<{ index: number; message: Message }> {
    const storage = this.memory.storage;
    const message = await this.messageOf(threadId, messageId);
    const at = message.createdAt;
    const [before, same] = await Promise.all([
      storage.listMessages({ threadId, perPage: 0, dateRange: { end: at, endExclusive: true } }),
      storage.listMessages({ threadId, perPage: false, dateRange: { start: at, end: at } }),
    ]);
    return { index: before.total + same.messages.findIndex((m) => m.id === messageId), message };
  }

  /**
   * The messages of a thread whose text contains `query` (case-insensitive), oldest first: their
   * indexes (as `messages` counts) and ids. Reads the thread `SEARCH_PAGE` messages at a time and
   * keeps at most `MATCH_LIMIT` matches (`limited` then says more were left out).
   */
  async searchMessages(
    threadId: string,
    query: string,
  ): Promise<{ query: string; matches: { index: number; id: string }[]; limited: boolean }> {
    await this.existingThread(threadId);
    const needle = query.toLowerCase();
    const matches: { index: number; id: string }[] = [];
    if (needle === '') return { query, matches, limited: false };
    for (let page = 0; ; page++) {
      const result = await this.memory.storage.listMessages({
        threadId,
        page,
        perPage: SEARCH_PAGE,
        direction: 'ASC',
      });
      for (const [i, m] of result.messages.entries()) {
        if (!searchableText(m.content).toLowerCase().includes(needle)) continue;
        if (matches.length === MATCH_LIMIT) return { query, matches, limited: true };
        matches.push({ index: page * SEARCH_PAGE + i, id: m.id });
      }
      if (!result.hasMore) return { query, matches, limited: false };
    }
  }

  /**
   * The system message the `WorkingMemory` processor adds for this thread, composed by core's
   * own processor (configured from the memory) — not re-implemented here. When the configuration
   * was assumed (`assumed`), the stored working memory of the thread and of its resource is
   * checked against the mode first: a contradiction refuses the prompt, else it carries a warning.
   */
  async prompt(thread: Thread): Promise<PromptView> {
    if (!this.memory.options.workingMemory.enabled) {
      return { unavailable: 'working memory is disabled for this memory: no system message is added' };
    }
    const format = this.memory.getWorkingMemorySchema() ? 'json' : 'markdown';
    if (this.assumed !== undefined) {
      const resource = await this.memory.storage.getResourceById({ resourceId: thread.resourceId });
      const threadValue = thread.metadata.workingMemory;
      const refusal = contradiction(
        format,
        [
          { scope: 'resource', value: resource?.workingMemory ?? null },
          { scope: 'thread', value: typeof threadValue === 'string' ? threadValue : null },
        ],
        this.assumed,
      );
      if (refusal !== null) return { unavailable: refusal, refused: true };
    }
    const ids = { threadId: thread.id, resourceId: thread.resourceId };
    const [message, offered] = await Promise.all([
      WorkingMemory.fromMemory(this.memory).buildMessage(ids),
      getWorkingMemoryTools(this.memory, ids),
    ]);
    const content = message.content;
    const text = typeof content === 'string' ? content : JSON.stringify(content, null, 2);
    const tools = Object.values(offered).map(({ name, description, inputSchema }) => ({
      name,
      description,
      inputSchema,
    }));
    return this.assumed === undefined
      ? { text, tools }
      : { text, tools, warning: assumedWarning(format, this.assumed) };
  }

  /**
   * Replaces a working-memory document through `Memory.editWorkingMemory` (the atomic path the
   * agent's tool uses). Refused with `CONFLICT` when the stored value is no longer `base`, with
   * `VALIDATION` when a JSON document fails the schema, and with `UNSUPPORTED` unless edits
   * were allowed. Returns the stored value.
   */
  async editWorkingMemory(request: WorkingMemoryEditRequest): Promise<string | null> {
    this.assertEditable('editing working memory');
    const { scope, value, base } = request;
    if (scope !== 'resource' && scope !== 'thread') {
      throw new MemoryError('INVALID_ARGUMENT', `scope must be 'resource' or 'thread'`);
    }
    if (typeof value !== 'string') throw new MemoryError('INVALID_ARGUMENT', 'value must be a string');
    if (base !== null && typeof base !== 'string') {
      throw new MemoryError('INVALID_ARGUMENT', 'base must be the string the edit started from, or null');
    }
    const schema = this.memory.getWorkingMemorySchema();
    if (schema) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch (error) {
        throw new MemoryError('VALIDATION', `the document is not valid JSON: ${(error as Error).message}`, {
          details: { issues: [`the document: ${(error as Error).message}`] },
        });
      }
      const check = await schema.validate(parsed);
      if (!check.ok) {
        throw new MemoryError(
          'VALIDATION',
          `working memory does not match the schema: ${check.issues.join('; ')}`,
          {
            details: { issues: check.issues },
          },
        );
      }
    }
    const target =
      scope === 'resource'
        ? { resourceId: request.resourceId }
        : { threadId: request.threadId, resourceId: request.resourceId };
    return this.memoryFor(scope).editWorkingMemory({
      ...target,
      edit: (current) => {
        if (current !== base) {
          throw new MemoryError(
            'CONFLICT',
            'the working memory changed since it was loaded; nothing was written (reload and edit again)',
          );
        }
        return value;
      },
    });
  }

  /** Deletes one message of a thread. `NOT_FOUND` when the message is not in that thread. */
  async deleteMessage(threadId: string, messageId: string): Promise<void> {
    this.assertEditable('deleting messages');
    await this.messageOf(threadId, messageId);
    await this.memory.storage.deleteMessages([messageId]);
  }

  /** A message of a thread; `NOT_FOUND` when it is absent or in another thread. */
  private async messageOf(threadId: string, messageId: string): Promise<Message> {
    const [message] = await this.memory.storage.listMessagesById({ ids: [messageId] });
    if (!message || message.threadId !== threadId) {
      throw new MemoryError(
        'NOT_FOUND',
        `message ${JSON.stringify(messageId)} is not in thread ${JSON.stringify(threadId)}`,
      );
    }
    return message;
  }

  private async existingThread(threadId: string): Promise<Thread> {
    const thread = await this.memory.storage.getThreadById({ threadId });
    if (!thread) throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
    return thread;
  }

  private assertEditable(what: string): void {
    if (!this.allowEdits) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${what} is off: the inspector is read-only (start it with --allow-edits)`,
      );
    }
  }

  /** The memory itself, or the same configuration addressing the other scope. */
  private memoryFor(scope: WorkingMemoryScope): Memory {
    const options = this.memory.options;
    if (options.workingMemory.scope === scope) return this.memory;
    return new Memory({
      storage: this.memory.storage,
      options: {
        lastMessages: options.lastMessages,
        readOnly: options.readOnly,
        workingMemory: {
          enabled: options.workingMemory.enabled,
          scope,
          template: options.workingMemory.template,
          schema: options.workingMemory.schema,
        },
      },
    });
  }

  private async document(
    scope: WorkingMemoryScope,
    value: string | null,
    active: boolean,
  ): Promise<DocumentView> {
    const schema = this.memory.getWorkingMemorySchema();
    if (!schema) return { scope, active, value, format: 'markdown' };
    if (value === null) return { scope, active, value, format: 'json', issues: [] };
    let parsed: JsonValue;
    try {
      parsed = JSON.parse(value) as JsonValue;
    } catch (error) {
      return { scope, active, value, format: 'json', json: { error: (error as Error).message }, issues: [] };
    }
    const check = await schema.validate(parsed);
    return { scope, active, value, format: 'json', json: { parsed }, issues: check.ok ? [] : check.issues };
  }
}

/**
 * The text a search within a thread looks at: a string, the text parts, else the JSON — what the
 * page shows, every role included (core's `messageText` is what recall embeds: user and assistant
 * text only).
 */
function searchableText(content: JsonValue): string {
  if (typeof content === 'string') return content;
  const parts = content !== null && typeof content === 'object' && !Array.isArray(content) && content.parts;
  if (Array.isArray(parts)) {
    return parts
      .map((part) =>
        part !== null && typeof part === 'object' && !Array.isArray(part) && typeof part.text === 'string'
          ? part.text
          : JSON.stringify(part),
      )
      .join('\n');
  }
  return JSON.stringify(content);
}

function parseLoose(raw: string): JsonValue {
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return raw;
  }
}

function hashOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('base64url').slice(0, 22);
}
