import * as core from '@engram/core/driver';
import type { Redis } from '@upstash/redis';
import { ADAPTER, ERRORS } from './errors.ts';
import {
  backfillKeywords,
  indexedRecord,
  patchTerms,
  type UpstashKeywords,
  upstashKeywords,
} from './keywords.ts';
import { LAYOUT_VERSION, LEASE_MS, META } from './layout.ts';
import * as frames from './mapping.ts';
import { list, metadataFields, ms, records, scoreRange, text } from './mapping.ts';
import { type UpstashObservations, upstashObservations } from './observations.ts';
import { backfillResources, listResources } from './resources.ts';
import {
  type Call,
  type Expectation,
  type Operation,
  SCRIPTS,
  type ScriptName,
  scriptArgument,
} from './scripts.ts';
import { upstashSettings } from './settings.ts';
import { type UpstashTurns, upstashTurns } from './turns.ts';
import { type UpstashVectors, upstashVectors } from './vectors.ts';

/** A unit of work: what its reads saw (checked again when it commits) and its writes, in order. */
export interface UpstashTx {
  readonly expect: Expectation[];
  readonly ops: Operation[];
}

type Stored = core.VersionedValue<string | undefined>;
type Fields = Record<string, string | false>;
type CellWrite = { expected?: Stored | null; value?: string | null; version?: string; token?: string };

/**
 * The driver of `UpstashStore`: every primitive is one Lua script (`scripts.ts`). REST has no
 * interactive transactions, so a `write` is optimistic: its reads record what they saw, its writes
 * are collected, and one `commit` script checks the reads again and applies the writes, or writes
 * nothing and `fn` runs again (core's `retry`). `messages.save` is one script; `.update` too,
 * after a read when a role or content changes.
 */
export class UpstashDriver implements core.Driver<UpstashTx> {
  readonly name = ADAPTER;
  readonly capabilities = core.SERVER_CAPABILITIES;
  readonly errors = ERRORS;
  /** Semantic recall: exact, one bounded Lua scan per query (see `upstashVectors`). */
  readonly vectors: UpstashVectors;
  /** Keyword recall: an inverted index per resource, BM25 in one script (see `upstashKeywords`). */
  readonly keywords: UpstashKeywords;
  /** Observation logs: one hash per log, each swap one script (see `upstashObservations`). */
  readonly observations: UpstashObservations;
  /** Store-level settings: one hash, each call one script (see `upstashSettings`). */
  readonly settings: core.SettingsDriver;
  /** Turn records: a hash per row and a sorted set per thread, each call one script (see `upstashTurns`). */
  readonly turns: UpstashTurns;
  private readonly handles = new Map<ScriptName, ReturnType<Redis['createScript']>>();
  /** `call`, for the domains and helpers that run scripts. */
  private readonly scripts: Call = (name, args) => this.call(name, args);

  constructor(
    private readonly client: Redis,
    private readonly prefix: string,
    vectorScanLimit: number,
    analyzer: core.KeywordAnalyzer,
    private readonly onBackfill: core.BackfillListener,
  ) {
    this.vectors = upstashVectors(this.scripts, vectorScanLimit);
    this.keywords = upstashKeywords(this.scripts, analyzer);
    this.observations = upstashObservations(this.scripts);
    this.settings = upstashSettings(this.scripts);
    this.turns = upstashTurns(this.scripts);
  }

  /** Runs one script (EVALSHA, falling back to EVAL once per server) and unframes its reply. */
  private async call(name: ScriptName, args: object): Promise<frames.Frame> {
    let script = this.handles.get(name);
    if (!script) {
      script = this.client.createScript<string>(SCRIPTS[name]);
      this.handles.set(name, script);
    }
    return frames.unframe(await script.exec([], [scriptArgument(this.prefix, args)]));
  }

  /**
   * Upgrades the layout, then runs the keyword backfill when threads are queued for it (and the
   * keyword index is on) and the resource index backfill when one is pending.
   */
  async open(): Promise<void> {
    const keywordsOff = this.keywords.analyzer.id === core.NO_KEYWORD_INDEX.id;
    const [foundFrame, queuedFrame, resourceCursor] = list(await this.call('init', { keywordsOff }));
    const [found, queued] = [foundFrame, queuedFrame].map((v) => Number(text(v))) as [number, number];
    if (found > LAYOUT_VERSION) {
      throw new core.MemoryError(
        'MIGRATION',
        `${ADAPTER}: keys under ${JSON.stringify(this.prefix)} use layout version ${found}, newer than this package's ${LAYOUT_VERSION}; upgrade @engram/upstash`,
        { adapter: ADAPTER },
      );
    }
    if (queued && !keywordsOff) await backfillKeywords(this.scripts, this.keywords.analyzer, this.onBackfill);
    if (typeof resourceCursor === 'string') {
      await backfillResources(this.client, this.scripts, this.prefix, resourceCursor);
    }
  }

