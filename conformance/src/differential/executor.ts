import { randomUUID } from 'node:crypto';
import {
  type DateRange,
  InMemoryStore,
  type KeywordSearch,
  Memory,
  type MemoryStorage,
  type Message,
  type ObservationRow,
  type SwapOptions,
  type VectorHit,
  type VectorSearch,
} from '@engram/core';
import {
  compareIds,
  defaultKeywordAnalyzer,
  type KeywordAnalyzer,
  keywordTerms,
  queryTerms,
} from '@engram/core/driver';
import { ConformanceError, difference, isMemoryErrorLike, normalize, show } from '../assert.ts';
import { at } from '../fixtures.ts';
import { SPACE } from '../vectors.ts';
import { KEYWORD_QUERIES, MESSAGES, type Op, RESOURCES, THREADS, VECTOR_POOL } from './ops.ts';

/** Keyword hits asked for: more than there are messages, so every match is returned. */
const KEYWORD_TOP_K = 10;

/** The optional operations a store leaves out (the sequence skips them on both sides). */
export type Missing = ReadonlySet<Op['op']>;

/** Executes symbolic operations against one store. */
export class Executor {
  /**
   * `analyzer`: the keyword analyzer of the store under test; the oracle's executor finds with
   * it the messages a keyword search must return. `readsVectors`: whether the store under test
   * reads vectors back (`vectors.readVectors`), so its exports hold them; the oracle's executor
   * leaves them out of its exports too when it does not.
   */
  constructor(
    readonly store: MemoryStorage,
    readonly prefix: string,
    readonly oracle: InMemoryStore,
    readonly analyzer: KeywordAnalyzer = defaultKeywordAnalyzer,
    readonly readsVectors = true,
  ) {}

  id(symbol: string): string {
    return `${this.prefix}${symbol}`;
  }

