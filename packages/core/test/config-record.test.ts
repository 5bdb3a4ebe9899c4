import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStore, MemoryDriver } from '../src/driver.ts';
import {
  createLexicalEmbedder,
  DEFAULT_FUSION,
  defaultFusion,
  ENGRAM_VERSION,
  InMemoryStore,
  LEXICAL_FUSION,
  MEMORY_CONFIG_KEY,
  Memory,
  type MemoryConfigRecord,
} from '../src/index.ts';
import { defaultWorkingMemoryTemplate } from '../src/working-memory/template.ts';
import { uid } from './support.ts';

const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, pets: { type: 'array', items: { type: 'string' } } },
  additionalProperties: false,
};

async function recorded(store: InMemoryStore): Promise<MemoryConfigRecord | null> {
  return (await store.settings?.get(MEMORY_CONFIG_KEY)) as MemoryConfigRecord | null;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('Memory records its configuration in the store', () => {
  it('after the first write: schema mode with the JSON Schema and its sha256, recall and history settings', async () => {
    const store = new InMemoryStore();
    const memory = new Memory({
      storage: store,
      options: {
        lastMessages: 7,
        workingMemory: { schema, scope: 'thread' },
        semanticRecall: { topK: 4, messageRange: { before: 1, after: 3 }, scope: 'thread' },
      },
    });
    expect(await recorded(store)).toBeNull();
    await memory.getWorkingMemory({ resourceId: 'alice', threadId: 'none' }).catch(() => undefined);
    expect(await recorded(store), 'a read records nothing').toBeNull();
    await memory.createThread({ resourceId: 'alice', threadId: uid('t') });
    const record = await recorded(store);
    expect(record).toMatchObject({
      v: 1,
      engram: ENGRAM_VERSION,
      workingMemory: { enabled: true, mode: 'schema', scope: 'thread', schema },
      lastMessages: 7,
      semanticRecall: { mode: 'keyword', topK: 4, messageRange: { before: 1, after: 3 }, scope: 'thread' },
      observationalMemory: false,
    });
    expect(record?.workingMemory.template).toBeUndefined();
    const json = JSON.stringify(record?.workingMemory.schema);
    expect(record?.workingMemory.sha256).toBe(createHash('sha256').update(json).digest('hex'));
    expect(Number.isNaN(Date.parse(record?.recordedAt ?? ''))).toBe(false);
  });

  it('hybrid mode records its fusion; the other modes do not', async () => {
    const store = new InMemoryStore();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder(),
      options: { semanticRecall: { fusion: { rankConstant: 1, weights: { keyword: 3 } } } },
    });
    await memory.createThread({ resourceId: 'alice', threadId: uid('t') });
    expect((await recorded(store))?.semanticRecall).toMatchObject({
      mode: 'hybrid',
      fusion: { rankConstant: 1, weights: { vector: 1, keyword: 3 } },
    });
  });

  it('hybrid mode fuses by plain RRF, led by keywords with the lexical embedder, unless a fusion is given', async () => {
    const fusionOf = async (
      embedder: ReturnType<typeof createLexicalEmbedder>,
      semanticRecall: object = {},
    ) => {
      const store = new InMemoryStore();
      const memory = new Memory({ storage: store, embedder, options: { semanticRecall } });
      await memory.createThread({ resourceId: 'alice', threadId: uid('t') });
      const record = (await recorded(store))?.semanticRecall;
      return record ? record.fusion : undefined;
    };
    const lexical = createLexicalEmbedder();
    const model = {
      ...createLexicalEmbedder(),
      provider: 'openai',
      modelId: 'text-embedding-3-small',
    } as never;
    expect(await fusionOf(lexical)).toEqual({ rankConstant: 1, weights: { vector: 1, keyword: 3 } });
    expect(await fusionOf(model)).toEqual({ rankConstant: 60, weights: { vector: 1, keyword: 1 } });
    // Values left out of a given fusion are plain RRF's, whatever the embedder.
    expect(await fusionOf(lexical, { fusion: { weights: { keyword: 2 } } })).toEqual({
      rankConstant: 60,
      weights: { vector: 1, keyword: 2 },
    });
    expect(defaultFusion(createLexicalEmbedder({ dimensions: 64 }))).toBe(LEXICAL_FUSION);
    expect(defaultFusion(model)).toBe(DEFAULT_FUSION);
    expect(defaultFusion(undefined)).toBe(DEFAULT_FUSION);
  });

  it('Markdown mode records the template text (core default when none is given)', async () => {
    const store = new InMemoryStore();
    const memory = new Memory({ storage: store, options: { workingMemory: { enabled: true } } });
    const threadId = uid('t');
    await memory.createThread({ resourceId: 'alice', threadId });
    const record = await recorded(store);
    expect(record?.workingMemory).toMatchObject({ mode: 'markdown', template: defaultWorkingMemoryTemplate });
    expect(record?.workingMemory.sha256).toBe(
      createHash('sha256').update(defaultWorkingMemoryTemplate).digest('hex'),
    );
    expect(record?.semanticRecall).toBe(false);
  });

  it('writes only when the configuration differs from the stored one', async () => {
    const store = new InMemoryStore();
    const put = vi.spyOn(store.settings!, 'put');
    const options = { workingMemory: { template: '# Notes\n- x:' } };
    await new Memory({ storage: store, options }).createThread({ resourceId: 'a', threadId: uid('t') });
    const first = await recorded(store);
    const again = new Memory({ storage: store, options });
    await again.createThread({ resourceId: 'a', threadId: uid('t') });
    await again.createThread({ resourceId: 'a', threadId: uid('t') });
    expect(put).toHaveBeenCalledTimes(1);
    expect((await recorded(store))?.recordedAt).toBe(first?.recordedAt);
    const changed = new Memory({ storage: store, options: { workingMemory: { schema } } });
    await changed.createThread({ resourceId: 'a', threadId: uid('t') });
    expect(put).toHaveBeenCalledTimes(2);
    expect((await recorded(store))?.workingMemory.mode).toBe('schema');
  });

  it('recordConfiguration: false records nothing; a store without settings is left alone', async () => {
    const store = new InMemoryStore();
    const off = new Memory({ storage: store, options: { recordConfiguration: false } });
    await off.createThread({ resourceId: 'a', threadId: uid('t') });
    expect(await recorded(store)).toBeNull();
    const bare = new InMemoryStore({ settings: false });
    expect(bare.settings).toBeUndefined();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    await new Memory({ storage: bare }).createThread({ resourceId: 'a', threadId: uid('t') });
    expect(warn).not.toHaveBeenCalled();
    expect(() => new Memory({ storage: store, options: { recordConfiguration: 'no' as never } })).toThrow(
      /recordConfiguration must be a boolean/,
    );
  });

  it('a failed record never fails the write: onConfigRecordError, else one console.warn per Memory', async () => {
    const driver = new MemoryDriver();
    driver.settings = {
      get: async () => null,
      put: async () => {
        throw new Error('disk full');
      },
    };
    const store = createStore(driver);
    const errors: unknown[] = [];
    const memory = new Memory({ storage: store, onConfigRecordError: (error) => errors.push(error) });
    const threadId = uid('t');
    await memory.createThread({ resourceId: 'a', threadId });
    await memory.saveMessages({ messages: [{ threadId, resourceId: 'a', role: 'user', content: 'hi' }] });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'STORAGE', message: expect.stringMatching(/disk full/) });
    expect(await memory.getMessages({ threadId })).toHaveLength(1);

    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const quiet = new Memory({ storage: store });
    await quiet.createThread({ resourceId: 'a', threadId: uid('t') });
    await quiet.createThread({ resourceId: 'a', threadId: uid('t') });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/recording the memory configuration/);
  });

  it('ENGRAM_VERSION is the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(ENGRAM_VERSION).toBe(pkg.version);
  });
});

describe('the settings domain of the in-memory store', () => {
  it('validates keys and values once in core, storing nothing on a refusal', async () => {
    const store = new InMemoryStore();
    const settings = store.settings!;
    await settings.put('k', { a: 1 });
    for (const bad of ['', 'x'.repeat(513), 'a\u0000b', '\uD800', 3]) {
      await expect(settings.put(bad as string, { a: 2 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    for (const bad of [null, [], 'text', { a: undefined }, { a: Number.NaN }, { a: 'x\u0000' }, new Date()]) {
      await expect(settings.put('k', bad as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(await settings.get('k')).toEqual({ a: 1 });
    await settings.put('k', { a: '\\u0000 is text here' });
    expect(await settings.get('k')).toEqual({ a: '\\u0000 is text here' });
  });
});