  /** REST is stateless: there is no connection to release. */
  async close(): Promise<void> {}

  write<T>(fn: (tx: UpstashTx) => Promise<T>): Promise<T> {
    const attempt = async (): Promise<T | typeof core.RETRY> => {
      const tx: UpstashTx = { expect: [], ops: [] };
      const result = await fn(tx);
      if (tx.ops.length === 0) return result;
      return text(await this.call('commit', tx)) === 'ok' ? result : core.RETRY;
    };
    return core.retry(attempt, { adapter: ADAPTER, what: 'write' });
  }

  readonly threads: core.ThreadDriver<UpstashTx> = {
    get: async (id) => frames.toThread(await this.call('getThread', { id })),
    insert: async (thread, version) =>
      text(await this.call('createThread', frames.threadRecord(thread, version))) === 'ok',
    upsert: async (thread, version) => {
      await this.call('saveThread', frames.threadRecord(thread, version));
    },
    update: async ({ metadata, ...change }) => {
      const reply = await this.call('updateThread', { ...change, metadata: metadataFields(metadata) });
      return reply === null ? null : frames.toThread(reply);
    },
    touch: async (tx, bumps) => {
      tx.ops.push({ op: 'touch', bumps: [...bumps].map(([id, d]) => ({ id, newest: d?.getTime() })) });
    },
    delete: async (tx, id) => {
      tx.ops.push({ op: 'deleteThread', id });
    },
    readPage: async ({ metadata, page, perPage, dateRange, ...query }) => {
      // Scalar filter values are compared on the server; for objects and arrays it checks that
      // the key is there, and core compares the candidates as JSON.
      const filters = Object.entries(metadata ?? {}).map(([key, value]) => ({
        field: `${META}${key}`,
        op: value === null || typeof value !== 'object' ? 'eq' : 'has',
        value: JSON.stringify(value),
      }));
      const args = { ...query, ...core.pageLimit(page, perPage), ...scoreRange(dateRange), filters };
      const reply = list(await this.call('listThreads', args));
      return text(reply[0]) === 'page'
        ? { kind: 'page', threads: records(reply[2], frames.toThread), total: Number(text(reply[1])) }
        : { kind: 'candidates', threads: records(reply[1], frames.toThread) };
    },
  };

  readonly messages: core.MessageDriver<UpstashTx> = {
    readPage: async ({ page, perPage, dateRange, include, ...query }) => {
      const args = { ...query, ...core.pageLimit(page, perPage), ...scoreRange(dateRange), windows: include };
      const reply = list(await this.call('listMessages', args));
      // One script answers the page and the windows together, in one list; core merges them.
      return { page: records(reply.slice(1), frames.toMessage), total: Number(text(reply[0])), windows: [] };
    },
    byIds: async (ids, tx) => {
      const rows = list(await this.call('getMessages', { ids }));
      return ids.flatMap((id, i) => {
        const row = rows[i] ?? null;
        // Inside a write, the commit checks that every field read is unchanged.
        const seen = row === null ? { id: false as const } : Object.fromEntries(frames.fields(row));
        if (tx) expect(tx, 'message', id, seen);
        return row === null ? [] : (frames.toMessage(row) ?? []);
      });
    },
    places: async (tx, threadIds, messageIds) => {
      const [owners, placed] = list(await this.call('places', { threadIds, messageIds })).map(list);
      const threads = new Map<string, string>();
      const messages = new Map<string, { threadId: string; resourceId: string }>();
      threadIds.forEach((id, i) => {
        const owner = owners?.[i];
        expect(tx, 'thread', id, { resourceId: typeof owner === 'string' && owner });
        if (typeof owner === 'string') threads.set(id, owner);
      });
      messageIds.forEach((id, i) => {
        const [threadId, resourceId] = list(placed?.[i]);
        const found = typeof threadId === 'string' && typeof resourceId === 'string';
        expect(tx, 'message', id, { threadId: found && threadId, resourceId: found && resourceId });
        if (found) messages.set(id, { threadId, resourceId });
      });
      return { threads, messages };
    },
    put: async (tx, messages) => {
      tx.ops.push({ op: 'put', messages: messages.map((m) => indexedRecord(m, this.keywords.analyzer)) });
    },
    remove: async (tx, ids) => {
      tx.ops.push({ op: 'remove', ids });
    },
    save: async (messages) => {
      const records = messages.map((m) => indexedRecord(m, this.keywords.analyzer));
      return text(await this.call('saveMessages', { messages: records })) === 'ok';
    },
    // The new keyword terms need the stored role and content: read first, and the script checks
    // they are unchanged (else it writes nothing and this runs again).
    update: (patches) =>
      core.retry(
        async () => {
          const { terms, expect } = await patchTerms(this.scripts, this.keywords.analyzer, patches);
          const encoded = patches.map(({ content, createdAt, ...patch }) => ({
            ...patch,
            content: content === undefined ? undefined : JSON.stringify(content),
            createdAt: createdAt && ms(createdAt),
            terms: terms.get(patch.id),
          }));
          const reply = await this.call('updateMessages', { patches: encoded, expect });
          return reply === 'retry' ? core.RETRY : records(reply, frames.toMessage);
        },
        { adapter: ADAPTER, what: 'updateMessages' },
      ),
  };