  /** The concrete arguments of `op`, identical for the adapter and the oracle. */
  async call(op: Op): Promise<unknown> {
    const s = this.store;
    const id = (symbol: string) => this.id(symbol);
    switch (op.op) {
      case 'saveThread':
        return s.saveThread({
          id: id(op.thread),
          resourceId: id(op.resource),
          title: op.title,
          metadata: op.metadata,
          createdAt: at(op.created),
          updatedAt: at(op.created),
        });
      case 'updateThread':
        return s.updateThread({ id: id(op.thread), title: op.title, metadata: op.metadata });
      case 'deleteThread':
        return s.deleteThread({ threadId: id(op.thread) });
      case 'getThreadById':
        return s.getThreadById({ threadId: id(op.thread), resourceId: op.resource && id(op.resource) });
      case 'listThreads':
        return s.listThreads({
          resourceId: id(op.resource),
          metadata: op.metadata,
          page: op.page,
          perPage: op.perPage,
          direction: op.direction,
          dateRange: dateRange(op.range),
        });
      case 'saveMessages': {
        const messages: Message[] = [];
        for (const m of op.messages) {
          const owner = await this.oracle.getThreadById({ threadId: id(m.thread) });
          messages.push({
            id: id(m.id),
            threadId: id(m.thread),
            resourceId: m.resource === 'own' ? (owner?.resourceId ?? id('r1')) : id(m.resource),
            role: m.role,
            content: m.content,
            type: 'text',
            createdAt: at(m.created),
          });
        }
        return s.saveMessages(messages);
      }
      case 'listMessages':
        return s.listMessages({
          threadId: id(op.thread),
          resourceId: op.resource && id(op.resource),
          page: op.page,
          perPage: op.perPage,
          direction: op.direction,
          dateRange: dateRange(op.range),
          include: op.include?.map((w) => ({ ...w, id: id(w.id) })),
        });
      case 'listMessagesById':
        return s.listMessagesById({ ids: op.ids.map(id) });
      case 'updateMessages':
        return s.updateMessages(
          op.patches.map((p) => ({
            id: id(p.id),
            role: p.role,
            type: p.type,
            content: p.content,
            createdAt: p.created === undefined ? undefined : at(p.created),
          })),
        );
      case 'deleteMessages':
        return s.deleteMessages(op.ids.map(id));
      case 'getResourceById':
        return s.getResourceById({ resourceId: id(op.resource) });
      case 'updateResource':
        return s.updateResource({
          resourceId: id(op.resource),
          workingMemory: op.workingMemory,
          metadata: op.metadata,
        });
      case 'atomic':
        return s.updateWorkingMemoryAtomically?.({
          scope: op.scope,
          resourceId: op.scope === 'resource' ? id(op.resource) : undefined,
          threadId: op.scope === 'thread' ? id(op.thread) : undefined,
          update: (current) => `${current ?? ''}${op.append}`,
        });
      case 'deleteResource':
        return s.deleteResource?.({ resourceId: id(op.resource) });
      case 'listResourceIds':
        return this.ownResourceIds(op.after === undefined ? this.prefix : id(op.after), op.limit);
      case 'turnPut': {
        const owner = await this.oracle.getThreadById({ threadId: id(op.thread) });
        return s.turns?.put({
          id: id(op.id),
          threadId: id(op.thread),
          resourceId: op.resource === 'own' ? (owner?.resourceId ?? id('r1')) : id(op.resource),
          createdAt: at(op.created),
          body: op.body,
        });
      }
      case 'keywordSearch':
        return this.keywordHits({
          query: op.query,
          topK: KEYWORD_TOP_K,
          resourceId: id(op.resource),
          threadId: op.thread && id(op.thread),
          excludeIds: op.exclude.map(id),
        });
      case 'vectorUpsert':
        return s.vectors?.upsertVectors(
          SPACE,
          op.vectors.map((v) => ({
            messageId: id(v.id),
            hash: `h${v.vector}`,
            vector: poolVector(v.vector),
          })),
        );
      case 'vectorDelete':
        return s.vectors?.deleteVectors(SPACE, op.ids.map(id));
      case 'vectorSearch':
        return s.vectors?.searchVectors(this.vectorSearch(op)).then(vectorHits);
      case 'vectorWindows': {
        const found = await s.vectors?.searchWithWindows?.({
          ...this.vectorSearch(op),
          before: op.before,
          after: op.after,
        });
        return found && { hits: vectorHits(found.hits), windows: found.windows };
      }
      case 'vectorHistory': {
        const found = await s.vectors?.searchWithWindows?.({
          ...this.vectorSearch(op),
          before: op.before,
          after: op.after,
          history: { threadId: this.id(op.history), last: op.last },
        });
        return found && { hits: vectorHits(found.hits), windows: found.windows, history: found.history };
      }
      case 'observationSwap':
        return s.observations?.swap(...(await this.swapArgs(op)));
      case 'observationRead':
        return s.observations?.generations(this.logKey(op));
      case 'reimport':
        return this.reimport(id(op.resource), op.conflict);
      case 'turnGet':
        return s.turns?.get(id(op.id));
      case 'turnList':
        return s.turns?.list(
          id(op.thread),
          op.limit,
          op.before && { createdAt: at(op.before.created), id: id(op.before.id) },
        );
    }
  }

  /**
   * The resource's export written back as a dump file would be (JSON text): after erasing the
   * resource (`erase`, so every record is written again, into emptied indexes), or over it with
   * `skip` or `replace` (nothing may change). Returns the import's counts.
   */
  private async reimport(resourceId: string, conflict: 'erase' | 'skip' | 'replace'): Promise<unknown> {
    const memory = new Memory({ storage: this.store });
    const dump: unknown[] = [];
    for await (const record of memory.exportResource({ resourceId })) {
      if (record.kind !== 'vector' || this.readsVectors) dump.push(JSON.parse(JSON.stringify(record)));
    }
    if (conflict === 'erase') await memory.deleteResource({ resourceId });
    return memory.importRecords(dump, { onConflict: conflict === 'erase' ? 'fail' : conflict });
  }

