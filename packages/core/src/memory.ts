import { type PreparedTurn, recordOfRow, type TurnRecord, turnRecord, turnRow } from './agent/turn-record.ts';
import { ConfigRecorder, configRecord } from './configuration.ts';
import { MemoryError } from './errors.ts';
import { assertKnownKeys, keysOf } from './known-keys.ts';
import { type CloneThreadArgs, type CloneThreadResult, cloneThread } from './lifecycle/clone.ts';
import { exportResource } from './lifecycle/export.ts';
import { exportStore } from './lifecycle/export-store.ts';
import { type ImportCounts, type ImportOptions, importRecords } from './lifecycle/import.ts';
import type { MemoryRecord } from './lifecycle/records.ts';
import { type MemoryOptions, type ResolvedMemoryOptions, resolveMemoryOptions } from './memory-options.ts';
import { ObservationalMemory, type ObservationIssue } from './observations/engine.ts';
import { assertLanguageModel, type LanguageModelLike } from './observations/model.ts';
import { assertSignal, throwIfAborted } from './recall/abort.ts';
import { assertEmbedder, type EmbeddingModelLike, type EmbeddingUsage } from './recall/embedder.ts';
import type { RecallEngine, RecallMode, RecallResult, ReindexProgress } from './recall/engine.ts';
import { recallEngine } from './recall/mode.ts';
import { assertArgs, invalid } from './storage/arguments.ts';
import type { ListThreadsArgs, MemoryStorage, ThreadPage } from './storage/contract.ts';
import { requireDomain } from './storage/domains.ts';
import { ownedThread } from './storage/ownership.ts';
import type { ResourceDeletion } from './storage/purge.ts';
import type { JsonObject, Message, Thread } from './storage/records.ts';
import type { TurnStore } from './storage/turns.ts';
import { assertId, assertJsonObject, assertOptionalId, describe, isPlainObject } from './storage/validate.ts';
import { type GeneratedTitle, ThreadTitles } from './threads/titles.ts';
import { type ResolvedSchema, resolveSchema } from './working-memory/schema.ts';
import { defaultWorkingMemoryTemplate } from './working-memory/template.ts';
import {
  parseDocument,
  throwIfInvalid,
  type WorkingMemoryEdit,
  type WorkingMemoryTarget,
  WorkingMemoryUpdates,
} from './working-memory/update.ts';

export type { WorkingMemoryTarget } from './working-memory/update.ts';

/** A message to save: `id` (a UUID), `createdAt` and `type` (`'text'`) may be left out. */
export type MessageInput = Omit<Message, 'id' | 'createdAt' | 'type'> & {
  id?: string;
  createdAt?: Date;
  type?: string;
};

/** One message for `addMessage`: `resourceId` is optional and taken from the thread. */
export type AddMessageInput = Omit<MessageInput, 'resourceId'> & { resourceId?: string };

/** Per-call switch: `readOnly: true` refuses the write even if the memory allows writes. */
export interface WriteControl {
  readOnly?: boolean;
}

/** The working-memory template as shown to a model. */
export interface WorkingMemoryTemplate {
  format: 'markdown' | 'json';
  /** The Markdown template, or the JSON Schema of the document as a string. */
  content: string;
}

/** Arguments of `new Memory(…)`. */
export interface MemoryConfig {
  storage: MemoryStorage;
  /**
   * An AI SDK embedding model (e.g. `openai.embedding('text-embedding-3-small')`) or
   * `createLexicalEmbedder()`. Required by `options.semanticRecall`.
   */
  embedder?: EmbeddingModelLike;
  /**
   * Called when embedding saved messages fails. The messages are saved anyway and have no (or a
   * stale) vector until `memory.reindex()`. Default: a `console.warn`.
   */
  onEmbeddingError?: (error: unknown, messageIds: string[]) => void;
  /**
   * Called when observational memory's Observer, Reflector or a working-memory change it made
   * failed (the turn went on with the raw messages; the next turn retries). Default: a
   * `console.warn`.
   */
  onObservationIssue?: (issue: ObservationIssue) => void;
  /**
   * Called when titling a thread after a save failed (the model threw, timed out or answered no
   * text; `options.threadTitle`). The save succeeded and the title is left as it is. Default: a
   * `console.warn`.
   */
  onTitleError?: (error: unknown, threadId: string) => void;
  /**
   * Called when recording the configuration in the store failed (`options.recordConfiguration`).
   * The write that triggered it succeeded. Default: one `console.warn` per `Memory`.
   */
  onConfigRecordError?: (error: unknown) => void;
  options?: MemoryOptions;
}

/** Every key of `MemoryConfig`; the `satisfies` makes a key added to it a type error here. */
const CONFIG_KEYS = Object.keys({
  storage: true,
  embedder: true,
  onEmbeddingError: true,
  onObservationIssue: true,
  onTitleError: true,
  onConfigRecordError: true,
  options: true,
} satisfies Record<keyof MemoryConfig, true>);

/** Arguments of a semantic recall (`memory.recall({ …, query })`). */
export interface SemanticRecallArgs {
  /** The current thread: its recent history is left out of the hits. */
  threadId: string;
  /** The user or tenant; only its messages are searched. */
  resourceId: string;
  /** The text to find similar messages for (usually the user's latest message). */
  query: string;
  /** Overrides `options.semanticRecall.topK`. */
  topK?: number;
  /** Overrides `options.semanticRecall.scope`. */
  scope?: 'resource' | 'thread';
  /** Overrides `options.semanticRecall.messageRange`. */
  messageRange?: number | { before: number; after: number };
  /** History messages to leave out; default `options.lastMessages`. */
  last?: number | false;
  /**
   * Cancels the recall: the query's embedding call gets it, and once it is aborted (before the
   * call, or before the result is handed back) the recall rejects with its reason.
   */
  signal?: AbortSignal;
}

