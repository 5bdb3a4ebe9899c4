import type { JsonObject, JsonValue, MessageRole } from '@engram/core';
import fc from 'fast-check';

// Small pools so operations collide: prefixes of each other, case and UTF-8 byte order.
export const RESOURCES = ['r1', 'r10'] as const;
export const THREADS = ['ta', 'tB', 'té'] as const;
export const MESSAGES = ['ma', 'mB', 'm_', 'mé', 'mab'] as const;
const TIMES = [0, 0, 1, 1_000, 2_000] as const;

type R = (typeof RESOURCES)[number];
type T = (typeof THREADS)[number];
type M = (typeof MESSAGES)[number];
/** A listing's date range, in the times of `at`. */
type Range = { start?: number; end?: number; startExclusive?: boolean; endExclusive?: boolean };

/** One contract call with symbolic ids (resolved against a per-run prefix when executed). */
export type Op =
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
      range?: Range;
    }
  | {
      op: 'saveMessages';
      messages: {
        id: M;
        thread: T;
        resource: R | 'own';
        role: MessageRole;
        created: number;
        content: JsonValue;
      }[];
    }
  | {
      op: 'listMessages';
      thread: T;
      resource?: R;
      page: number;
      perPage: number | false;
      direction: 'ASC' | 'DESC';
      range?: Range;
      include?: { id: M; withPreviousMessages: number; withNextMessages: number }[];
    }
  | { op: 'listMessagesById'; ids: M[] }
  | {
      op: 'updateMessages';
      patches: { id: M; role?: MessageRole; type?: string; content?: JsonValue; created?: number }[];
    }
  | { op: 'deleteMessages'; ids: M[] }
  | { op: 'getResourceById'; resource: R }
  | { op: 'updateResource'; resource: R; workingMemory?: string | null; metadata?: JsonObject }
  | { op: 'atomic'; scope: 'resource' | 'thread'; resource: R; thread: T; append: string }
  | { op: 'deleteResource'; resource: R }
  | { op: 'listResourceIds'; after?: R; limit: number }
  | { op: 'turnPut'; id: M; thread: T; resource: R | 'own'; created: number; body: string }
  | { op: 'turnGet'; id: M }
  | { op: 'turnList'; thread: T; limit: number; before?: { created: number; id: M } }
  | { op: 'keywordSearch'; resource: R; thread?: T; query: string; exclude: M[] }
  | { op: 'vectorUpsert'; vectors: { id: M; vector: number }[] }
  | { op: 'vectorDelete'; ids: M[] }
  | { op: 'vectorSearch'; resource: R; thread?: T; vector: number; topK: number; exclude: M[] }
  | {
      op: 'observationSwap';
      scope: 'thread' | 'resource';
      thread: T;
      resource: R;
      /** Whether the swap names `thread` as the one it is written for (`{ thread }`). */
      named?: boolean;
      expect: 'head' | 'none' | 'old';
      next: 'same' | 'new';
      body: string;
      at: number;
    }
  | { op: 'observationRead'; scope: 'thread' | 'resource'; thread: T; resource: R }
  | ({ op: 'vectorWindows' } & WindowedSearchOp)
  /** `searchWithWindows` with `history` (stores with `historyInSearch`). */
  | ({ op: 'vectorHistory'; history: T; last: number } & WindowedSearchOp)
  | { op: 'reimport'; resource: R; conflict: 'erase' | 'skip' | 'replace' };

/** The fields of a `searchWithWindows` op. */
type WindowedSearchOp = {
  resource: R;
  thread?: T;
  vector: number;
  topK: number;
  exclude: M[];
  before: number;
  after: number;
};

/** Operations on optional contract methods, left out for a store without them. */
export const OPTIONAL_OPS = {
  atomic: 'updateWorkingMemoryAtomically',
  deleteResource: 'deleteResource',
  listResourceIds: 'listResourceIds',
  reimport: 'deleteResource',
} as const satisfies Partial<Record<Op['op'], string>>;

/** Operations on the optional `vectors` domain, left out for a store without it. */
export const VECTOR_OPS = [
  'vectorUpsert',
  'vectorDelete',
  'vectorSearch',
  'vectorWindows',
  'vectorHistory',
] as const satisfies readonly Op['op'][];

/**
 * The vectors stored and searched with (as indexes into this pool): unit vectors whose
 * components are 0, ±½ and ±1, so every score is a multiple of ¼ computed exactly in float32 and
 * double alike — ties are real ties on every backend and the order rests on the tie rule. Two
 * entries are equal, one is the opposite of another (score −1), several are orthogonal (score 0).
 */
