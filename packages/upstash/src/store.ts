import type * as core from '@engram/core/adapter';
import {
  checkClientShape,
  MemoryError,
  messageOfAnotherResource,
  pageOffset,
  SERVER_CAPABILITIES,
  StoreBase,
  sortMessages,
  threadExists,
  threadOfAnotherResource,
} from '@engram/core/adapter';
import { Redis } from '@upstash/redis';
import { ADAPTER, threadNotFound, toMemoryError } from './errors.ts';
import { META } from './keys.ts';
import {
  type Frame,
  list,
  messageRecord,
  metadataFields,
  ms,
  text,
  toMessage,
  toResource,
  toThread,
  unframe,
} from './mapping.ts';
import { LAYOUT_VERSION } from './migrations.ts';
import {
  SCRIPTS,
  type ScriptArgs,
  type ScriptName,
  scriptArgument,
  type ThreadRecord,
  type WorkingMemoryWrite,
} from './scripts.ts';
import { DEFAULT_VECTOR_SCAN_LIMIT, UpstashVectors } from './vectors.ts';

interface CommonOptions {
  /** Prefix of every key, so several stores can share one database. Default `'engram'`. */
  prefix?: string;
  /**
   * Writes of `updateWorkingMemoryAtomically` that may lose under an expired lease (a holder
   * slower than its 2 s lease) before `CONFLICT`. Default 200.
   */
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
        /**
         * `UPSTASH_REDIS_REST_URL`. A URL holding a user name or password
         * (`https://user:pw@…`) is refused with `INVALID_ARGUMENT`: the REST API authenticates
         * with `token` only, and `fetch` would reject such a URL quoting it.
         */
        url: string;
        /** `UPSTASH_REDIS_REST_TOKEN`. */
        token: string;
        /** Network retries of the client (see `@upstash/redis`). Default: the client's. */
        retry?: false | { retries?: number; backoff?: (retryCount: number) => number };
        client?: never;
      }
    | {
        /**
         * A client to use as is; any `automaticDeserialization` setting works. Recognised by its
         * `createScript()` method, so a client from another copy of `@upstash/redis` is accepted.
         */
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
 * with an optimistic compare-and-set on a version, and after a lost race under a lease that
 * holds off other writers: atomic across processes and machines.
 */
export class UpstashStore extends StoreBase {
  readonly name = ADAPTER;
  /** Working-memory updates are compare-and-set on a version; each batch and delete is one Lua script. */
  readonly capabilities = SERVER_CAPABILITIES;

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
    if (options.client !== undefined) {
      // By shape, not instanceof: a client from another copy of `@upstash/redis` works the same.
      this.client = checkClientShape<Redis>(options.client, {
        adapter: 'upstash',
        option: 'client',
        expected: 'a Redis client of @upstash/redis',
        members: { createScript: 'function' },
      });
    } else {
      if (typeof options.url !== 'string' || !options.url)
        throw invalid('url is required (or pass a client)');
      if (typeof options.token !== 'string' || !options.token) throw invalid('token is required');
      if (hasUserinfo(options.url)) {
        throw invalid(
          'url must not hold a user name or password (https://user:password@…): the REST API authenticates with token alone',
        );
      }
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
  private async call<N extends ScriptName>(name: N, args: ScriptArgs[N]): Promise<Frame> {
    let script = this.scripts.get(name);
    if (!script) {
      script = this.client.createScript<string>(SCRIPTS[name]);
      this.scripts.set(name, script);
    }
    return unframe(await script.exec([], [scriptArgument(this.prefix, args)]));
  }

  protected async doInit(): Promise<void> {
    const found = Number(text(await this.call('init', {})));
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

  protected async doGetThreadById(threadId: string, resourceId?: string): Promise<core.Thread | null> {
    const thread = toThread(await this.call('getThread', { id: threadId }));
    if (!thread || (resourceId !== undefined && thread.resourceId !== resourceId)) return null;
    return thread;
  }

  protected async doCreateThread(thread: core.Thread): Promise<core.Thread> {
    const reply = await this.call('createThread', threadRecord(thread));
    if (text(reply) === 'exists') throw threadExists(ADAPTER, thread.id);
    return structuredClone(thread);
  }

  protected async doSaveThread(thread: core.Thread): Promise<core.Thread> {
    await this.call('saveThread', threadRecord(thread));
    return structuredClone(thread);
  }

  protected async doUpdateThread(args: core.NormalizedUpdateThread): Promise<core.Thread> {
    const reply = await this.call('updateThread', {
      id: args.id,
      title: args.title,
      version: args.workingMemoryVersion,
      metadata: metadataFields(args.metadata),
    });
    const thread = reply === null ? null : toThread(reply);
    if (!thread) throw threadNotFound(args.id);
    return thread;
  }

  protected async doDeleteThread(threadId: string): Promise<void> {
    await this.call('deleteThread', { id: threadId });
  }

  protected async readThreadPage(args: core.NormalizedListThreads): Promise<core.ThreadRead> {
    const filters = Object.entries(args.metadata ?? {}).map(([key, value]) => ({
      field: `${META}${key}`,
      op: value === null || typeof value !== 'object' ? ('eq' as const) : ('has' as const),
      value: JSON.stringify(value),
    }));
    const reply = list(
      await this.call('listThreads', {
        resourceId: args.resourceId,
        orderBy: args.orderBy,
        direction: args.direction,
        offset: pageOffset(args.page, args.perPage),
        limit: args.perPage === false ? undefined : args.perPage,
        filters,
      }),
    );
    if (text(reply[0]) === 'page') {
      const threads = list(reply[2] ?? []).flatMap((frame) => toThread(frame) ?? []);
      return { kind: 'page', threads, total: Number(text(reply[1])) };
    }
    // Object and array filter values: the script narrowed the candidates, core compares them as JSON.
    return { kind: 'candidates', threads: list(reply[1] ?? []).flatMap((frame) => toThread(frame) ?? []) };
  }

  protected async doSaveMessages(messages: core.Message[]): Promise<core.Message[]> {
    const reply = list(await this.call('saveMessages', { messages: messages.map(messageRecord) }));
    const outcome = text(reply[0]);
    if (outcome === 'not_found') throw threadNotFound(text(reply[1]));
    if (outcome === 'taken') throw messageOfAnotherResource(ADAPTER, text(reply[1]));
    if (outcome === 'resource_mismatch') {
      throw threadOfAnotherResource(ADAPTER, text(reply[1]), text(reply[2]));
    }
    return messages.map((m) => structuredClone(m));
  }

  protected async readMessagePage(args: core.NormalizedListMessages): Promise<core.MessageRead> {
    const range = args.dateRange;
    const min = range?.start ? `${range.startExclusive ? '(' : ''}${ms(range.start)}` : '-inf';
    const max = range?.end ? `${range.endExclusive ? '(' : ''}${ms(range.end)}` : '+inf';
    const reply = list(
      await this.call('listMessages', {
        threadId: args.threadId,
        resourceId: args.resourceId,
        direction: args.direction,
        offset: pageOffset(args.page, args.perPage),
        limit: args.perPage === false ? undefined : args.perPage,
        min,
        max,
        windows: args.include.map((w) => ({
          id: w.id,
          before: w.withPreviousMessages,
          after: w.withNextMessages,
        })),
      }),
    );
    // One script answers the page and the windows together, in one list; core merges them.
    const messages = reply.slice(1).flatMap((frame) => toMessage(frame) ?? []);
    return { page: messages, total: Number(text(reply[0])), windows: [] };
  }

  protected async doListMessagesById(ids: string[]): Promise<core.Message[]> {
    const reply = list(await this.call('getMessages', { ids }));
    return sortMessages(reply.flatMap((frame) => toMessage(frame) ?? []));
  }

  protected async doUpdateMessages(patches: core.MessagePatch[]): Promise<core.Message[]> {
    const reply = list(
      await this.call('updateMessages', {
        patches: patches.map((p) => ({
          id: p.id,
          role: p.role,
          content: p.content === undefined ? undefined : JSON.stringify(p.content),
          type: p.type,
          createdAt: p.createdAt ? ms(p.createdAt) : undefined,
        })),
      }),
    );
    // The script answers each updated message once, even when patches repeat an id.
    return sortMessages(reply.flatMap((frame) => toMessage(frame) ?? []));
  }

  protected async doDeleteMessages(ids: string[]): Promise<void> {
    await this.call('deleteMessages', { ids });
  }

  protected async doGetResourceById(resourceId: string): Promise<core.Resource | null> {
    return toResource(await this.call('getResource', { id: resourceId }));
  }

  protected async doUpdateResource(args: core.UpdateResourceArgs): Promise<core.Resource> {
    const wm = args.workingMemory;
    const reply = await this.call('updateResource', {
      id: args.resourceId,
      now: ms(new Date()),
      workingMemory: wm === undefined ? undefined : memoryWrite(wm),
      metadata: metadataFields(args.metadata),
    });
    const resource = toResource(reply);
    if (!resource) throw new TypeError('updateResource returned no resource');
    return resource;
  }

  /**
   * One optimistic compare-and-set on the record's working-memory version (a read, then a write
   * that succeeds only if the version is unchanged). A writer that loses takes a lease on the
   * record instead of retrying (`afterLostRace`): a key with its token and a time to live, which
   * holds off every other write of that working memory until the holder writes (or the lease
   * expires), so its update runs once more and then cannot lose. Core sends a record that lost
   * a race in the last second straight to the lease. Waiting for a lease held by another writer
   * calls no `apply`.
   */
  protected readonly workingMemoryStrategy: core.CompareAndSetWorkingMemory<string | undefined> = {
    kind: 'compareAndSet',
    read: async (cell) => {
      if (cell.scope === 'resource') {
        const [value, version] = list(await this.call('readResourceWorkingMemory', { id: cell.resourceId }));
        return { value: typeof value === 'string' ? value : null, version: versionOf(version) };
      }
      const [exists, value, version] = list(
        await this.call('readThreadWorkingMemory', { id: cell.threadId }),
      );
      if (typeof exists !== 'string') return null;
      return { value: threadMemory(value), version: versionOf(version) };
    },
    write: async (cell, expected, value, version) =>
      (await this.casWrite(cell, expected?.version, value, version, undefined)) === 'ok',
    afterLostRace: { kind: 'locked', update: (cell, apply) => this.leasedUpdate(cell, apply) },
  };

  /**
   * The update under a lease of the record. Waits for a busy lease at most until a dead
   * holder's lease would have expired twice over; gives up after `casAttempts` lost writes under
   * a lease of its own (an expired lease).
   */
  private async leasedUpdate(cell: core.WorkingMemoryCell, apply: core.WorkingMemoryApply): Promise<boolean> {
    const [record, id] =
      cell.scope === 'resource'
        ? (['resource', cell.resourceId] as const)
        : (['thread', cell.threadId] as const);
    const deadline = Date.now() + 2 * LEASE_MS;
    let lost = 0;
    for (let n = 0; ; n++) {
      const token = newVersion();
      const lease =
        record === 'resource'
          ? list(await this.call('leaseResourceWorkingMemory', { id, token, ttlMs: LEASE_MS }))
          : list(await this.call('leaseThreadWorkingMemory', { id, token, ttlMs: LEASE_MS }));
      const outcome = text(lease[0]);
      if (outcome === 'not_found') return false;
      if (outcome === 'busy') {
        if (Date.now() > deadline)
          throw conflict(`another writer held the lease for over ${2 * LEASE_MS} ms`);
      } else {
        const [stored, version] = record === 'resource' ? [lease[1], lease[2]] : [lease[2], lease[3]];
        const written = await (async () => {
          const current =
            record === 'resource' ? (typeof stored === 'string' ? stored : null) : threadMemory(stored);
          return this.casWrite(cell, versionOf(version), apply(current), newVersion(), token);
        })().catch(async (error: unknown) => {
          await this.call('unlockWorkingMemory', { record, id, token }).catch(() => undefined);
          throw error;
        });
        if (written === 'ok') return true;
        if (written === 'not_found') return false;
        if (++lost >= this.casAttempts) throw conflict(`gave up after ${lost} writes under an expired lease`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(20, 1 + n * 2)));
    }
  }

  /**
   * Writes `value` with `version` if the stored version is still `expectedVersion` (absent: none
   * stored yet) and no other writer holds the lease (`token` is this writer's, or absent).
   */
  private async casWrite(
    cell: core.WorkingMemoryCell,
    expectedVersion: string | undefined,
    value: string | null,
    version: string,
    leaseToken: string | undefined,
  ): Promise<string> {
    const reply =
      cell.scope === 'resource'
        ? await this.call('casResourceWorkingMemory', {
            id: cell.resourceId,
            now: ms(new Date()),
            expectedVersion,
            write: memoryWrite(value, version),
            leaseToken,
          })
        : await this.call('casThreadWorkingMemory', {
            id: cell.threadId,
            expectedVersion,
            value: JSON.stringify(value),
            version,
            leaseToken,
          });
    return text(list(reply)[0]);
  }
}

/** A stored version, or `undefined` when none is stored yet. */
function versionOf(version: unknown): string | undefined {
  return typeof version === 'string' ? version : undefined;
}

/** A thread's working memory from its stored JSON text. */
function threadMemory(stored: unknown): string | null {
  const value: unknown = typeof stored === 'string' ? JSON.parse(stored) : null;
  return typeof value === 'string' ? value : null;
}

/** How long a lease on a working memory lives when its holder never writes. */
const LEASE_MS = 2_000;

function conflict(reason: string): MemoryError {
  return new MemoryError('CONFLICT', `${ADAPTER}: working-memory update: ${reason}`, { adapter: ADAPTER });
}

/** A thread as the `createThread` and `saveThread` scripts take it. */
function threadRecord(thread: core.Thread): ThreadRecord {
  return {
    id: thread.id,
    resourceId: thread.resourceId,
    title: thread.title,
    createdAt: ms(thread.createdAt),
    updatedAt: ms(thread.updatedAt),
    version: newVersion(),
    metadata: metadataFields(thread.metadata),
  };
}

/** A resource's new working memory (`null` clears it), with its new version. */
function memoryWrite(value: string | null, version = newVersion()): WorkingMemoryWrite {
  return value === null ? { action: 'clear', version } : { action: 'set', value, version };
}

/** A fresh working-memory version: random, so a recreated record never reuses an old one. */
function newVersion(): string {
  return crypto.randomUUID();
}

/** True when `url` parses and names a user or password before its host. */
function hasUserinfo(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { username, password } = new URL(url);
  return username !== '' || password !== '';
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: ${message}`, { adapter: ADAPTER });
}
