import { randomUUID } from 'node:crypto';
import {
  InMemoryStore,
  type JsonObject,
  type JsonValue,
  type MemoryStorage,
  type Message,
} from '@engram/core';
import fc from 'fast-check';
import { ConformanceError, isMemoryErrorLike, normalize, show } from '../assert.ts';
import { defineArea } from '../define.ts';
import { at } from '../fixtures.ts';
import { assertProperty } from '../property.ts';

const check = defineArea('differential');

/** Property runs per check, and the longest operation sequence. Modest: adapters run this on real databases. */
export const DIFFERENTIAL_RUNS = 25;
export const MAX_OPS = 20;

// Small pools so operations collide: prefixes of each other, case and UTF-8 byte order.
const RESOURCES = ['r1', 'r10'] as const;
const THREADS = ['ta', 'tB', 'té'] as const;
const MESSAGES = ['ma', 'mB', 'm_', 'mé', 'mab'] as const;
const TIMES = [0, 0, 1, 1_000, 2_000] as const;

type R = (typeof RESOURCES)[number];
type T = (typeof THREADS)[number];
type M = (typeof MESSAGES)[number];

/** One contract call with symbolic ids (resolved against a per-run prefix when executed). */
type Op =
  | { op: 'saveThread'; thread: T; resource: R; title: string; metadata: JsonObject; created: number }
  | { op: 'updateThread'; thread: T; title?: string; metadata?: JsonObject }
  | { op: 'deleteThread'; thread: T }
  | { op: 'getThreadById'; thread: T; resource?: R }
  | {
      op: 'listThreads';
      resource: R;
      metadata?: JsonObject;
      page: number;
      perPage: number | false;
      direction: 'ASC' | 'DESC';
    }
  | {
      op: 'saveMessages';
      messages: { id: M; thread: T; resource: R | 'own'; created: number; content: JsonValue }[];
    }
  | {
      op: 'listMessages';
      thread: T;
      resource?: R;
      page: number;
      perPage: number | false;
      direction: 'ASC' | 'DESC';
      range?: { start?: number; end?: number; startExclusive?: boolean; endExclusive?: boolean };
      include?: { id: M; withPreviousMessages: number; withNextMessages: number }[];
    }
  | { op: 'listMessagesById'; ids: M[] }
  | { op: 'updateMessages'; patches: { id: M; content?: JsonValue; created?: number }[] }
  | { op: 'deleteMessages'; ids: M[] }
  | { op: 'getResourceById'; resource: R }
  | { op: 'updateResource'; resource: R; workingMemory?: string | null; metadata?: JsonObject }
  | { op: 'atomic'; scope: 'resource' | 'thread'; resource: R; thread: T; append: string };

const resource = fc.constantFrom(...RESOURCES);
const threadId = fc.constantFrom(...THREADS);
const messageId = fc.constantFrom(...MESSAGES);
const time = fc.constantFrom(...TIMES);
const text = fc.constantFrom('', 'a', 'é', '😀', 'x y');
const smallJson: fc.Arbitrary<JsonValue> = fc.oneof(
  text,
  fc.integer({ min: -3, max: 3 }),
  fc.constant(null),
  fc.boolean(),
  fc.constant<JsonValue>({ format: 2, parts: [{ type: 'text', text: 'hi' }] }),
  fc.constant<JsonValue>([1, 'two', { three: 3 }]),
);
const metadata: fc.Arbitrary<JsonObject> = fc
  .dictionary(fc.constantFrom('a', 'b', 'workingMemory'), smallJson, {
    maxKeys: 2,
  })
  .map((m) =>
    typeof m.workingMemory === 'string' || !('workingMemory' in m) ? m : { ...m, workingMemory: 'wm' },
  );
const perPage = fc.oneof(fc.constant<false>(false), fc.integer({ min: 0, max: 3 }));
const direction = fc.constantFrom<'ASC' | 'DESC'>('ASC', 'DESC');
const page = fc.integer({ min: 0, max: 2 });