export const VECTOR_POOL: readonly (readonly number[])[] = [
  [1, 0, 0, 0],
  [0.5, 0.5, 0.5, 0.5],
  [0.5, 0.5, 0.5, 0.5],
  [0, 1, 0, 0],
  [-1, 0, 0, 0],
  [0.5, -0.5, 0.5, -0.5],
];

/** Operations on the optional `observations` domain, left out for a store without it. */
export const OBSERVATION_OPS = ['observationSwap', 'observationRead'] as const satisfies readonly Op['op'][];

/** Operations on the optional `turns` domain, left out for a store without it. */
export const TURN_OPS = ['turnPut', 'turnGet', 'turnList'] as const satisfies readonly Op['op'][];

/**
 * Message texts sharing words in other cases, accents, inflections and punctuation (and query
 * syntax of the backends), and the queries searched with: every query is plain words.
 */
const WORDS = ['cello lessons', 'CELLO!', 'lesson x', 'x-y: (z) NEAR', 'Zoë, zoe'] as const;
export const KEYWORD_QUERIES = ['cello', 'lessons', 'x', 'z NEAR', 'zoe', 'é', 'hi', '"cello" OR -x', 'a'];

const resource = fc.constantFrom(...RESOURCES);
const threadId = fc.constantFrom(...THREADS);
const messageId = fc.constantFrom(...MESSAGES);
const time = fc.constantFrom(...TIMES);
/** A date range of a listing, or none (twice as often). */
const range = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.record(
      { start: time, end: time, startExclusive: fc.boolean(), endExclusive: fc.boolean() },
      { requiredKeys: [] },
    ),
  },
);
const text = fc.constantFrom('', 'a', 'é', '😀', 'x y');
const poolVector = fc.integer({ min: 0, max: VECTOR_POOL.length - 1 });
/** The fields of a vector search op, and those a windowed search adds. */
const search = {
  resource,
  thread: threadId,
  vector: poolVector,
  topK: fc.integer({ min: 1, max: 6 }),
  exclude: fc.uniqueArray(messageId, { maxLength: 2 }),
};
const windows = { before: fc.integer({ min: 0, max: 2 }), after: fc.integer({ min: 0, max: 2 }) };
const logScope = fc.constantFrom<'thread' | 'resource'>('thread', 'resource');

/** Keys of the nested objects below; the generator never uses them anywhere else. */
export const NESTED_KEYS = ['tone', 'style'] as const;
/**
 * Nested objects from two keys and one value, so a later write often replaces one with another
 * holding the same values under other keys (`{ tone: 'formal' }` → `{ style: 'formal' }`, also
 * inside an array and two levels deep): a server comparing sub-documents by their values alone
 * takes that for a no-op and drops the write.
 */
const keyedJson: fc.Arbitrary<JsonValue> = fc
  .record({ shape: fc.constantFrom('flat', 'deep', 'array'), k: fc.constantFrom(...NESTED_KEYS) })
  .map(({ shape, k }): JsonValue => {
    if (shape === 'flat') return { [k]: 'formal' };
    if (shape === 'deep') return { prefs: { [k]: 'formal' } };
    return [{ [k]: 'formal' }];
  });

/**
 * Odd but valid JSON: the last code point and markup in strings, keys a query language or an
 * object model reads specially (`$where`, `a.b`, `__proto__`, `constructor`), the largest and
 * smallest doubles, deep nesting. Not a NUL: a store may refuse it (PostgreSQL's text and jsonb cannot
 * hold one), which the messages area checks on its own.
 */
const ODD_JSON: JsonValue[] = [
  'last code point \u{10FFFF}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template placeholder stored as text
  '<script>alert(1)</script> **b** `c` {{m}} ${x} </observations> <?xml?> &amp;',
  { $where: 'x', 'a.b': { $gt: 1 }, constructor: 'c' },
  JSON.parse('{"__proto__": {"polluted": true}, "k": "v"}') as JsonValue,
  [Number.MAX_VALUE, -Number.MIN_VALUE, 2 ** 53, 0.1 + 0.2, 1e-7],
  JSON.parse(`${'['.repeat(40)}"deep"${']'.repeat(40)}`) as JsonValue,
];

const smallJson: fc.Arbitrary<JsonValue> = fc.oneof(
  text,
  fc.integer({ min: -3, max: 3 }),
  fc.constant(null),
  fc.boolean(),
  fc.constant<JsonValue>({ format: 2, parts: [{ type: 'text', text: 'hi' }] }),
  fc.constant<JsonValue>([1, 'two', { three: 3 }]),
  fc.constantFrom<JsonValue>(...ODD_JSON),
  { weight: 6, arbitrary: keyedJson },
);

/** Message content: JSON of every shape, or text the keyword index holds. */
const content: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 2, arbitrary: smallJson },
  { weight: 1, arbitrary: fc.constantFrom(...WORDS) },
);

