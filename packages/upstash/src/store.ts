import {
  MemoryError,
  type Message,
  type MessagePage,
  type MessagePatch,
  matchesMetadata,
  mergeMessageLists,
  type NormalizedAtomicUpdate,
  type NormalizedListMessages,
  type NormalizedListThreads,
  pageInfo,
  pageOffset,
  RETRY,
  type Resource,
  retryOptimistic,
  StoreBase,
  sortMessages,
  type Thread,
  type ThreadPage,
  type UpdateResourceArgs,
  type UpdateThreadArgs,
} from '@engram/core';
import { Redis } from '@upstash/redis';
import { ADAPTER, threadNotFound, toMemoryError } from './errors.ts';
import {
  type Frame,
  list,
  messageArgs,
  metadataFields,
  ms,
  text,
  toMessage,
  toResource,
  toThread,
  unframe,
} from './mapping.ts';
import { LAYOUT_VERSION } from './migrations.ts';
import { SCRIPTS, type ScriptName } from './scripts.ts';
import { DEFAULT_VECTOR_SCAN_LIMIT, UpstashVectors } from './vectors.ts';

interface CommonOptions {
  /** Prefix of every key, so several stores can share one database. Default `'engram'`. */
  prefix?: string;
  /** Compare-and-set attempts of `updateWorkingMemoryAtomically` before `CONFLICT`. Default 200. */
  casAttempts?: number;
  /**
   * Semantic recall: vectors one search reads at most (newest first; see `UpstashVectors`).
   * Default 5000.
   */
  vectorScanLimit?: number;
}

/**
 * Options of `UpstashStore`: the REST URL and token of an Upstash database (or of the local
 * bridge), or a `Redis` client of `@upstash/redis` you created.
 */
export type UpstashStoreOptions = CommonOptions &
  (
    | {
        /** `UPSTASH_REDIS_REST_URL`. */
        url: string;
        /** `UPSTASH_REDIS_REST_TOKEN`. */
        token: string;
        /** Network retries of the client (see `@upstash/redis`). Default: the client's. */
        retry?: false | { retries?: number; backoff?: (retryCount: number) => number };
        client?: never;
      }
    | {
        /** A client to use as is; any `automaticDeserialization` setting works. */
        client: Redis;
        url?: never;
        token?: never;
        retry?: never;
      }
  );

type ScriptHandle = ReturnType<Redis['createScript']>;

/**
 * engram storage on Upstash Redis over its REST API (`@upstash/redis`).
 *
 * Records are hashes, listings use sorted-set indexes (no hot path scans the keyspace), and
 * every operation is one Lua script, so multi-key writes are atomic. Working memory is updated
 * with an optimistic compare-and-set on a version, retried with a bound: atomic across
 * processes and machines.
 */
export class UpstashStore extends StoreBase {
  readonly name = ADAPTER;
  readonly supportsAtomicWorkingMemoryMerge = true;

  private readonly client: Redis;
  private readonly prefix: string;
  private readonly casAttempts: number;
  private readonly scripts = new Map<ScriptName, ScriptHandle>();
  /** Semantic recall vectors: exact, one bounded Lua scan per query (see `UpstashVectors`). */
  readonly vectors: UpstashVectors;

