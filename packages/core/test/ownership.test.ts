import { describe, expect, it } from 'vitest';
import {
  createLexicalEmbedder,
  createWorkingMemoryTool,
  InMemoryStore,
  isMemoryError,
  Memory,
  SemanticRecall,
  WorkingMemory,
  WorkingMemoryState,
} from '../src/index.ts';

/**
 * The one rule of every call given both a `threadId` and a `resourceId`: a thread of another
 * resource is `INVALID_ARGUMENT`, with nothing returned or written. Sam owns the thread; Eve
 * (ids that look alike: prefixes, `:`, `*`, `%`, quotes) asks for it with her own resource.
 */
const SAM = 'r1';
const EVES = ['r10', 'r', 'r1:', 'r1*', '%', "r1'", 'r1"', 'r1 '];
const SCHEMA = { type: 'object', properties: { name: { type: 'string' } } } as const;

async function world(scope: 'resource' | 'thread', schema: boolean) {
  const storage = new InMemoryStore();
  const memory = new Memory({
    storage,
    embedder: createLexicalEmbedder(),
    options: {
      lastMessages: 1,
      semanticRecall: { topK: 5, messageRange: 0 },
      workingMemory: schema ? { enabled: true, scope, schema: SCHEMA } : { enabled: true, scope },
    },
  });
  const doc = (who: string) => (schema ? JSON.stringify({ name: who }) : `# ${who}`);
  await memory.createThread({
    resourceId: SAM,
    threadId: 'sam-thread',
    metadata: { workingMemory: doc('sam') },
  });
  await storage.updateResource({ resourceId: SAM, workingMemory: doc('sam') });
  for (const eve of EVES) {
    await memory.createThread({ resourceId: eve, threadId: `${eve}-thread` });
    await storage.updateResource({ resourceId: eve, workingMemory: doc(eve) });
    await memory.saveMessages({
      messages: [{ threadId: `${eve}-thread`, resourceId: eve, role: 'user', content: 'pizza in rome' }],
    });
  }
  await memory.saveMessages({
    messages: ['pizza in rome', 'pasta in rome', 'hello'].map((content) => ({
      threadId: 'sam-thread',
      resourceId: SAM,
      role: 'user' as const,
      content,
    })),
  });
  const snapshot = async () => ({
    threads: (await storage.listThreads({ perPage: false })).threads,
    messages: await storage.listMessages({ threadId: 'sam-thread', perPage: false }),
    resources: await Promise.all([SAM, ...EVES].map((resourceId) => storage.getResourceById({ resourceId }))),
  });
  return { storage, memory, snapshot };
}

async function refused(promise: Promise<unknown>, what: string, resourceId: string): Promise<void> {
  const error = await promise.then(
    (value) => new Error(`${what}: resolved with ${JSON.stringify(value)}`),
    (e: unknown) => e,
  );
  if (!isMemoryError(error, 'INVALID_ARGUMENT')) throw new Error(`${what}: ${String(error)}`);
  expect(error.message, what).toContain(
    `thread "sam-thread" does not belong to resource ${JSON.stringify(resourceId)}`,
  );
  expect(error.message, `${what} names no owner`).not.toContain(`"${SAM}"`);
}

type Call = [string, (memory: Memory, eve: string) => Promise<unknown>];

/** Every `Memory` method that takes both ids. */
function memoryCalls(schema: boolean): Call[] {
  const ids = (eve: string) => ({ threadId: 'sam-thread', resourceId: eve });
  const calls: Call[] = [
    ['recall (history)', (m, eve) => m.recall(ids(eve))],
    ['recall (history, last: 0)', (m, eve) => m.recall({ ...ids(eve), last: 0 })],
    ['recall (history, last: false)', (m, eve) => m.recall({ ...ids(eve), last: false })],
    ['getMessages', (m, eve) => m.getMessages(ids(eve))],
    ['recall (semantic)', (m, eve) => m.recall({ ...ids(eve), query: 'pizza in rome' })],
    [
      'semanticRecall (scope thread)',
      (m, eve) => m.semanticRecall({ ...ids(eve), query: 'pizza', scope: 'thread' }),
    ],
    [
      // The in-memory store reads the history with the vector search (`historyInSearch`).
      'recall (semantic, vector mode: the history read with the search)',
      (m, eve) =>
        new Memory({
          storage: m.storage,
          embedder: createLexicalEmbedder(),
          options: { lastMessages: 1, semanticRecall: { mode: 'vector', topK: 5, messageRange: 0 } },
        }).recall({ ...ids(eve), query: 'pizza in rome' }),
    ],
    ['getWorkingMemory', (m, eve) => m.getWorkingMemory(ids(eve))],
    ['editWorkingMemory', (m, eve) => m.editWorkingMemory({ ...ids(eve), edit: () => 'HIJACK' })],
  ];
  if (schema) {
    calls.push(
      [
        'updateWorkingMemory',
        (m, eve) => m.updateWorkingMemory({ ...ids(eve), workingMemory: '{"name":"x"}' }),
      ],
      ['mergeWorkingMemory', (m, eve) => m.mergeWorkingMemory({ ...ids(eve), workingMemory: { name: 'x' } })],
      [
        'applyWorkingMemoryPatch',
        (m, eve) => m.applyWorkingMemoryPatch({ ...ids(eve), patch: { name: 'x' } }),
      ],
    );
  } else {
    calls.push([
      'updateWorkingMemory',
      (m, eve) => m.updateWorkingMemory({ ...ids(eve), workingMemory: 'HIJACK' }),
    ]);
  }
  return calls;
}

