import { describe, expect, it } from 'vitest';
import {
  type AgentMessage,
  assertStateSignalConfig,
  createStateSignal,
  InMemoryStore,
  isMemoryError,
  latestStateSignal,
  Memory,
  messagesToSave,
  readStateSignal,
  shouldEmitStateSignal,
  stateSignalText,
  WorkingMemoryState,
  workingMemoryCacheKey,
} from '../src/index.ts';

async function setup() {
  const storage = new InMemoryStore();
  await storage.init();
  const resourceId = `r-${Math.random().toString(36).slice(2)}`;
  const state = new WorkingMemoryState({
    storage,
    template: { format: 'markdown', content: '# Profile\n- Name:\n' },
  });
  return { storage, resourceId, state };
}

const ask = (text: string): AgentMessage => ({ role: 'user', content: text });
const reply = (text: string): AgentMessage => ({ role: 'assistant', content: text });

describe('working-memory state signals', () => {
  it('the cacheKey is a SHA-256 of format and data', async () => {
    const key = await workingMemoryCacheKey('markdown', '- Name: Sam');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await workingMemoryCacheKey('markdown', '- Name: Sam')).toBe(key);
    expect(await workingMemoryCacheKey('json', '- Name: Sam')).not.toBe(key);
    expect(await workingMemoryCacheKey('markdown', '- Name: Samantha')).not.toBe(key);
    expect(await workingMemoryCacheKey('markdown', null)).toBe(await workingMemoryCacheKey('markdown', ''));
  });

  it('has the documented shape and never carries the text null', async () => {
    const signal = await createStateSignal('json', null);
    expect(signal).toEqual({
      type: 'state',
      stateId: 'working-memory',
      cacheKey: signal.cacheKey,
      content: '{}',
    });
    expect(stateSignalText(signal)).toContain('<state id="working-memory"');
  });

  it('is emitted on the first turn, before the new user message', async () => {
    const { storage, resourceId, state } = await setup();
    await storage.updateResource({ resourceId, workingMemory: '- Name: Sam' });
    const out = await state.processInput({ messages: [ask('hi')], requestContext: { resourceId } });
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ role: 'user', type: 'state', source: 'memory' });
    expect(readStateSignal(out[0]!)).toMatchObject({ stateId: 'working-memory', content: '- Name: Sam' });
    expect(out[1]).toEqual(ask('hi'));
  });

  it('is not emitted again while the same snapshot is in the context window', async () => {
    const { storage, resourceId, state } = await setup();
    await storage.updateResource({ resourceId, workingMemory: '- Name: Sam' });
    const turn1 = await state.processInput({ messages: [ask('hi')], requestContext: { resourceId } });
    const history = [...turn1, reply('hello Sam')];
    const turn2 = await state.processInput({
      messages: [...history, ask('again')],
      requestContext: { resourceId },
    });
    expect(turn2).toEqual([...history, ask('again')]);
  });

  it('is emitted when the snapshot changed', async () => {
    const { storage, resourceId, state } = await setup();
    await storage.updateResource({ resourceId, workingMemory: '- Name: Sam' });
    const turn1 = await state.processInput({ messages: [ask('hi')], requestContext: { resourceId } });
    await storage.updateResource({ resourceId, workingMemory: '- Name: Sam\n- City: Berlin' });
    const turn2 = await state.processInput({
      messages: [...turn1, reply('ok'), ask('more')],
      requestContext: { resourceId },
    });
    expect(turn2).toHaveLength(turn1.length + 3);
    const signal = latestStateSignal(turn2);
    expect(signal?.content).toBe('- Name: Sam\n- City: Berlin');
    expect(signal?.cacheKey).not.toBe(readStateSignal(turn1[0]!)?.cacheKey);
  });

  it('is emitted again when the previous one left the context window', async () => {
    const { storage, resourceId, state } = await setup();
    await storage.updateResource({ resourceId, workingMemory: '- Name: Sam' });
    const turn1 = await state.processInput({ messages: [ask('hi')], requestContext: { resourceId } });
    const windowWithout = [reply('a'), ask('b'), reply('c'), ask('d')];
    expect(latestStateSignal(windowWithout)).toBeNull();
    const turn2 = await state.processInput({ messages: windowWithout, requestContext: { resourceId } });
    expect(readStateSignal(turn2.at(-2)!)?.cacheKey).toBe(readStateSignal(turn1[0]!)?.cacheKey);
    expect(shouldEmitStateSignal(turn1, readStateSignal(turn1[0]!)!.cacheKey)).toBe(false);
  });

  it('signal messages are kept when a turn is saved', async () => {
    const { storage, resourceId, state } = await setup();
    const turn = await state.processInput({ messages: [ask('hi')], requestContext: { resourceId } });
    expect(messagesToSave(turn)).toEqual(turn);
    expect(storage).toBeTruthy();
  });

  it('useStateSignals with vnext is a configuration error', () => {
    const construct = () =>
      new Memory({
        storage: new InMemoryStore(),
        options: { workingMemory: { useStateSignals: true, version: 'vnext' } },
      });
    expect(construct).toThrow(/useStateSignals/);
    let error: unknown;
    try {
      construct();
    } catch (e) {
      error = e;
    }
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    // The same check for any host object (for memories built by other means).
    expect(() =>
      assertStateSignalConfig({ options: { workingMemory: { useStateSignals: true, version: 'vnext' } } }),
    ).toThrow(/vnext/);
    expect(() =>
      assertStateSignalConfig(
        new Memory({ storage: new InMemoryStore(), options: { workingMemory: { useStateSignals: true } } }),
      ),
    ).not.toThrow();
  });
});
