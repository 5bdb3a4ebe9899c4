import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { cleanTitle, InMemoryStore, isMemoryError, Memory, type MemoryConfig } from '../src/index.ts';
import { caught } from './support.ts';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A mock model answering `answer` (a string, or a function awaited per call). */
function model(answer: string | (() => Promise<string>)): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async () => ({
      content: [{ type: 'text', text: typeof answer === 'string' ? answer : await answer() }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    }),
  });
}

function titled(m: MockLanguageModelV3, extra: Partial<MemoryConfig> = {}, timeoutMs?: number) {
  const errors: [unknown, string][] = [];
  const memory = new Memory({
    storage: new InMemoryStore(),
    onTitleError: (error, threadId) => errors.push([error, threadId]),
    options: { threadTitle: { model: m, ...(timeoutMs ? { timeoutMs } : {}) } },
    ...extra,
  });
  return { memory, errors };
}

async function exchange(memory: Memory, threadId: string, user = 'How do I bake rye bread?') {
  await memory.addMessage({ threadId, role: 'user', content: user });
  return memory.addMessage({
    threadId,
    role: 'assistant',
    content: { format: 2, parts: [{ type: 'text', text: 'Start with a sourdough starter.' }] },
  });
}

describe('thread titles from a model', () => {
  it('titles a new thread once, after its first assistant reply, from the first exchange', async () => {
    const m = model('"Title: Baking rye bread."');
    const { memory, errors } = titled(m);
    await memory.createThread({ resourceId: 'r', threadId: 't' });
    await memory.addMessage({ threadId: 't', role: 'user', content: 'How do I bake rye bread?' });
    expect(m.doGenerateCalls).toHaveLength(0);
    await memory.addMessage({ threadId: 't', role: 'assistant', content: 'Start with a starter.' });
    expect((await memory.getThreadById({ threadId: 't' }))?.title).toBe('Baking rye bread');
    expect(m.doGenerateCalls).toHaveLength(1);
    const prompt = JSON.stringify(m.doGenerateCalls[0]?.prompt);
    expect(prompt).toContain('How do I bake rye bread?');
    expect(prompt).toContain('Start with a starter.');
    // Later turns make no further call.
    await exchange(memory, 't', 'And wheat?');
    expect(m.doGenerateCalls).toHaveLength(1);
    expect(errors).toStrictEqual([]);
  });

  it('never replaces a title the user set, and makes no model call for it', async () => {
    const m = model('Generated');
    const { memory } = titled(m);
    await memory.createThread({ resourceId: 'r', threadId: 't', title: 'Mine' });
    await exchange(memory, 't');
    expect((await memory.getThreadById({ threadId: 't' }))?.title).toBe('Mine');
    expect(m.doGenerateCalls).toHaveLength(0);
  });

  it('keeps a title another writer set while the model was answering', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const calling = new Promise<void>((resolve) => {
      started = resolve;
    });
    const m = model(async () => {
      started();
      await gate;
      return 'Generated';
    });
    const { memory } = titled(m);
    await memory.createThread({ resourceId: 'r', threadId: 't' });
    await memory.addMessage({ threadId: 't', role: 'user', content: 'hello' });
    const saving = memory.addMessage({ threadId: 't', role: 'assistant', content: 'hi there' });
    await calling;
    await memory.updateThread({ id: 't', title: 'Set meanwhile' });
    release();
    await saving;
    expect((await memory.getThreadById({ threadId: 't' }))?.title).toBe('Set meanwhile');
  });

  it('a failing model never fails the save: the error is reported and the title stays empty', async () => {
    const m = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new Error('provider down');
      },
    });
    const { memory, errors } = titled(m);
    await memory.createThread({ resourceId: 'r', threadId: 't' });
    const saved = await exchange(memory, 't');
    expect(saved.role).toBe('assistant');
    expect((await memory.getThreadById({ threadId: 't' }))?.title).toBe('');
    expect(errors.map(([e, id]) => [(e as Error).message, id])).toStrictEqual([['provider down', 't']]);
  });

  it('a hung model is given up after timeoutMs; the save resolves and the title stays empty', async () => {
    const m = model(() => new Promise<string>(() => undefined));
    const { memory, errors } = titled(m, {}, 50);
    await memory.createThread({ resourceId: 'r', threadId: 't' });
    const started = Date.now();
    await exchange(memory, 't');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await memory.getThreadById({ threadId: 't' }))?.title).toBe('');
    expect((errors[0]?.[0] as Error | undefined)?.name).toBe('ModelTimeoutError');
  });

  it('generateTitle titles an untitled thread on demand, with a model given per call', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    await memory.createThread({ resourceId: 'r', threadId: 't' });
    await exchange(memory, 't');
    expect((await memory.getThreadById({ threadId: 't' }))?.title).toBe('');
    const m = model('Rye bread');
    expect(await memory.generateTitle({ threadId: 't', resourceId: 'r', model: m })).toStrictEqual({
      title: 'Rye bread',
      applied: true,
    });
    expect(await memory.generateTitle({ threadId: 't', model: m })).toStrictEqual({
      title: 'Rye bread',
      applied: false,
    });
    expect(m.doGenerateCalls).toHaveLength(1);
  });

  it('generateTitle refuses what it cannot do, naming what to do', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    await memory.createThread({ resourceId: 'r', threadId: 't' });
    const m = model('x');
    const cases: [unknown, string][] = [
      [{ threadId: 'nope', model: m }, 'NOT_FOUND'],
      [{ threadId: 't' }, 'INVALID_ARGUMENT'],
      [{ threadId: 't', model: m }, 'INVALID_ARGUMENT'],
      [{ threadId: 't', model: 'gpt-5' }, 'INVALID_ARGUMENT'],
      [{ threadId: 't', resourceId: 'mallory', model: m }, 'INVALID_ARGUMENT'],
    ];
    for (const [args, code] of cases) {
      const error = await caught(() => memory.generateTitle(args as never));
      expect(isMemoryError(error, code as never), `${JSON.stringify(args)}: ${String(error)}`).toBe(true);
    }
    expect(m.doGenerateCalls).toHaveLength(0);
  });

  it('options.threadTitle is validated', () => {
    const bad: unknown[] = [{}, { model: 'gpt-5' }, { model: model('x'), instuctions: 'x' }, 'yes'];
    bad.push({ model: model('x'), timeoutMs: 0 }, { model: model('x'), instructions: '' });
    for (const threadTitle of bad) {
      const error = caughtSync(
        () => new Memory({ storage: new InMemoryStore(), options: { threadTitle: threadTitle as never } }),
      );
      expect(isMemoryError(error, 'INVALID_ARGUMENT'), JSON.stringify(threadTitle)).toBe(true);
    }
  });

  it('cleanTitle keeps the first line, without quotes, prefix or final period, and cuts long ones', () => {
    expect(cleanTitle('  "Title: Rye bread."\nmore')).toBe('Rye bread');
    expect(cleanTitle('**Plan a trip**')).toBe('Plan a trip');
    expect(cleanTitle(`${'word '.repeat(60)}`).length).toBeLessThanOrEqual(120);
  });
});

function caughtSync(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}