  constructor(options: UpstashStoreOptions) {
    super();
    if (options === null || typeof options !== 'object') {
      throw invalid('UpstashStore expects an options object with { url, token } or { client }');
    }
    const prefix = options.prefix ?? 'engram';
    if (typeof prefix !== 'string' || prefix.length === 0) throw invalid('prefix must be a non-empty string');
    this.prefix = prefix;
    this.casAttempts = options.casAttempts ?? 200;
    if (!Number.isInteger(this.casAttempts) || this.casAttempts < 1) {
      throw invalid('casAttempts must be a positive integer');
    }
    if (options.client) {
      this.client = options.client;
    } else {
      if (typeof options.url !== 'string' || !options.url)
        throw invalid('url is required (or pass a client)');
      if (typeof options.token !== 'string' || !options.token) throw invalid('token is required');
      try {
        this.client = new Redis({
          url: options.url,
          token: options.token,
          automaticDeserialization: false,
          ...(options.retry === undefined ? {} : { retry: options.retry }),
        });
      } catch (error) {
        throw invalid(`cannot create the client: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    this.vectors = new UpstashVectors(
      () => this.client,
      this.prefix,
      options.vectorScanLimit ?? DEFAULT_VECTOR_SCAN_LIMIT,
      (operation, fn) => this.run(operation, fn),
    );
  }

  protected toMemoryError(error: unknown, operation: string): MemoryError {
    return toMemoryError(error, operation);
  }

  /** Runs one script (EVALSHA, falling back to EVAL once per server) and unframes its reply. */
  private async call(name: ScriptName, args: string[]): Promise<Frame> {
    let script = this.scripts.get(name);
    if (!script) {
      script = this.client.createScript<string>(SCRIPTS[name]);
      this.scripts.set(name, script);
    }
    return unframe(await script.exec([], [this.prefix, ...args]));
  }

  protected async doInit(): Promise<void> {
    const found = Number(text(await this.call('init', [])));
    if (found > LAYOUT_VERSION) {
      throw new MemoryError(
        'MIGRATION',
        `${ADAPTER}: keys under ${JSON.stringify(this.prefix)} use layout version ${found}, newer than this package's ${LAYOUT_VERSION}; upgrade @engram/upstash`,
        { adapter: ADAPTER },
      );
    }
  }

  protected async doClose(): Promise<void> {
    // REST is stateless: there is no connection to release.
  }

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<Thread | null> {
    const thread = toThread(await this.call('getThread', [threadId]));
    if (!thread || (resourceId !== undefined && thread.resourceId !== resourceId)) return null;
    return thread;
  }

  protected async doSaveThread(thread: Thread): Promise<Thread> {
    await this.call('saveThread', [
      thread.id,
      thread.resourceId,
      thread.title,
      ms(thread.createdAt),
      ms(thread.updatedAt),
      newVersion(),
      ...metadataFields(thread.metadata),
    ]);
    return structuredClone(thread);
  }

  protected async doUpdateThread(args: UpdateThreadArgs): Promise<Thread> {
    const touchesMemory = args.metadata !== undefined && Object.hasOwn(args.metadata, 'workingMemory');
    const reply = await this.call('updateThread', [
      args.id,
      ms(new Date()),
      args.title === undefined ? '0' : '1',
      args.title ?? '',
      touchesMemory ? newVersion() : '',
      ...metadataFields(args.metadata),
    ]);
    const thread = reply === null ? null : toThread(reply);
    if (!thread) throw threadNotFound(args.id);
    return thread;
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    await this.call('deleteThread', [threadId]);
  }

  protected async doListThreads(args: NormalizedListThreads): Promise<ThreadPage> {
    const filters = Object.entries(args.metadata ?? {}).flatMap(([key, value]) => [
      `.${key}`,
      value === null || typeof value !== 'object' ? 'eq' : 'has',
      JSON.stringify(value),
    ]);
    const offset = pageOffset(args.page, args.perPage);
    const reply = list(
      await this.call('listThreads', [
        args.resourceId === undefined ? '0' : '1',
        args.resourceId ?? '',
        args.orderBy,
        args.direction,
        String(offset),
        String(args.perPage === false ? -1 : args.perPage),
        ...filters,
      ]),
    );
    const threads = reply.slice(1).flatMap((frame) => toThread(frame) ?? []);
    if (filters.length === 0) {
      return { threads, ...pageInfo(Number(text(reply[0])), args.page, args.perPage) };
    }
    const matching = threads.filter((t) => matchesMetadata(t.metadata, args.metadata));
    const page = args.perPage === false ? matching : matching.slice(offset, offset + args.perPage);
    return { threads: page, ...pageInfo(matching.length, args.page, args.perPage) };
  }

  protected async doSaveMessages(messages: Message[]): Promise<Message[]> {
    const reply = list(await this.call('saveMessages', [ms(new Date()), ...messages.flatMap(messageArgs)]));
    const outcome = text(reply[0]);
    if (outcome === 'not_found') throw threadNotFound(text(reply[1]));
    if (outcome === 'resource_mismatch') {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `${ADAPTER}: message ${JSON.stringify(text(reply[1]))} names resource ${JSON.stringify(text(reply[2]))}, but its thread belongs to another`,
        { adapter: ADAPTER },
      );
    }
    return messages.map((m) => structuredClone(m));
  }

  protected async doListMessages(args: NormalizedListMessages): Promise<MessagePage> {
    const range = args.dateRange;
    const min = range?.start ? `${range.startExclusive ? '(' : ''}${ms(range.start)}` : '-inf';
    const max = range?.end ? `${range.endExclusive ? '(' : ''}${ms(range.end)}` : '+inf';
    const reply = list(
      await this.call('listMessages', [
        args.threadId,
        args.resourceId === undefined ? '0' : '1',
        args.resourceId ?? '',
        args.direction,
        String(pageOffset(args.page, args.perPage)),
        String(args.perPage === false ? -1 : args.perPage),
        min,
        max,
        ...args.include.flatMap((w) => [w.id, String(w.withPreviousMessages), String(w.withNextMessages)]),
      ]),
    );
    const messages = reply.slice(1).flatMap((frame) => toMessage(frame) ?? []);
    return {
      messages: mergeMessageLists([messages], args.direction),
      ...pageInfo(Number(text(reply[0])), args.page, args.perPage),
    };
  }