/**
 * Mostly the roles keyword recall indexes, now and then one it leaves out: a save or a patch that
 * turns a message into a tool or system message takes its terms out of the index.
 */
const role: fc.Arbitrary<MessageRole> = fc.constantFrom('user', 'user', 'assistant', 'tool', 'system');
const type = fc.constantFrom('text', 'tool-call', '');

/** True when `op` carries one of the nested objects above (for the run's log line). */
export function carriesNested(op: Op): boolean {
  const json = JSON.stringify(op);
  return NESTED_KEYS.some((key) => json.includes(`"${key}":`));
}
const metadata: fc.Arbitrary<JsonObject> = fc
  .dictionary(fc.constantFrom('a', 'b', 'workingMemory'), fc.oneof(smallJson, keyedJson), {
    maxKeys: 2,
  })
  .map((m) =>
    typeof m.workingMemory === 'string' || !('workingMemory' in m) ? m : { ...m, workingMemory: 'wm' },
  );
const perPage = fc.oneof(
  { weight: 2, arbitrary: fc.constant<false>(false) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }) },
  { weight: 1, arbitrary: fc.constant(0) },
);
const direction = fc.constantFrom<'ASC' | 'DESC'>('ASC', 'DESC');
const page = fc.oneof(
  { weight: 3, arbitrary: fc.constant(0) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 }) },
);