/** Arguments of `memory.recall` without a query: the recent history. */
export interface HistoryArgs {
  threadId: string;
  resourceId?: string;
  last?: number | false;
}

/** The arguments object of the `Memory` method `M`. */
type ArgsOf<M extends keyof Memory> = Memory[M] extends (args: infer A, ...rest: never[]) => unknown
  ? A
  : never;

/** The keys every working-memory call takes. */
const TARGET = { threadId: true, resourceId: true, readOnly: true } as const;

/**
 * The keys each `Memory` call takes in its arguments object: any other is `INVALID_ARGUMENT`, so
 * a misspelt `resourceId` never turns an owned read into an unchecked one. (The messages of
 * `saveMessages` are records, not arguments: fields other than a message's are left out.)
 */
const ARGS = {
  createThread: keysOf<ArgsOf<'createThread'>>({
    resourceId: true,
    threadId: true,
    title: true,
    metadata: true,
    readOnly: true,
  }),
  getThreadById: keysOf<ArgsOf<'getThreadById'>>({ threadId: true, resourceId: true }),
  updateThread: keysOf<ArgsOf<'updateThread'>>({ id: true, title: true, metadata: true, readOnly: true }),
  resource: keysOf<ArgsOf<'deleteResource'>>({ resourceId: true }),
  importRecords: keysOf<ImportOptions>({ onConflict: true, resourceId: true }),
  cloneThread: keysOf<ArgsOf<'cloneThread'>>({
    threadId: true,
    resourceId: true,
    newThreadId: true,
    upToMessageId: true,
    title: true,
    metadata: true,
    readOnly: true,
  }),
  generateTitle: keysOf<ArgsOf<'generateTitle'>>({ threadId: true, resourceId: true, model: true }),
  saveMessages: keysOf<ArgsOf<'saveMessages'>>({ messages: true }),
  // Without a query: the history (a `query` key is named, so that a misspelt one is suggested).
  recall: [...keysOf<HistoryArgs>({ threadId: true, resourceId: true, last: true }), 'query'],
  semanticRecall: keysOf<SemanticRecallArgs>({
    threadId: true,
    resourceId: true,
    query: true,
    topK: true,
    scope: true,
    messageRange: true,
    last: true,
    signal: true,
  }),
  reindex: keysOf<NonNullable<ArgsOf<'reindex'>>>({ resourceId: true, onProgress: true, signal: true }),
  listTurns: keysOf<ArgsOf<'listTurns'>>({ threadId: true, resourceId: true, limit: true, before: true }),
  getTurn: keysOf<ArgsOf<'getTurn'>>({ turnId: true, resourceId: true }),
  getWorkingMemory: keysOf<ArgsOf<'getWorkingMemory'>>({ threadId: true, resourceId: true }),
  updateWorkingMemory: keysOf<ArgsOf<'updateWorkingMemory'>>({ ...TARGET, workingMemory: true }),
  mergeWorkingMemory: keysOf<ArgsOf<'mergeWorkingMemory'>>({ ...TARGET, workingMemory: true }),
  applyWorkingMemoryPatch: keysOf<ArgsOf<'applyWorkingMemoryPatch'>>({ ...TARGET, patch: true }),
  editWorkingMemory: keysOf<ArgsOf<'editWorkingMemory'>>({ ...TARGET, edit: true }),
};

let lastStamp = 0;

/** Strictly increasing timestamps within this process (ms). */
function nextStamp(): Date {
  const now = Date.now();
  lastStamp = now > lastStamp ? now : lastStamp + 1;
  return new Date(lastStamp);
}

/**
 * Threads, messages and working memory on top of any `MemoryStorage`.
 *
 * Working memory is a Markdown document (template mode, replace semantics) or a JSON object
 * checked by a schema (schema mode, merge semantics), kept per resource (default) or per thread.
 */
export class Memory {
  /** The storage given at construction. */
  readonly storage: MemoryStorage;
  /** The options with every default filled in. */
  readonly options: ResolvedMemoryOptions;
  private readonly schema: ResolvedSchema | null;
  /** Every working-memory read and write goes through here, on its way to the storage. */
  private readonly workingMemory: WorkingMemoryUpdates;
  private readonly engine: RecallEngine | null = null;
  private readonly onEmbeddingError: (error: unknown, messageIds: string[]) => void;
  /** Observational memory, when `options.observationalMemory` is on. */
  readonly observations: ObservationalMemory | undefined;
  /** Thread titles from a model (`options.threadTitle`, `generateTitle`). */
  private readonly titles: ThreadTitles;
  /** Where turn records are written (`options.turnRecords`). */
  private readonly turnLog: TurnStore | undefined;
  /** Records the configuration in the store after the first write (`options.recordConfiguration`). */
  private readonly recorder: ConfigRecorder | undefined;

