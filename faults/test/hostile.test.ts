import { isMemoryError, type MemoryStorage, type Message } from '@engram/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bigBatch,
  mergedPatch,
  messageContent,
  nested,
  newThreadMetadata,
  type Outcome,
  resourceFields,
  threadFields,
} from '../src/hostile.ts';
import { type Provisioned, provision } from '../src/services.ts';
import { openStore } from '../src/targets.ts';
import { schemaMemory } from '../src/workload.ts';
import { forEachAdapter } from './support.ts';

const MB = `${'x'.repeat(1024 * 1024 - 4)}é✓😀`;
const PROTO = () =>
  JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"toString":"s"}');

/** The hostile inputs; each either stored and read back exactly, or refused with INVALID_ARGUMENT/VALIDATION. */
const CASES: Array<[string, (store: MemoryStorage) => Promise<Outcome>]> = [
  ['1 MB working memory (replace)', (s) => resourceFields(s, 'mb', MB, undefined)],
  ['1 MB value merged into JSON working memory', (s) => mergedPatch(s, 'mb', { big: MB })],
  ['1 MB message content', (s) => messageContent(s, 'mb', { text: MB })],
  ['message content nested 1,000 levels', (s) => messageContent(s, 'deep', nested(1000))],
  ['thread metadata nested 1,000 levels', (s) => threadFields(s, 'deep', undefined, { deep: nested(1000) })],
  ['working-memory patch nested 1,000 levels', (s) => mergedPatch(s, 'deep', { deep: nested(1000) })],
  [
    'lone surrogates in message content',
    (s) => messageContent(s, 'sur', { a: 'x\uD800y', b: '\uDC00', c: ['\uDBFF'] }),
  ],
  [
    'lone surrogates in a metadata key and value, and a title',
    (s) => threadFields(s, 'sur', 't\uDFFF', { 'k\uD800': 'v\uDC00' }),
  ],
  ['lone surrogate in working memory', (s) => resourceFields(s, 'sur', 'wm \uD83D end', undefined)],
  ['NUL in message content', (s) => messageContent(s, 'nul', { a: 'x\u0000y', 'k\u0000': 1 })],
  [
    'NUL in a metadata key and value, and a title',
    (s) => threadFields(s, 'nul', 't\u0000', { 'k\u0000': 'v\u0000' }),
  ],
  [
    'NUL in working memory and resource metadata',
    (s) => resourceFields(s, 'nul', 'wm\u0000', { 'n\u0000': '\u0000' }),
  ],
  [
    '__proto__/constructor keys in thread metadata patch',
    (s) => threadFields(s, 'proto', undefined, PROTO()),
  ],
  ['__proto__/constructor keys in a new thread', (s) => newThreadMetadata(s, 'proto', PROTO())],
  ['__proto__/constructor keys in resource metadata', (s) => resourceFields(s, 'proto', undefined, PROTO())],
  ['__proto__/constructor keys in a working-memory patch', (s) => mergedPatch(s, 'proto', PROTO())],
  ['__proto__/constructor keys in message content', (s) => messageContent(s, 'proto', PROTO())],
  ['10,000 messages in one batch', (s) => bigBatch(s, 10_000)],
];

/**
 * FerretDB 1.x upserts one document at a time (about 20 ms each here), so 10,000 messages take
 * minutes: by default the MongoDB run saves 1,000 in one batch, and `ENGRAM_FAULTS_FULL=1` (set
 * by the `soak --long` script) runs the full 10,000.
 */
const FULL = process.env.ENGRAM_FAULTS_FULL === '1';
function casesFor(adapter: string): Array<[string, (store: MemoryStorage) => Promise<Outcome>]> {
  if (adapter !== 'mongodb' || FULL) return CASES;
  return CASES.map(([label, run]) =>
    label.startsWith('10,000')
      ? [
          '1,000 messages in one batch (10,000 with ENGRAM_FAULTS_FULL=1: FerretDB upserts one document at a time)',
          (s) => bigBatch(s, 1_000),
        ]
      : [label, run],
  );
}