/** The processors and the tool, with both ids in the request context (or bound). */
function processorCalls(scope: 'resource' | 'thread'): Call[] {
  const requestContext = (eve: string) =>
    new Map([
      ['threadId', 'sam-thread'],
      ['resourceId', eve],
    ]);
  const messages = [{ role: 'user' as const, content: 'pizza in rome' }];
  return [
    [
      'WorkingMemory.processInput',
      (m, eve) => WorkingMemory.fromMemory(m).processInput({ messages, requestContext: requestContext(eve) }),
    ],
    [
      'WorkingMemoryState.processInput',
      (m, eve) =>
        new WorkingMemoryState({ storage: m.storage, scope, templateProvider: m }).processInput({
          messages,
          requestContext: requestContext(eve),
        }),
    ],
    [
      'SemanticRecall.processInput',
      (m, eve) => new SemanticRecall(m).processInput({ messages, requestContext: requestContext(eve) }),
    ],
    [
      'the working-memory tool (bound ids)',
      async (m, eve) =>
        (await createWorkingMemoryTool(m, { threadId: 'sam-thread', resourceId: eve }))?.execute({
          memory: 'HIJACK',
        }),
    ],
    [
      'the working-memory tool (request context)',
      async (m, eve) =>
        (await createWorkingMemoryTool(m))?.execute(
          { memory: 'HIJACK' },
          { requestContext: requestContext(eve) },
        ),
    ],
  ];
}

describe('ownership: a thread of another resource is INVALID_ARGUMENT for every call taking both ids', () => {
  for (const scope of ['resource', 'thread'] as const) {
    for (const schema of [false, true]) {
      const mode = schema ? 'schema' : 'template';
      it(`Memory methods (${scope} scope, ${mode} mode), ${EVES.length} look-alike resources`, async () => {
        const { memory, snapshot } = await world(scope, schema);
        const before = await snapshot();
        for (const eve of EVES) {
          for (const [name, call] of memoryCalls(schema)) {
            await refused(call(memory, eve), `${name} as ${JSON.stringify(eve)}`, eve);
          }
        }
        expect(await snapshot()).toEqual(before);
      });
    }

    it(`processors and the working-memory tool (${scope} scope)`, async () => {
      const { memory, snapshot } = await world(scope, false);
      const before = await snapshot();
      for (const eve of EVES) {
        for (const [name, call] of processorCalls(scope)) {
          await refused(call(memory, eve), `${name} as ${JSON.stringify(eve)}`, eve);
        }
      }
      expect(await snapshot()).toEqual(before);
    });
  }

  it('the owner and a thread that does not exist yet are not refused', async () => {
    const { memory } = await world('resource', false);
    expect((await memory.recall({ threadId: 'sam-thread', resourceId: SAM })).map((m) => m.content)).toEqual([
      'hello',
    ]);
    const { hits } = await memory.recall({ threadId: 'sam-thread', resourceId: SAM, query: 'pizza in rome' });
    expect(hits.map((h) => h.message.content)).toContain('pizza in rome');
    expect(await memory.recall({ threadId: 'new-thread', resourceId: 'r10' })).toEqual([]);
    expect(
      (await memory.recall({ threadId: 'new-thread', resourceId: 'r10', query: 'pizza' })).hits,
    ).toHaveLength(1);
    expect(await memory.getWorkingMemory({ threadId: 'new-thread', resourceId: 'r10' })).toBe('# r10');
  });

  it('getThreadById, a lookup, answers null for a thread of another resource, as for an absent one', async () => {
    const { memory } = await world('resource', false);
    expect(await memory.getThreadById({ threadId: 'sam-thread', resourceId: 'r10' })).toBeNull();
    expect((await memory.getThreadById({ threadId: 'sam-thread', resourceId: SAM }))?.resourceId).toBe(SAM);
  });

  it("the store's updateWorkingMemoryAtomically with both ids refuses a thread of another resource", async () => {
    const { storage, snapshot } = await world('thread', false);
    const before = await snapshot();
    for (const scope of ['resource', 'thread'] as const) {
      for (const eve of EVES) {
        const update = storage.updateWorkingMemoryAtomically({
          scope,
          threadId: 'sam-thread',
          resourceId: eve,
          update: () => 'HIJACK',
        });
        await refused(update, `updateWorkingMemoryAtomically (${scope}) as ${JSON.stringify(eve)}`, eve);
      }
    }
    expect(await snapshot()).toEqual(before);
  });
});