  protected async doListMessagesById(ids: string[]): Promise<Message[]> {
    const reply = list(await this.call('getMessages', ids));
    return sortMessages(reply.flatMap((frame) => toMessage(frame) ?? []));
  }

  protected async doUpdateMessages(patches: MessagePatch[]): Promise<Message[]> {
    const flag = (present: boolean) => (present ? '1' : '0');
    const reply = list(
      await this.call('updateMessages', [
        ms(new Date()),
        ...patches.flatMap((p) => [
          p.id,
          flag(p.role !== undefined),
          p.role ?? '',
          flag(p.content !== undefined),
          p.content === undefined ? '' : JSON.stringify(p.content),
          flag(p.type !== undefined),
          p.type ?? '',
          flag(p.createdAt !== undefined),
          p.createdAt ? ms(p.createdAt) : '',
        ]),
      ]),
    );
    // The script answers each updated message once, even when patches repeat an id.
    return sortMessages(reply.flatMap((frame) => toMessage(frame) ?? []));
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    await this.call('deleteMessages', [ms(new Date()), ...ids]);
  }

  protected async doGetResourceById(resourceId: string): Promise<Resource | null> {
    return toResource(await this.call('getResource', [resourceId]));
  }

  protected async doUpdateResource(args: UpdateResourceArgs): Promise<Resource> {
    const wm = args.workingMemory;
    const reply = await this.call('updateResource', [
      args.resourceId,
      ms(new Date()),
      wm === undefined ? '' : wm === null ? 'n' : 's',
      wm ?? '',
      wm === undefined ? '' : newVersion(),
      ...metadataFields(args.metadata),
    ]);
    const resource = toResource(reply);
    if (!resource) throw new TypeError('updateResource returned no resource');
    return resource;
  }

  protected async doUpdateWorkingMemoryAtomically(args: NormalizedAtomicUpdate): Promise<string | null> {
    return args.scope === 'resource'
      ? this.casResourceMemory(args.resourceId, args.update)
      : this.casThreadMemory(args.threadId, args.update);
  }

  /** Read once, then compare-and-set; a conflict answers with the fresh value for the retry. */
  private async casResourceMemory(id: string, update: Update): Promise<string | null> {
    let [current, version] = list(await this.call('readResourceWorkingMemory', [id]));
    return retryOptimistic(
      async () => {
        const next = update(typeof current === 'string' ? current : null);
        const reply = list(
          await this.call('casResourceWorkingMemory', [
            id,
            typeof version === 'string' ? version : '',
            ms(new Date()),
            next === null ? 'n' : 's',
            next ?? '',
            newVersion(),
          ]),
        );
        if (text(reply[0]) === 'ok') return next;
        [, current, version] = reply;
        return RETRY;
      },
      { adapter: ADAPTER, attempts: this.casAttempts },
    );
  }

  /** The same for `metadata.workingMemory` of a thread, which must exist. */
  private async casThreadMemory(id: string, update: Update): Promise<string | null> {
    let [owner, stored, version] = list(await this.call('readThreadWorkingMemory', [id]));
    if (typeof owner !== 'string') throw threadNotFound(id);
    return retryOptimistic(
      async () => {
        const value: unknown = typeof stored === 'string' ? JSON.parse(stored) : null;
        const next = update(typeof value === 'string' ? value : null);
        const reply = list(
          await this.call('casThreadWorkingMemory', [
            id,
            typeof version === 'string' ? version : '',
            ms(new Date()),
            JSON.stringify(next),
            newVersion(),
          ]),
        );
        const outcome = text(reply[0]);
        if (outcome === 'not_found') throw threadNotFound(id);
        if (outcome === 'ok') return next;
        [, stored, version] = reply;
        return RETRY;
      },
      { adapter: ADAPTER, attempts: this.casAttempts },
    );
  }
}

type Update = (current: string | null) => string | null;

/** A fresh working-memory version: random, so a recreated record never reuses an old one. */
function newVersion(): string {
  return crypto.randomUUID();
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: ${message}`, { adapter: ADAPTER });
}