const BAD_IDS: unknown[] = [
  42,
  null,
  undefined,
  {},
  ['a'],
  true,
  '',
  'x'.repeat(256),
  'a\u0000b',
  'a\uD800b',
];

/** Every call taking an id refuses non-string (and empty, too long) ids with INVALID_ARGUMENT, and writes nothing. */
async function nonStringIds(store: MemoryStorage): Promise<number> {
  const memory = schemaMemory(store);
  const now = new Date();
  let refused = 0;
  const refuse = async (call: () => Promise<unknown>) => {
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isMemoryError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    refused += 1;
  };
  for (const bad of BAD_IDS) {
    const id = bad as string;
    await refuse(() => store.getThreadById({ threadId: id }));
    await refuse(() =>
      store.saveThread({ id, resourceId: 'r', title: '', metadata: {}, createdAt: now, updatedAt: now }),
    );
    await refuse(() =>
      store.saveThread({
        id: 'ok-id',
        resourceId: id,
        title: '',
        metadata: {},
        createdAt: now,
        updatedAt: now,
      }),
    );
    await refuse(() => store.updateThread({ id, title: 'x' }));
    await refuse(() => store.getResourceById({ resourceId: id }));
    await refuse(() => store.updateResource({ resourceId: id, workingMemory: 'x' }));
    await refuse(() => store.listMessagesById({ ids: [id] }));
    await refuse(() => store.deleteMessages([id]));
    await refuse(() => memory.mergeWorkingMemory({ resourceId: id, workingMemory: { a: 1 } }));
    const m = {
      id,
      threadId: 'ok-thread',
      resourceId: 'r',
      role: 'user',
      content: 'x',
      type: 'text',
      createdAt: now,
    };
    await refuse(() => store.saveMessages([m as Message]));
    await refuse(() => store.saveMessages([{ ...m, id: 'ok-m', threadId: id } as Message]));
  }
  expect(await store.getThreadById({ threadId: 'ok-id' })).toBeNull();
  expect(await store.listMessagesById({ ids: ['ok-m'] })).toEqual([]);
  return refused;
}

function hostileSuite(
  name: string,
  make: () => Promise<{ store: MemoryStorage; space?: Provisioned }>,
): void {
  let store: MemoryStorage;
  let space: Provisioned | undefined;
  const outcomes: string[] = [];
  beforeAll(async () => {
    ({ store, space } = await make());
    await store.init();
  });
  afterAll(async () => {
    console.log(`hostile ${name}: ${outcomes.join('; ')}`);
    await store?.close();
    await space?.cleanup();
  });
  for (const [label, run] of casesFor(name)) {
    it(
      `${label}: stored exactly or refused clearly, storage consistent`,
      async () => {
        const outcome = await run(store);
        outcomes.push(`${label} → ${outcome.stored ? 'stored' : `refused ${outcome.code}`}`);
        if (!outcome.stored) expect(outcome.message.length).toBeGreaterThan(20);
      },
      FULL ? 900_000 : undefined,
    );
  }
  it('non-string, empty, over-long, NUL and lone-surrogate ids: refused with INVALID_ARGUMENT, nothing written', async () => {
    outcomes.push(`bad ids → ${await nonStringIds(store)} calls refused`);
  });
  it('the store still works afterwards', async () => {
    expect(await mergedPatch(store, 'after', { fine: 'yes' })).toEqual({ stored: true });
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });
}

describe('hostile input · memory (InMemoryStore, the reference)', () => {
  hostileSuite('memory', async () => ({
    store: await openStore({ adapter: 'memory', url: 'memory:', options: {} }),
  }));
});

forEachAdapter('hostile input', (adapter) => {
  hostileSuite(adapter.name, async () => {
    const space = await provision(adapter.name, 'hostile');
    return { store: await openStore(space.target), space };
  });
});