  private logKey(op: { scope: 'thread' | 'resource'; thread: string; resource: string }): string {
    return op.scope === 'thread' ? `thread:${this.id(op.thread)}` : `resource:${this.id(op.resource)}`;
  }

  /**
   * A swap's arguments from the log's newest row in the oracle as it stands before the operation
   * (the adapter runs each operation first, so both sides read the same row): that row's version
   * (`head`), none (`none`) or one version behind (`old`, a lost race); the next row replaces it
   * or starts the next generation, in the thread's owner's name for a thread log.
   */
  private async swapArgs(
    op: Extract<Op, { op: 'observationSwap' }>,
  ): Promise<[{ generation: number; version: number } | null, ObservationRow, SwapOptions]> {
    const key = this.logKey(op);
    const head = await this.oracle.observations?.head(key);
    const expected =
      op.expect === 'none' || (op.expect === 'head' && !head)
        ? null
        : {
            generation: head?.generation ?? 1,
            version: op.expect === 'old' ? Math.max(1, (head?.version ?? 1) - 1) : (head?.version ?? 1),
          };
    const owner = (await this.oracle.getThreadById({ threadId: this.id(op.thread) }))?.resourceId;
    const next: ObservationRow = {
      key,
      resourceId: op.scope === 'thread' ? (owner ?? this.id('r1')) : this.id(op.resource),
      threadId: op.scope === 'thread' ? this.id(op.thread) : null,
      generation: expected ? expected.generation + (op.next === 'new' ? 1 : 0) : 1,
      version: expected ? expected.version + 1 : 1,
      body: op.body,
      updatedAt: at(op.at),
    };
    return [expected, next, op.named ? { thread: this.id(op.thread) } : {}];
  }

  private vectorSearch(
    op: Extract<Op, { op: 'vectorSearch' | 'vectorWindows' | 'vectorHistory' }>,
  ): VectorSearch {
    return {
      space: SPACE,
      vector: poolVector(op.vector),
      topK: op.topK,
      resourceId: this.id(op.resource),
      threadId: op.thread && this.id(op.thread),
      excludeIds: op.exclude.map((m) => this.id(m)),
    };
  }