const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('saveThread' as const),
      thread: threadId,
      resource,
      title: text,
      metadata,
      created: time,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      { op: fc.constant('updateThread' as const), thread: threadId, title: text, metadata },
      { requiredKeys: ['op', 'thread'] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteThread' as const), thread: threadId }) },
  {
    weight: 1,
    arbitrary: fc.record(
      { op: fc.constant('getThreadById' as const), thread: threadId, resource },
      { requiredKeys: ['op', 'thread'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      { op: fc.constant('listThreads' as const), resource, metadata, page, perPage, direction },
      { requiredKeys: ['op', 'resource', 'page', 'perPage', 'direction'] },
    ),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('saveMessages' as const),
      messages: fc.uniqueArray(
        fc.record({
          id: messageId,
          thread: threadId,
          resource: fc.oneof(
            { weight: 4, arbitrary: fc.constant('own' as const) },
            { weight: 1, arbitrary: resource },
          ),
          created: time,
          content: smallJson,
        }),
        { minLength: 1, maxLength: 3, selector: (m) => m.id },
      ),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        op: fc.constant('listMessages' as const),
        thread: threadId,
        resource,
        page,
        perPage,
        direction,
        range: fc.record(
          { start: time, end: time, startExclusive: fc.boolean(), endExclusive: fc.boolean() },
          { requiredKeys: [] },
        ),
        include: fc.array(
          fc.record({
            id: messageId,
            withPreviousMessages: fc.integer({ min: 0, max: 2 }),
            withNextMessages: fc.integer({ min: 0, max: 2 }),
          }),
          { maxLength: 2 },
        ),
      },
      { requiredKeys: ['op', 'thread', 'page', 'perPage', 'direction'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('listMessagesById' as const),
      ids: fc.array(messageId, { minLength: 1, maxLength: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('updateMessages' as const),
      patches: fc.uniqueArray(
        fc.record({ id: messageId, content: smallJson, created: time }, { requiredKeys: ['id'] }),
        {
          minLength: 1,
          maxLength: 2,
          selector: (p) => p.id,
        },
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('deleteMessages' as const),
      ids: fc.array(messageId, { minLength: 1, maxLength: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('getResourceById' as const), resource }) },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        op: fc.constant('updateResource' as const),
        resource,
        workingMemory: fc.oneof(text, fc.constant(null)),
        metadata,
      },
      { requiredKeys: ['op', 'resource'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('atomic' as const),
      scope: fc.constantFrom<'resource' | 'thread'>('resource', 'thread'),
      resource,
      thread: threadId,
      append: text,
    }),
  },
);

/** Executes symbolic operations against one store. */
class Executor {
  constructor(
    readonly store: MemoryStorage,
    readonly prefix: string,
    readonly oracle: InMemoryStore,
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
        });
      case 'saveMessages': {
        const messages: Message[] = [];
        for (const m of op.messages) {
          const owner = await this.oracle.getThreadById({ threadId: id(m.thread) });
          messages.push({
            id: id(m.id),
            threadId: id(m.thread),
            resourceId: m.resource === 'own' ? (owner?.resourceId ?? id('r1')) : id(m.resource),
            role: 'user',
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
          dateRange: op.range && {
            start: op.range.start === undefined ? undefined : at(op.range.start),
            end: op.range.end === undefined ? undefined : at(op.range.end),
            startExclusive: op.range.startExclusive,
            endExclusive: op.range.endExclusive,
          },
          include: op.include?.map((w) => ({ ...w, id: id(w.id) })),
        });
      case 'listMessagesById':
        return s.listMessagesById({ ids: op.ids.map(id) });
      case 'updateMessages':
        return s.updateMessages(
          op.patches.map((p) => ({
            id: id(p.id),
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
    }
  }

  /** The outcome of `op` in comparable form: store-chosen timestamps blanked, prefix removed, errors by code. */
  async outcome(op: Op): Promise<unknown> {
    try {
      return this.comparable(await this.call(op));
    } catch (error) {
      return { error: isMemoryErrorLike(error) ? error.code : `not a MemoryError: ${String(error)}` };
    }
  }

  /** Everything stored under this run's ids, for a final comparison. */
  async snapshot(): Promise<unknown> {
    const out: Record<string, unknown> = {};
    for (const r of RESOURCES) {
      out[`resource ${r}`] = await this.store.getResourceById({ resourceId: this.id(r) });
      out[`threads of ${r}`] = await this.store.listThreads({ resourceId: this.id(r), perPage: false });
    }
    for (const t of THREADS) {
      out[`messages of ${t}`] = await this.store.listMessages({ threadId: this.id(t), perPage: false });
    }
    out.messages = await this.store.listMessagesById({ ids: MESSAGES.map((m) => this.id(m)) });
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

/** A readable listing of a sequence of operations. */
function listing(ops: readonly Op[], upTo = ops.length): string {
  return ops
    .slice(0, upTo)
    .map((op, i) => {
      const { op: name, ...args } = op;
      return `  ${String(i + 1).padStart(2)}. ${name}(${show(args, 300)})`;
    })
    .join('\n');
}

/** Runs `ops` against the adapter and a fresh oracle, failing at the first differing result. */
async function compare(store: MemoryStorage, ops: Op[], atomic: boolean): Promise<void> {
  const prefix = `d${randomUUID().slice(0, 8)}-`;
  const oracle = new InMemoryStore();
  const reference = new Executor(oracle, prefix, oracle);
  const subject = new Executor(store, prefix, oracle);
  for (const [i, op] of ops.entries()) {
    if (op.op === 'atomic' && !atomic) continue;
    const actual = await subject.outcome(op);
    const expected = await reference.outcome(op);
    if (!jsonSame(actual, expected)) {
      throw new ConformanceError(
        `differential: step ${i + 1} differs from the in-memory reference store\n${listing(ops, i + 1)}\n` +
          `  reference: ${show(expected, 2_000)}\n  adapter:   ${show(actual, 2_000)}\n` +
          '  (ids shown as ~suffix; store-chosen timestamps as <store time>)',
      );
    }
  }
  const actual = await subject.snapshot();
  const expected = await reference.snapshot();
  if (!jsonSame(actual, expected)) {
    throw new ConformanceError(
      `differential: the stored state differs after\n${listing(ops)}\n  reference: ${show(expected, 3_000)}\n  adapter:   ${show(actual, 3_000)}`,
    );
  }
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

/** Random operation sequences give the same results as the in-memory reference store. */
export const differentialChecks = [
  check(
    `random operation sequences match the in-memory reference (${DIFFERENTIAL_RUNS} runs × ≤${MAX_OPS} ops)`,
    async (ctx) => {
      const store = await ctx.store();
      const atomic =
        store.supportsAtomicWorkingMemoryMerge && typeof store.updateWorkingMemoryAtomically === 'function';
      await assertProperty(
        fc.asyncProperty(fc.array(opArbitrary, { minLength: 1, maxLength: MAX_OPS }), (ops) =>
          compare(store, ops, atomic),
        ),
        DIFFERENTIAL_RUNS,
      );
    },
  ),
];