  /**
   * Throws `INVALID_ARGUMENT` for bad options (for example both `template` and `schema`, a
   * schema that is neither a Standard Schema nor a JSON Schema object, or an unknown key such
   * as `workingMemory.scopee`, named with the closest valid one); `semanticRecall` without an
   * `embedder` is `INVALID_ARGUMENT`, and on a storage without `vectors` it is `UNSUPPORTED`.
   */
  constructor(config: MemoryConfig) {
    if (typeof config !== 'object' || config === null) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `new Memory expects { storage, options? }, got ${describe(config)}`,
      );
    }
    assertKnownKeys(config, CONFIG_KEYS, '');
    const storage = config.storage;
    if (typeof storage !== 'object' || storage === null || typeof storage.getThreadById !== 'function') {
      throw new MemoryError('INVALID_ARGUMENT', 'new Memory needs a storage implementing MemoryStorage');
    }
    this.storage = storage;
    this.options = resolveMemoryOptions(config.options);
    const source = this.options.workingMemory.schema;
    this.schema = source === undefined ? null : resolveSchema(source);
    this.workingMemory = new WorkingMemoryUpdates(
      storage,
      this.options.workingMemory.scope,
      this.options.workingMemory.onInvalidStored,
    );
    if (config.embedder !== undefined) assertEmbedder(config.embedder);
    if (config.onEmbeddingError !== undefined && typeof config.onEmbeddingError !== 'function') {
      throw invalid('onEmbeddingError must be a function');
    }
    this.onEmbeddingError =
      config.onEmbeddingError ??
      ((error, ids) =>
        console.warn(
          `engram: embedding ${ids.length} saved message(s) failed; run memory.reindex() to backfill`,
          error,
        ));
    const recall = this.options.semanticRecall;
    if (recall) this.engine = recallEngine(storage, config.embedder, recall);
    this.observations = this.observationalMemory(config);
    this.turnLog = this.options.turnRecords ? requireDomain(storage, 'turns') : undefined;
    if (config.onTitleError !== undefined && typeof config.onTitleError !== 'function') {
      throw invalid('onTitleError must be a function');
    }
    this.titles = new ThreadTitles(
      storage,
      this.options.threadTitle,
      config.onTitleError ??
        ((error, threadId) =>
          console.warn(
            `engram: titling thread ${JSON.stringify(threadId)} failed; its title is unchanged`,
            error,
          )),
    );
    if (config.onConfigRecordError !== undefined && typeof config.onConfigRecordError !== 'function') {
      throw invalid('onConfigRecordError must be a function');
    }
    if (this.options.recordConfiguration) {
      this.recorder = new ConfigRecorder(
        storage,
        () => configRecord(this.options, this.schema, this.engine?.config),
        config.onConfigRecordError ??
          ((error) =>
            console.warn(
              'engram: recording the memory configuration in the store failed; the write succeeded, tools reading the store (the inspector) may not know this configuration',
              error,
            )),
      );
    }
  }

  /** `result`, once the configuration is recorded after this write (the first one only). */
  private async recorded<T>(result: T): Promise<T> {
    await this.recorder?.afterWrite();
    return result;
  }

  /** The observational-memory engine of `config`, checked against the storage and the options. */
  private observationalMemory(config: MemoryConfig): ObservationalMemory | undefined {
    const om = this.options.observationalMemory;
    if (config.onObservationIssue !== undefined && typeof config.onObservationIssue !== 'function') {
      throw invalid('onObservationIssue must be a function');
    }
    if (!om) return undefined;
    const log = requireDomain(this.storage, 'observations');
    if (om.manageWorkingMemory && !this.options.workingMemory.enabled) {
      throw invalid(
        'options.observationalMemory.observation.manageWorkingMemory needs working memory: set options.workingMemory',
      );
    }
    const onIssue =
      config.onObservationIssue ??
      ((issue: ObservationIssue) =>
        console.warn(
          `engram: observational memory (${issue.kind}) failed; the turn used the raw messages`,
          issue.error,
        ));
    return new ObservationalMemory(
      {
        storage: this.storage,
        onIssue,
        applyWorkingMemory: async (target, change) => {
          if (this.schema) await this.applyWorkingMemoryPatch({ ...target, patch: change });
          else await this.updateWorkingMemory({ ...target, workingMemory: change });
        },
      },
      log,
      om,
    );
  }

  // ── threads ────────────────────────────────────────────────────────────────────────────────

  /**
   * Creates a thread. `threadId` defaults to a UUID, `title` to `''`; `metadata.workingMemory`
   * is the thread's initial thread-scoped working memory (in schema mode a string holding a JSON
   * object that passes the schema, or `null`; `VALIDATION` otherwise, nothing written). An id
   * that already exists is refused with `CONFLICT` (change an existing thread with
   * `updateThread`), so re-creating a thread can never wipe its messages' context or its
   * working memory. The storage inserts
   * atomically: of several concurrent creators of one id (in any process), exactly one succeeds.
   */
  async createThread(
    args: { resourceId: string; threadId?: string; title?: string; metadata?: JsonObject } & WriteControl,
  ): Promise<Thread> {
    assertArgs(args, 'createThread', ARGS.createThread);
    assertId(args.resourceId, 'resourceId');
    assertOptionalId(args.threadId, 'threadId');
    if (args.title !== undefined && typeof args.title !== 'string') {
      throw invalid(`title must be a string, got ${describe(args.title)}`);
    }
    const metadata = args.metadata ?? {};
    assertJsonObject(metadata, 'metadata');
    if (Object.hasOwn(metadata, 'workingMemory')) this.assertWritable(args.readOnly, 'createThread');
    await this.assertThreadMemory(metadata, 'createThread');
    const id = args.threadId ?? crypto.randomUUID();
    const now = new Date();
    const thread = await this.storage.createThread({
      id,
      resourceId: args.resourceId,
      title: args.title ?? '',
      metadata,
      createdAt: now,
      updatedAt: now,
    });
    return this.recorded(thread);
  }

  /** The thread, or `null` when absent or (with `resourceId`) owned by another resource. */
  async getThreadById(args: { threadId: string; resourceId?: string }): Promise<Thread | null> {
    assertArgs(args, 'getThreadById', ARGS.getThreadById);
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    return this.storage.getThreadById(args);
  }

  /**
   * Updates the title and shallow-merges `metadata` (so `metadata.workingMemory` replaces the
   * thread-scoped working memory; in schema mode it must pass the schema as in `createThread`,
   * `VALIDATION` otherwise, nothing written). `NOT_FOUND` when the thread is absent.
   */
  async updateThread(
    args: { id: string; title?: string; metadata?: JsonObject } & WriteControl,
  ): Promise<Thread> {
    assertArgs(args, 'updateThread', ARGS.updateThread);
    assertId(args.id, 'id');
    if (isPlainObject(args.metadata) && Object.hasOwn(args.metadata, 'workingMemory')) {
      this.assertWritable(args.readOnly, 'updateThread');
    }
    await this.assertThreadMemory(args.metadata, 'updateThread');
    const { readOnly: _readOnly, ...rest } = args;
    return this.recorded(await this.storage.updateThread(rest));
  }

  /** Deletes a thread and its messages. Absent threads are ignored. */
  async deleteThread(threadId: string): Promise<void> {
    assertId(threadId, 'threadId');
    return this.storage.deleteThread({ threadId });
  }

  /**
   * Deletes every record of a resource — its threads, their messages, vectors and observation
   * logs, working memory of both scopes, its own observation log and the resource row — and
   * returns how many of each kind were removed. Another resource is never touched. If it stops
   * part-way (a crash, a lost connection), calling it again completes it; on a resource with
   * nothing left it returns zeros. `INVALID_ARGUMENT` for a bad id (nothing changed);
   * `UNSUPPORTED` on a storage without `deleteResource`.
   */
  async deleteResource(args: { resourceId: string }): Promise<ResourceDeletion> {
    assertArgs(args, 'deleteResource', ARGS.resource);
    assertId(args.resourceId, 'resourceId');
    if (!this.storage.deleteResource) {
      throw new MemoryError('UNSUPPORTED', `${this.storage.name}: the storage has no deleteResource`, {
        adapter: this.storage.name,
        details: { operation: 'deleteResource' },
      });
    }
    return this.storage.deleteResource({ resourceId: args.resourceId });
  }

  /**
   * Every record of a resource as versioned plain records (`{ v: 1, kind, … }`, JSON-safe: dates
   * as ISO strings), streamed: the resource, each thread followed by its messages and observation
   * log, then the resource's observation log. Write one `JSON.stringify` per line for JSON Lines.
   * Each page of messages is followed by their vectors when the store can read them back
   * (`vectors.readVectors`: libSQL, PostgreSQL, MongoDB, Upstash and the in-memory store).
   */
  exportResource(args: { resourceId: string }): AsyncIterable<MemoryRecord> {
    assertArgs(args, 'exportResource', ARGS.resource);
    assertId(args.resourceId, 'resourceId');
    return exportResource(this.storage, args.resourceId);
  }

  /**
   * Every record of the whole store, resource by resource (each as `exportResource` streams it).
   * Resources are found through their threads, then, when the store lists resources
   * (`listResourceIds`), those without a thread; elsewhere a resource with no thread (only
   * resource-scope working memory or metadata) is not included: export it with `exportResource`.
   */
  exportStore(): AsyncIterable<MemoryRecord> {
    return exportStore(this.storage);
  }

  /**
   * Writes records of `exportResource` into this memory's storage, exactly (dates included).
   * `onConflict` (default `'fail'`) says what a record whose id is already stored does: `'skip'`
   * it, `'replace'` the stored one, or `'fail'` with `CONFLICT`. A record that is not valid stops
   * the import with `VALIDATION` naming its position (the line of a JSON Lines file); records
   * before it are written, none after. With `resourceId`, a record of another resource is refused.
   * Vector records of the store's embedding space are written as they are (no embedding); those
   * of another space are skipped, and when this memory embeds (semantic recall with an embedder)
   * the messages of their resources are embedded after the import (`reindex`), else they are
   * listed in `unembedded`.
   */
  async importRecords(
    records: AsyncIterable<unknown> | Iterable<unknown>,
    options: ImportOptions = {},
  ): Promise<ImportCounts> {
    if (!isPlainObject(options))
      throw invalid(`importRecords options must be an object, got ${describe(options)}`);
    assertKnownKeys(options, ARGS.importRecords, 'options.');
    assertOptionalId(options.resourceId, 'resourceId');
    const counts = await importRecords(this.storage, records, options);
    if (!this.engine?.embeds || !this.storage.vectors) return counts;
    for (const resourceId of counts.unembedded) await this.engine.reindex({ resourceId });
    return { ...counts, unembedded: [] };
  }

  /**
   * Branches a thread: a new thread of the same resource holding copies of its messages (new ids,
   * same order, `createdAt`, role, type and content) up to and including `upToMessageId` (all
   * when omitted), its title and metadata — thread-scope working memory included — and
   * `metadata.clonedFrom = { threadId, messageId }` (the source and the last message copied,
   * `null` when none). Copies are indexed for recall like saved messages (the store's keyword
   * index; under semantic recall they take the sources' stored vectors where the store reads
   * vectors back — libSQL, PostgreSQL, MongoDB, Upstash — and are embedded otherwise). The source is never changed. Messages are copied
   * page by page, so memory stays bounded on long threads; messages saved to the source while
   * it runs, after its newest message at the start, are not copied.
   *
   * Errors (nothing written): `NOT_FOUND` for an unknown thread; `INVALID_ARGUMENT` when
   * `upToMessageId` is not a message of the thread, or `resourceId` does not own it; `CONFLICT`
   * when `newThreadId` exists. If copying fails part-way, the new thread is deleted again (best
   * effort) and the error is thrown. Returns the new thread and the ids of the copies.
   */
  async cloneThread(args: CloneThreadArgs & WriteControl): Promise<CloneThreadResult> {
    assertArgs(args, 'cloneThread', ARGS.cloneThread);
    const { readOnly, ...rest } = args;
    if (isPlainObject(rest.metadata) && Object.hasOwn(rest.metadata, 'workingMemory')) {
      this.assertWritable(readOnly, 'cloneThread');
    }
    await this.assertThreadMemory(rest.metadata, 'cloneThread');
    return cloneThread(
      { storage: this.storage, afterCopy: (saved, sources) => this.embedSaved(saved, sources) },
      rest,
    );
  }

  /**
   * Titles a thread from its first exchange (the first user message and the first assistant
   * reply with text) with `model`, or `options.threadTitle.model`. Only an empty title is
   * replaced: a thread that has a title gets no model call and keeps it, and a title set by
   * another writer while the model ran is kept too (see `ThreadTitles` for the one remaining
   * window). `NOT_FOUND` for an unknown thread; `INVALID_ARGUMENT` without a model or before the
   * first reply. A model failure or timeout (`options.threadTitle.timeoutMs`, default 5 s) is
   * thrown as the model's error, and the title is left as it is.
   */
  async generateTitle(args: {
    threadId: string;
    resourceId?: string;
    model?: LanguageModelLike;
  }): Promise<GeneratedTitle> {
    assertArgs(args, 'generateTitle', ARGS.generateTitle);
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    if (args.model !== undefined) assertLanguageModel(args.model, 'model');
    const thread =
      args.resourceId === undefined
        ? await this.storage.getThreadById({ threadId: args.threadId })
        : await ownedThread(this.storage, 'generateTitle', args.threadId, args.resourceId);
    if (!thread) {
      throw new MemoryError(
        'NOT_FOUND',
        `generateTitle: thread ${JSON.stringify(args.threadId)} does not exist`,
      );
    }
    return this.titles.generate(thread, args.model);
  }

  /** Lists threads; see `ListThreadsArgs` for filters, paging and order. */
  listThreads(args: ListThreadsArgs = {}): Promise<ThreadPage> {
    return this.storage.listThreads(args);
  }

  // ── messages ───────────────────────────────────────────────────────────────────────────────

  /**
   * Saves messages (upsert by id, all-or-nothing). Missing ids become UUIDs, a missing `type`
   * becomes `'text'`, and messages without `createdAt` get strictly increasing timestamps in
   * batch order (also increasing across calls in this process).
   */
  async saveMessages(args: { messages: MessageInput[] }): Promise<Message[]> {
    assertArgs(args, 'saveMessages', ARGS.saveMessages);
    if (!Array.isArray(args.messages)) {
      throw invalid(`messages must be an array, got ${describe(args.messages)}`);
    }
    const messages = args.messages.map((message, i): Message => {
      if (!isPlainObject(message))
        throw invalid(`messages[${i}] must be an object, got ${describe(message)}`);
      return {
        id: message.id ?? crypto.randomUUID(),
        threadId: message.threadId,
        resourceId: message.resourceId,
        role: message.role,
        content: message.content,
        type: message.type ?? 'text',
        createdAt: message.createdAt ?? nextStamp(),
      };
    });
    const saved = await this.storage.saveMessages(messages);
    await this.recorder?.afterWrite();
    await this.embedSaved(saved);
    await this.observations?.afterSave(saved);
    await this.titles.afterSave(saved);
    return saved;
  }

  /**
   * Saves one message to an existing thread, its resource taken from the thread:
   * `addMessage({ threadId, role: 'user', content: 'Hi' })`. Otherwise as `saveMessages` (id,
   * `type` and `createdAt` filled in, embedded under semantic recall). `NOT_FOUND` when the
   * thread is absent; `INVALID_ARGUMENT` when a given `resourceId` is not the thread's. Returns
   * the saved message.
   */
  async addMessage(message: AddMessageInput): Promise<Message> {
    assertArgs(message, 'addMessage');
    assertId(message.threadId, 'threadId');
    assertOptionalId(message.resourceId, 'resourceId');
    const thread = await this.storage.getThreadById({ threadId: message.threadId });
    if (!thread)
      throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(message.threadId)} does not exist`);
    if (message.resourceId !== undefined && message.resourceId !== thread.resourceId) {
      throw invalid(
        `thread ${JSON.stringify(thread.id)} belongs to another resource than ${JSON.stringify(message.resourceId)}`,
      );
    }
    const [saved] = await this.saveMessages({ messages: [{ ...message, resourceId: thread.resourceId }] });
    return saved as Message;
  }

  /**
   * With semantic recall on: embeds saved messages after the write (outside its transaction).
   * A failure goes to `onEmbeddingError`, never to the caller: the messages are saved.
   */
  private async embedSaved(saved: Message[], sources?: ReadonlyMap<string, string>): Promise<void> {
    if (!this.engine?.embeds || saved.length === 0) return;
    try {
      if (sources) await this.engine.copyVectors(sources);
      await this.engine.index(saved);
    } catch (error) {
      this.onEmbeddingError(
        error,
        saved.map((m) => m.id),
      );
    }
  }

  /**
   * Without `query`: the newest `last` messages of a thread (default `options.lastMessages`;
   * `false` for all), in chronological order.
   *
   * With `query` (semantic recall; needs `options.semanticRecall`, else `UNSUPPORTED`): the
   * messages most similar to `query` among the resource's threads (or this thread, by scope),
   * each with its window of neighbours from its own thread, best first. Messages of the recent
   * history (the newest `last` of `threadId`) are never returned, nor repeated in windows.
   */
  recall(args: SemanticRecallArgs): Promise<RecallResult>;
  recall(args: HistoryArgs): Promise<Message[]>;
  recall(args: HistoryArgs | SemanticRecallArgs): Promise<Message[] | RecallResult> {
    if (isPlainObject(args) && args.query !== undefined)
      return this.semanticRecall(args as SemanticRecallArgs);
    if (isPlainObject(args) && Object.hasOwn(args, 'query')) {
      // `query: undefined` (say, no user text yet) asks for the history, as no query does; the
      // keys only a search takes (`topK`, `scope`, …) have nothing to do then.
      assertArgs(args, 'recall', ARGS.semanticRecall);
      const { threadId, resourceId, last } = args as SemanticRecallArgs;
      return this.history({ threadId, resourceId, last });
    }
    return this.history(args as HistoryArgs);
  }

  /** Semantic recall; see `recall` with a `query`. */
  async semanticRecall(args: SemanticRecallArgs): Promise<RecallResult> {
    assertArgs(args, 'recall', ARGS.semanticRecall);
    const engine = this.requireEngine('recall');
    assertId(args.threadId, 'threadId');
    assertId(args.resourceId, 'resourceId');
    if (typeof args.query !== 'string') throw invalid(`query must be a string, got ${describe(args.query)}`);
    assertSignal(args.signal);
    const overrides = resolveMemoryOptions({
      semanticRecall: {
        mode: engine.config.mode,
        topK: args.topK ?? engine.config.topK,
        scope: args.scope ?? engine.config.scope,
        messageRange: args.messageRange ?? { before: engine.config.before, after: engine.config.after },
      },
    }).semanticRecall;
    if (!overrides) throw invalid('recall: bad semantic recall overrides');
    // The history is read beside the searches, or with them where the store can, when its length
    // is bounded (`last` a number).
    const last = args.last ?? this.options.lastMessages;
    const read = () =>
      this.history({ threadId: args.threadId, resourceId: args.resourceId, last: args.last }).then(
        (messages) => new Set(messages.map((m) => m.id)),
      );
    const result = await engine.recall({
      threadId: args.threadId,
      resourceId: args.resourceId,
      query: args.query,
      topK: overrides.topK,
      scope: overrides.scope,
      before: overrides.before,
      after: overrides.after,
      exclude:
        Number.isInteger(last) && (last as number) >= 0
          ? { history: { threadId: args.threadId, last: last as number }, read }
          : await read(),
      signal: args.signal,
    });
    throwIfAborted(args.signal);
    return result;
  }

  /**
   * Embeds every message whose vector is missing or stale (after failed embeddings, or when
   * recall is turned on for existing data), of one resource or of the whole store, reporting
   * progress after each thread. Unchanged text is not embedded again. Needs semantic recall.
   */
  async reindex(
    args: {
      resourceId?: string;
      onProgress?: (progress: ReindexProgress) => void;
      /** Stops the reindex between threads (and its embedding calls); it rejects with the reason. */
      signal?: AbortSignal;
    } = {},
  ): Promise<ReindexProgress> {
    assertArgs(args, 'reindex', ARGS.reindex);
    const engine = this.requireEngine('reindex');
    if (!engine.embeds) {
      throw new MemoryError(
        'UNSUPPORTED',
        "reindex embeds messages; recall mode 'keyword' has no vectors (the store keeps the keyword index itself)",
      );
    }
    assertOptionalId(args.resourceId, 'resourceId');
    if (args.onProgress !== undefined && typeof args.onProgress !== 'function') {
      throw invalid('onProgress must be a function');
    }
    assertSignal(args.signal);
    return engine.reindex(args);
  }

  /** Embedding tokens and calls spent by this memory so far (saves, queries, reindex). */
  embeddingUsage(): EmbeddingUsage {
    return { ...(this.engine?.usage ?? { tokens: 0, calls: 0 }) };
  }

  private requireEngine(operation: string): RecallEngine {
    if (!this.engine) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation} with a query needs options.semanticRecall (and an embedder and a storage with vectors, or a storage with a keyword index)`,
      );
    }
    return this.engine;
  }

  private async history(args: HistoryArgs): Promise<Message[]> {
    assertArgs(args, 'recall', ARGS.recall);
    const last = args.last ?? this.options.lastMessages;
    if (last !== false && (typeof last !== 'number' || !Number.isInteger(last) || last < 0)) {
      throw invalid(`last must be a non-negative integer or false, got ${describe(last)}`);
    }
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    const { threadId, resourceId } = args;
    const page =
      last === 0
        ? null
        : await this.storage.listMessages({
            threadId,
            resourceId,
            perPage: last,
            direction: last === false ? 'ASC' : 'DESC',
          });
    // The listing already hides another resource's messages, so an empty page is the only one
    // that can come from a thread of another resource: only then is the thread read.
    if (resourceId !== undefined && !page?.messages.length) {
      await ownedThread(this.storage, 'recall', threadId, resourceId);
    }
    if (!page) return [];
    return last === false ? page.messages : page.messages.reverse();
  }

  /** The recent history; `recall` without a query. */
  getMessages(args: HistoryArgs): Promise<Message[]> {
    return this.history(args);
  }

  // ── turn records ───────────────────────────────────────────────────────────────────────────

  /** The recall mode in use (`'vector'`, `'keyword'` or `'hybrid'`); `undefined` when recall is off. */
  get recallMode(): RecallMode | undefined {
    return this.engine?.config.mode;
  }

  /**
   * With `options.turnRecords`: stores the record of a turn prepared as `turn` whose messages
   * were just saved as `saved` (the first one's id is the record's), and returns it; without
   * the option (or with nothing saved) it stores nothing and returns `undefined`. A thread
   * deleted since the messages were saved is `NOT_FOUND` and nothing is stored. `memoryStep`
   * calls it from `save`; call it yourself from a loop of your own.
   */
  async recordTurn(turn: PreparedTurn, saved: readonly Message[]): Promise<TurnRecord | undefined> {
    if (!this.turnLog || saved.length === 0) return undefined;
    const record = await turnRecord(
      turn,
      saved.map((m) => m.id),
    );
    await this.turnLog.put(turnRow(record));
    return record;
  }

  /**
   * A thread's turn records, newest first: up to `limit` (default 20, at most 1000), older than
   * `before` (the last record of the previous page) when given. With `resourceId`, a thread of
   * another resource has none. `UNSUPPORTED` on a storage without the `turns` domain.
   */
  async listTurns(args: {
    threadId: string;
    resourceId?: string;
    limit?: number;
    before?: Pick<TurnRecord, 'id' | 'createdAt'>;
  }): Promise<TurnRecord[]> {
    assertArgs(args, 'listTurns', ARGS.listTurns);
    assertId(args.threadId, 'threadId');
    assertOptionalId(args.resourceId, 'resourceId');
    const turns = this.turnStore('listTurns');
    const before =
      args.before === undefined ? null : { id: args.before.id, createdAt: args.before.createdAt };
    const rows = await turns.list(args.threadId, args.limit ?? 20, before);
    return rows
      .filter((row) => args.resourceId === undefined || row.resourceId === args.resourceId)
      .map(recordOfRow);
  }

  /** One turn record by its id (its first message's), or `null`; with `resourceId`, only that resource's. */
  async getTurn(args: { turnId: string; resourceId?: string }): Promise<TurnRecord | null> {
    assertArgs(args, 'getTurn', ARGS.getTurn);
    assertId(args.turnId, 'turnId');
    assertOptionalId(args.resourceId, 'resourceId');
    const row = await this.turnStore('getTurn').get(args.turnId);
    if (!row || (args.resourceId !== undefined && row.resourceId !== args.resourceId)) return null;
    return recordOfRow(row);
  }

  private turnStore(operation: string): TurnStore {
    const turns = this.turnLog ?? this.storage.turns;
    if (turns) return turns;
    throw new MemoryError(
      'UNSUPPORTED',
      `${operation}: ${JSON.stringify(this.storage.name)} keeps no turn records (it does not declare the optional domain "turns")`,
      { adapter: this.storage.name, details: { domain: 'turns' } },
    );
  }

  // ── working memory ─────────────────────────────────────────────────────────────────────────

  /** The stored working memory of the configured scope, or `null` when none was written. */
  async getWorkingMemory(args: WorkingMemoryTarget): Promise<string | null> {
    this.assertEnabled('getWorkingMemory');
    assertArgs(args, 'getWorkingMemory', ARGS.getWorkingMemory);
    return this.workingMemory.get(args, 'getWorkingMemory');
  }

  /**
   * Replaces the working memory of the configured scope. In schema mode the string must hold
   * a JSON object that passes the schema: a string that is not JSON, or JSON that is not an
   * object, or an object the schema rejects is `VALIDATION`, and nothing is written. A value
   * that is not a string is `INVALID_ARGUMENT`.
   */
  async updateWorkingMemory(
    args: WorkingMemoryTarget & WriteControl & { workingMemory: string },
  ): Promise<void> {
    this.assertEnabled('updateWorkingMemory');
    this.assertWritable(args?.readOnly, 'updateWorkingMemory');
    assertArgs(args, 'updateWorkingMemory', ARGS.updateWorkingMemory);
    const value = args.workingMemory;
    if (typeof value !== 'string') throw invalid(`workingMemory must be a string, got ${describe(value)}`);
    if (this.schema) await this.assertDocument(value, 'updateWorkingMemory: workingMemory');
    await this.workingMemory.replace(args, value, 'updateWorkingMemory');
    await this.recorder?.afterWrite();
  }

  /**
   * Merges a partial object into the JSON working memory (see `mergeWorkingMemory` for the
   * rules) in one atomic storage operation, and returns the stored document. Needs schema mode
   * and a storage declaring `capabilities.atomicWorkingMemory`, else `UNSUPPORTED`; works for
   * both scopes. `VALIDATION` when the merged document fails the schema (nothing written).
   */
  async mergeWorkingMemory(
    args: WorkingMemoryTarget & WriteControl & { workingMemory: object | string },
  ): Promise<JsonObject> {
    this.assertEnabled('mergeWorkingMemory');
    this.assertWritable(args?.readOnly, 'mergeWorkingMemory');
    const schema = this.requireSchema('mergeWorkingMemory');
    if (!this.workingMemory.atomic) {
      throw new MemoryError(
        'UNSUPPORTED',
        `mergeWorkingMemory needs a storage with atomic working-memory updates; ${JSON.stringify(this.storage.name)} does not declare capabilities.atomicWorkingMemory (check memory.supportsAtomicWorkingMemoryMerge() first, or use applyWorkingMemoryPatch, which serialises writers within this process only)`,
      );
    }
    assertArgs(args, 'mergeWorkingMemory', ARGS.mergeWorkingMemory);
    return this.recorded(
      await this.workingMemory.merge(args, args.workingMemory, schema, 'mergeWorkingMemory'),
    );
  }

  /**
   * Like `mergeWorkingMemory`, but also on a storage without atomic support: there, writers
   * are serialised per `(scope, id)` inside this process only, and writers in other processes
   * can still interleave. This is what schema-mode tool updates use.
   */
  async applyWorkingMemoryPatch(
    args: WorkingMemoryTarget & WriteControl & { patch: object | string },
  ): Promise<JsonObject> {
    this.assertEnabled('applyWorkingMemoryPatch');
    this.assertWritable(args?.readOnly, 'applyWorkingMemoryPatch');
    const schema = this.requireSchema('applyWorkingMemoryPatch');
    assertArgs(args, 'applyWorkingMemoryPatch', ARGS.applyWorkingMemoryPatch);
    return this.recorded(await this.workingMemory.merge(args, args.patch, schema, 'applyWorkingMemoryPatch'));
  }

  /**
   * Atomic read-modify-write of the working memory of the configured scope: `edit` receives the
   * stored value and returns the new one (it must be pure; it may run more than once). Uses the
   * storage's `updateWorkingMemoryAtomically` when supported, else the in-process fallback lock.
   * If `edit` throws, nothing is written and the error propagates. Returns the stored value.
   */
  async editWorkingMemory(
    args: WorkingMemoryTarget & WriteControl & { edit: WorkingMemoryEdit },
  ): Promise<string | null> {
    this.assertEnabled('editWorkingMemory');
    this.assertWritable(args?.readOnly, 'editWorkingMemory');
    assertArgs(args, 'editWorkingMemory', ARGS.editWorkingMemory);
    if (typeof args.edit !== 'function') throw invalid('edit must be a function');
    return this.recorded(await this.workingMemory.edit(args, args.edit, 'editWorkingMemory'));
  }

  /** `true` when the storage promises atomic working-memory updates across processes. */
  async supportsAtomicWorkingMemoryMerge(): Promise<boolean> {
    return this.workingMemory.atomic;
  }

  /** The Markdown template (or the default one), or in schema mode the JSON Schema as a string. */
  async getWorkingMemoryTemplate(): Promise<WorkingMemoryTemplate> {
    if (this.schema) return { format: 'json', content: JSON.stringify(this.schema.jsonSchema) };
    return {
      format: 'markdown',
      content: this.options.workingMemory.template ?? defaultWorkingMemoryTemplate,
    };
  }

  /** The resolved schema (validator and JSON Schema) in schema mode, else `null`. */
  getWorkingMemorySchema(): ResolvedSchema | null {
    return this.schema;
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────

  private assertEnabled(operation: string): void {
    if (!this.options.workingMemory.enabled) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation}: working memory is disabled; set options.workingMemory.enabled to true`,
      );
    }
  }

  private assertWritable(readOnly: unknown, operation: string): void {
    if (readOnly !== undefined && typeof readOnly !== 'boolean') {
      throw invalid(`readOnly must be a boolean, got ${describe(readOnly)}`);
    }
    if (this.options.readOnly || readOnly === true) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation}: working memory is read-only here${this.options.readOnly ? ' (options.readOnly)' : ' (readOnly: true)'}; nothing was written`,
      );
    }
  }

  private requireSchema(operation: string): ResolvedSchema {
    if (!this.schema) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${operation} works in schema mode only (options.workingMemory.schema); template mode replaces the whole document with updateWorkingMemory`,
      );
    }
    return this.schema;
  }

  /** In schema mode: `VALIDATION` unless `text` is a JSON object that passes the schema. */
  private async assertDocument(text: string, what: string): Promise<void> {
    if (!this.schema) return;
    throwIfInvalid(await this.schema.validate(parseDocument(text, what)));
  }

  /**
   * In schema mode, thread metadata's `workingMemory` (the thread-scoped document) must be a
   * document that passes the schema, or `null` (none); whatever the configured scope, so a
   * later switch to thread scope never finds a document every merge would reject.
   */
  private async assertThreadMemory(metadata: unknown, operation: string): Promise<void> {
    if (!this.schema || !isPlainObject(metadata) || !Object.hasOwn(metadata, 'workingMemory')) return;
    const value = metadata.workingMemory;
    if (value === null) return;
    if (typeof value !== 'string') {
      throw invalid(
        `${operation}: metadata.workingMemory must be a string holding a JSON object (or null), got ${describe(value)}`,
      );
    }
    await this.assertDocument(value, `${operation}: metadata.workingMemory`);
  }
}