  /**
   * The messages a keyword search found, by id with their threads: which messages match, not
   * their order (backends rank with their own statistics). The oracle's executor lists the
   * messages in scope holding a query term, as the store's analyzer makes the terms; a store's
   * hit with a score that is not positive and finite is reported as such.
   */
  private async keywordHits(search: KeywordSearch): Promise<unknown> {
    let hits: { messageId: string; threadId: string; score: number }[];
    if (this.store === this.oracle) {
      const terms = queryTerms(search.query, this.analyzer);
      const stored = await this.oracle.listMessagesById({ ids: MESSAGES.map((m) => this.id(m)) });
      hits = stored
        .filter(
          (m) =>
            m.resourceId === search.resourceId &&
            (search.threadId === undefined || m.threadId === search.threadId) &&
            !search.excludeIds?.includes(m.id) &&
            keywordTerms(m, this.analyzer).some((t) => terms.includes(t)),
        )
        .map((m) => ({ messageId: m.id, threadId: m.threadId, score: 1 }));
    } else {
      hits = (await this.store.keywords?.search(search)) ?? [];
    }
    return hits
      .map((h) => ({
        id: h.messageId,
        thread: h.threadId,
        ...(h.score > 0 && Number.isFinite(h.score) ? {} : { badScore: h.score }),
      }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * A page of `listResourceIds` kept to this run's ids: the store may hold other runs' resources,
   * which sort after all of this run's (they do not share its prefix), so the filter drops only
   * ids past the last of this run's.
   */
  private async ownResourceIds(after: string, limit: number): Promise<string[] | undefined> {
    const ids = await this.store.listResourceIds?.({ after, limit });
    return ids?.filter((id) => id.startsWith(this.prefix));
  }

  /** The outcome of `op` in comparable form: store-chosen timestamps blanked, prefix removed, errors by code. */
  async outcome(op: Op): Promise<unknown> {
    try {
      return this.comparable(await this.call(op));
    } catch (error) {
      return { error: isMemoryErrorLike(error) ? error.code : `not a MemoryError: ${String(error)}` };
    }
  }

  /**
   * This run's resource ids walked one page of one id at a time, each page after the last id seen
   * (at most one step more than there can be resources, so a walk that repeats ids ends too).
   */
  private async resourceWalk(): Promise<string[]> {
    const walked: string[] = [];
    for (let step = 0; step <= RESOURCES.length; step++) {
      const [next] = (await this.ownResourceIds(walked.at(-1) ?? this.prefix, 1)) ?? [];
      if (next === undefined) break;
      walked.push(next);
    }
    return walked;
  }

  /** Everything stored under this run's ids, for a final comparison (without what is `missing`). */
  async snapshot(missing: Missing): Promise<unknown> {
    const out: Record<string, unknown> = {};
    for (const r of RESOURCES) {
      out[`resource ${r}`] = await this.store.getResourceById({ resourceId: this.id(r) });
      out[`threads of ${r}`] = await this.store.listThreads({ resourceId: this.id(r), perPage: false });
    }
    for (const t of THREADS) {
      out[`messages of ${t}`] = await this.store.listMessages({ threadId: this.id(t), perPage: false });
    }
    out.messages = await this.store.listMessagesById({ ids: MESSAGES.map((m) => this.id(m)) });
    if (!missing.has('listResourceIds')) out.resourceIds = await this.resourceWalk();
    if (!missing.has('turnList')) {
      for (const t of THREADS) out[`turns of ${t}`] = await this.store.turns?.list(this.id(t), 1_000);
    }
    if (!missing.has('keywordSearch')) {
      // Every word any message can hold: the index matches the messages as they are now.
      const query = KEYWORD_QUERIES.join(' ');
      for (const r of RESOURCES) {
        out[`keyword hits of ${r}`] = await this.keywordHits({
          query,
          topK: KEYWORD_TOP_K,
          resourceId: this.id(r),
        });
      }
    }
    if (!missing.has('observationRead')) {
      for (const t of THREADS) {
        out[`observations of thread ${t}`] = await this.store.observations?.generations(
          `thread:${this.id(t)}`,
        );
      }
      for (const r of RESOURCES) {
        out[`observations of resource ${r}`] = await this.store.observations?.generations(
          `resource:${this.id(r)}`,
        );
      }
    }
    if (!missing.has('vectorSearch')) {
      const ids = MESSAGES.map((m) => this.id(m));
      const stored = (await this.store.vectors?.getVectors(SPACE, ids)) ?? [];
      out.vectors = stored.sort((a, b) => compareIds(a.messageId, b.messageId));
      for (const r of RESOURCES) {
        const search = { space: SPACE, vector: poolVector(1), topK: MESSAGES.length, resourceId: this.id(r) };
        out[`vector hits of ${r}`] = vectorHits((await this.store.vectors?.searchVectors(search)) ?? []);
      }
    }
    return this.comparable(out);
  }

  comparable(value: unknown): unknown {
    const walk = (v: unknown, key?: string): unknown => {
      if (v instanceof Date) {
        // Timestamps the store picks itself cannot match between two stores; callers' can.
        return key === 'updatedAt' || (key === 'createdAt' && this.resourceLike) ? '<store time>' : v;
      }
      if (typeof v === 'string') return v.startsWith(this.prefix) ? `~${v.slice(this.prefix.length)}` : v;
      if (Array.isArray(v)) return v.map((item) => walk(item));
      if (v !== null && typeof v === 'object') {
        const previous = this.resourceLike;
        this.resourceLike = 'workingMemory' in v && !('resourceId' in v);
        const out: Record<string, unknown> = {};
        for (const [k, item] of Object.entries(v)) out[k] = walk(item, k);
        this.resourceLike = previous;
        return out;
      }
      return v;
    };
    return normalize(walk(value));
  }

  private resourceLike = false;
}

/** Vector number `n` of the pool, zero-padded to the suite's space. */
/** The date range of a listing op, in dates. */
function dateRange(range: Extract<Op, { op: 'listThreads' }>['range']): DateRange | undefined {
  return (
    range && {
      start: range.start === undefined ? undefined : at(range.start),
      end: range.end === undefined ? undefined : at(range.end),
      startExclusive: range.startExclusive,
      endExclusive: range.endExclusive,
    }
  );
}

function poolVector(n: number): Float32Array {
  const vector = new Float32Array(SPACE.dimensions);
  vector.set(VECTOR_POOL[n] ?? []);
  return vector;
}

/**
 * Hits in comparable form. The pool's scores are exact multiples of ¼ on every backend; rounding
 * to 6 places only absorbs a backend's `1 − distance` round trip.
 */
function vectorHits(hits: VectorHit[]): unknown[] {
  return hits.map((h) => ({ ...h, score: Math.round(h.score * 1e6) / 1e6 }));
}

/** A readable listing of a sequence of operations. */
function listing(ops: readonly Op[], upTo = ops.length): string {
  return ops
    .slice(0, upTo)
    .map((op, i) => {
      const { op: name, ...args } = op;
      return `  ${String(i + 1).padStart(2)}. ${name}(${JSON.stringify(args)})`;
    })
    .join('\n');
}

/**
 * Runs `ops` against the adapter and a fresh oracle, failing at the first differing result.
 * Returns the operations run on the adapter (those in `missing` are left out).
 */
export async function compare(store: MemoryStorage, ops: Op[], missing: Missing): Promise<Op[]> {
  const prefix = `d${randomUUID().slice(0, 8)}-`;
  const oracle = new InMemoryStore();
  const reference = new Executor(
    oracle,
    prefix,
    oracle,
    store.keywords?.analyzer,
    store.vectors?.readVectors !== undefined,
  );
  const subject = new Executor(store, prefix, oracle);
  if (!missing.has('vectorSearch')) {
    for (const s of [store, oracle]) {
      const space = await s.vectors?.claimSpace(SPACE);
      if (space?.id !== SPACE.id || space.dimensions !== SPACE.dimensions) {
        throw new ConformanceError(
          `differential: ${s.name} records the embedding space ${JSON.stringify(space)}; the suite uses ${JSON.stringify(SPACE)} (one space per database)`,
        );
      }
    }
  }
  const ran: Op[] = [];
  for (const [i, op] of ops.entries()) {
    if (missing.has(op.op)) continue;
    ran.push(op);
    const actual = await subject.outcome(op);
    const expected = await reference.outcome(op);
    if (!jsonSame(actual, expected)) {
      throw new ConformanceError(
        `differential: step ${i + 1} differs from the in-memory reference store\n${listing(ops, i + 1)}\n` +
          `  first difference ${difference(actual, expected)} (expected: the reference; actual: the adapter)\n` +
          `  reference: ${show(expected, 2_000)}\n  adapter:   ${show(actual, 2_000)}\n` +
          '  (ids shown as ~suffix; store-chosen timestamps as <store time>)',
      );
    }
  }
  const actual = await subject.snapshot(missing);
  const expected = await reference.snapshot(missing);
  if (!jsonSame(actual, expected)) {
    throw new ConformanceError(
      `differential: the stored state differs after\n${listing(ops)}\n` +
        `  first difference ${difference(actual, expected)} (expected: the reference; actual: the adapter)\n` +
        `  reference: ${show(expected, 3_000)}\n  adapter:   ${show(actual, 3_000)}`,
    );
  }
  return ran;
}

function jsonSame(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}