  readonly resources: core.ResourceDriver<UpstashTx> = {
    list: (after, limit) => listResources(this.scripts, after, limit),
    get: async (id) => frames.toResource(await this.call('getResource', { id })),
    delete: async (tx, id) => {
      tx.ops.push({ op: 'deleteResource', id });
    },
    update: async ({ workingMemory, metadata, now, ...change }) => {
      const args = { ...change, value: workingMemory, metadata: metadataFields(metadata), now: ms(now) };
      const resource = frames.toResource(await this.call('updateResource', args));
      if (!resource) throw new TypeError('updateResource returned no resource');
      return resource;
    },
  };

  /**
   * A compare-and-set on the working-memory version; after a lost race, core's `leased` kind: a
   * key holding the writer's token for `LEASE_MS` holds off every other write until it writes.
   */
  readonly workingMemory: core.CompareAndSetWorkingMemory<string | undefined> = {
    kind: 'compareAndSet',
    read: async (cell) => {
      const stored = await this.readCell(cell);
      return typeof stored === 'string' ? null : stored;
    },
    write: async (cell, expected, value, version) =>
      (await this.compareAndSet(cell, { expected, value, version })) === 'ok',
    afterLostRace: {
      kind: 'leased',
      leaseMs: LEASE_MS,
      acquire: (cell, token) => this.readCell(cell, token),
      write: (cell, expected, value, version, token) =>
        this.compareAndSet(cell, { expected, value, version, token }),
      release: async (cell, token) => {
        await this.compareAndSet(cell, { token });
      },
    },
  };

  /** The cell's value and version, after taking its lease when given a token. */
  private async readCell(cell: core.WorkingMemoryCell, token?: string): Promise<'busy' | 'missing' | Stored> {
    const reply = list(await this.call('readWorkingMemory', { ...cell, token, ttlMs: LEASE_MS }));
    const [outcome, , value, version] = reply.map((v) => (typeof v === 'string' ? v : undefined));
    if (outcome !== 'ok') return outcome as 'busy' | 'missing';
    // A thread's working memory is a metadata value: JSON text.
    const parsed: unknown = cell.scope === 'thread' && value !== undefined ? JSON.parse(value) : value;
    return { value: typeof parsed === 'string' ? parsed : null, version };
  }

  /** Writes if the cell is still at `expected` and no other lease holds it; ends `token`'s lease. */
  private async compareAndSet(
    cell: core.WorkingMemoryCell,
    { expected, value, ...write }: CellWrite,
  ): Promise<'ok' | 'lost' | 'missing'> {
    const encoded = cell.scope === 'thread' && value !== undefined ? JSON.stringify(value) : value;
    const args = { ...cell, ...write, expected: expected?.version, value: encoded, now: ms(new Date()) };
    return text(await this.call('casWorkingMemory', args)) as 'ok' | 'lost' | 'missing';
  }
}

/** Records what a read inside a write saw (fields of a record, `false`: absent), for the commit to check. */
function expect(tx: UpstashTx, record: Expectation[0], id: string, seen: Fields): void {
  for (const [field, value] of Object.entries(seen)) tx.expect.push([record, id, field, value]);
}