export const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
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
      { op: fc.constant('listThreads' as const), resource, metadata, page, perPage, direction, range },
      { requiredKeys: ['op', 'resource', 'page', 'perPage', 'direction', 'range'] },
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
          role,
          created: time,
          content,
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
        range,
        include: fc.array(
          fc.record({
            id: messageId,
            withPreviousMessages: fc.integer({ min: 0, max: 2 }),
            withNextMessages: fc.integer({ min: 0, max: 2 }),
          }),
          { maxLength: 2 },
        ),
      },
      { requiredKeys: ['op', 'thread', 'page', 'perPage', 'direction', 'range'] },
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
        fc.record({ id: messageId, role, type, content, created: time }, { requiredKeys: ['id'] }),
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
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteResource' as const), resource }) },
  {
    weight: 1,
    arbitrary: fc.record(
      { op: fc.constant('listResourceIds' as const), after: resource, limit: fc.integer({ min: 1, max: 3 }) },
      { requiredKeys: ['op', 'limit'] },
    ),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('turnPut' as const),
      id: messageId,
      thread: threadId,
      // mostly the thread's owner (a row is stored only in a thread of its resource), else any
      resource: fc.oneof(
        { weight: 3, arbitrary: fc.constant('own' as const) },
        { weight: 1, arbitrary: resource },
      ),
      // two instants: rows of one thread often share one, so their order rests on the ids
      created: fc.constantFrom(0, 1),
      body: text,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('turnGet' as const), id: messageId }) },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        op: fc.constant('turnList' as const),
        thread: threadId,
        limit: fc.integer({ min: 1, max: 3 }),
        before: fc.record({ created: time, id: messageId }),
      },
      { requiredKeys: ['op', 'thread', 'limit'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        op: fc.constant('keywordSearch' as const),
        resource,
        thread: threadId,
        query: fc.constantFrom(...KEYWORD_QUERIES),
        exclude: fc.uniqueArray(messageId, { maxLength: 2 }),
      },
      { requiredKeys: ['op', 'resource', 'query', 'exclude'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('observationSwap' as const),
      scope: logScope,
      thread: threadId,
      resource,
      named: fc.boolean(),
      expect: fc.constantFrom<'head' | 'none' | 'old'>('head', 'head', 'head', 'none', 'old'),
      next: fc.constantFrom<'same' | 'new'>('same', 'new'),
      body: fc.oneof(text, fc.constantFrom('{"observations":[]}', 'line\nbreak', 'x'.repeat(5_000))),
      at: time,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('observationRead' as const),
      scope: logScope,
      thread: threadId,
      resource,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('vectorUpsert' as const),
      vectors: fc.uniqueArray(fc.record({ id: messageId, vector: poolVector }), {
        minLength: 1,
        maxLength: 3,
        selector: (v) => v.id,
      }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('vectorDelete' as const),
      ids: fc.array(messageId, { minLength: 1, maxLength: 2 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      { op: fc.constant('vectorSearch' as const), ...search },
      { requiredKeys: ['op', 'resource', 'vector', 'topK', 'exclude'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      { op: fc.constant('vectorWindows' as const), ...search, ...windows },
      { requiredKeys: ['op', 'resource', 'vector', 'topK', 'exclude', 'before', 'after'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        op: fc.constant('vectorHistory' as const),
        ...search,
        ...windows,
        history: threadId,
        last: fc.integer({ min: 0, max: 4 }),
      },
      {
        requiredKeys: ['op', 'resource', 'vector', 'topK', 'exclude', 'before', 'after', 'history', 'last'],
      },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('reimport' as const),
      resource,
      conflict: fc.constantFrom<'erase' | 'skip' | 'replace'>('erase', 'erase', 'skip', 'replace'),
    }),
  },
);

/** `value` with the nested keys swapped at every depth (`tone` ↔ `style`), and `a` ↔ `b` at the top of metadata. */
export function rekey(value: JsonValue, metadataKeys = false): JsonValue {
  const swap: Record<string, string> = {
    tone: 'style',
    style: 'tone',
    ...(metadataKeys && { a: 'b', b: 'a' }),
  };
  if (Array.isArray(value)) return value.map((item) => rekey(item));
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) out[swap[key] ?? key] = rekey(item);
  return out;
}

const keyedMetadata: fc.Arbitrary<JsonObject> = fc.dictionary(fc.constantFrom('a', 'b'), keyedJson, {
  minKeys: 1,
  maxKeys: 2,
});

/**
 * Two writes of one record where the second holds the same values as the first under other keys
 * (see `keyedJson`), in thread metadata, resource metadata and message content.
 */
export const rekeyedPairArbitrary: fc.Arbitrary<Op[]> = fc.oneof(
  fc
    .record({ thread: threadId, resource, metadata: keyedMetadata, created: time })
    .map(({ thread, resource, metadata, created }): Op[] => [
      { op: 'saveThread', thread, resource, title: '', metadata, created },
      {
        op: 'saveThread',
        thread,
        resource,
        title: '',
        metadata: rekey(metadata, true) as JsonObject,
        created,
      },
    ]),
  fc.record({ thread: threadId, metadata: keyedMetadata }).map(({ thread, metadata }): Op[] => [
    { op: 'updateThread', thread, metadata },
    { op: 'updateThread', thread, metadata: rekey(metadata) as JsonObject },
  ]),
  fc.record({ resource, metadata: keyedMetadata }).map(({ resource, metadata }): Op[] => [
    { op: 'updateResource', resource, metadata },
    { op: 'updateResource', resource, metadata: rekey(metadata) as JsonObject },
  ]),
  fc
    .record({ id: messageId, thread: threadId, created: time, content: keyedJson })
    .map(({ id, thread, created, content }): Op[] => [
      { op: 'saveMessages', messages: [{ ...saved(id, thread, created), content }] },
      { op: 'saveMessages', messages: [{ ...saved(id, thread, created), content: rekey(content) }] },
    ]),
  fc.record({ id: messageId, content: keyedJson }).map(({ id, content }): Op[] => [
    { op: 'updateMessages', patches: [{ id, content }] },
    { op: 'updateMessages', patches: [{ id, content: rekey(content) }] },
  ]),
);

/** A user message in the thread's own resource (the fields of a save but its content). */
function saved(id: M, thread: T, created: number) {
  return { id, thread, resource: 'own' as const, role: 'user' as const, created };
}

/** The operations after the opening: single calls, and now and then a re-keyed pair. */
export function opsArbitrary(maxLength: number): fc.Arbitrary<Op[]> {
  return fc
    .array(
      fc.oneof(
        { weight: 8, arbitrary: opArbitrary.map((op) => [op]) },
        { weight: 1, arbitrary: rekeyedPairArbitrary },
      ),
      { minLength: 1, maxLength },
    )
    .map((groups) => groups.flat().slice(0, maxLength));
}

/**
 * The opening of every sequence: the three threads saved (under random resources, with random
 * metadata), a batch of messages into them and the messages' vectors (for a store with vectors),
 * so the random operations that follow mostly act on existing records.
 */
export const setupArbitrary: fc.Arbitrary<Op[]> = fc
  .record({
    resources: fc.tuple(resource, resource, resource),
    metadata: fc.tuple(metadata, metadata, metadata),
    created: fc.tuple(time, time, time),
    messages: fc.uniqueArray(
      fc.record({ id: messageId, thread: threadId, created: time, content, vector: poolVector }),
      { minLength: 2, maxLength: 5, selector: (m) => m.id },
    ),
  })
  .map(({ resources, metadata, created, messages }): Op[] => [
    ...THREADS.map(
      (thread, i): Op => ({
        op: 'saveThread',
        thread,
        resource: resources[i]!,
        title: '',
        metadata: metadata[i]!,
        created: created[i]!,
      }),
    ),
    {
      op: 'saveMessages',
      messages: messages.map(({ vector: _, ...m }) => ({
        ...m,
        resource: 'own' as const,
        role: 'user' as const,
      })),
    },
    { op: 'vectorUpsert', vectors: messages.map(({ id, vector }) => ({ id, vector })) },
  ]);

/** Operations in a sequence after the opening. */
export const SETUP_OPS = 5;
