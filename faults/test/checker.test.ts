import { InMemoryStore } from '@engram/core';
import { expect, it } from 'vitest';
import { Ledger, verify } from '../src/checker.ts';
import { messageContent, messageId, saveBatch, schemaMemory } from '../src/workload.ts';

const scene = { resourceId: 'r', threadId: 't' };

async function setUp() {
  const store = new InMemoryStore();
  const now = new Date();
  await store.saveThread({
    id: 't',
    resourceId: 'r',
    title: '',
    metadata: {},
    createdAt: now,
    updatedAt: now,
  });
  const memory = schemaMemory(store);
  const ledger = new Ledger();
  ledger.add(await saveBatch(memory, scene, 'w-b1'));
  await memory.mergeWorkingMemory({ resourceId: 'r', workingMemory: { 'w-k0': 0 } });
  ledger.add({ kind: 'key', resourceId: 'r', key: 'w-k0', value: 0 });
  return { store, memory, ledger };
}

it('checker: passes a consistent store and counts what it verified', async () => {
  const { store, ledger } = await setUp();
  const verdict = await verify(store, ledger, { exact: true });
  expect(verdict.problems).toEqual([]);
  expect(verdict.verifiedKeys).toBe(1);
  expect(verdict.verifiedBatches).toBe(1);
});

it('checker: reports a lost key, a missing acknowledged batch and a half-saved batch', async () => {
  const { store, ledger } = await setUp();
  ledger.add({ kind: 'key', resourceId: 'r', key: 'never-written', value: 1 });
  ledger.add({ kind: 'batch', threadId: 't', batch: 'w-b3', size: 10 });
  await store.deleteMessages([messageId('w-b1', 4)]);
  const verdict = await verify(store, ledger);
  expect(verdict.lost).toHaveLength(3);
  expect(verdict.problems.some((p) => p.includes('w-b1 is half-saved (9 of 10)'))).toBe(true);
});

it('checker: tolerates a half-saved unacknowledged batch only when told to, never an acknowledged one', async () => {
  const { store, ledger } = await setUp();
  await store.saveMessages([
    {
      id: messageId('w-b5', 0),
      threadId: 't',
      resourceId: 'r',
      role: 'user',
      content: messageContent('w-b5', 0, 10),
      type: 'text',
      createdAt: new Date(),
    },
  ]);
  expect((await verify(store, ledger)).problems).toHaveLength(1);
  const tolerant = await verify(store, ledger, { allowPartialUnacknowledged: true });
  expect(tolerant.problems).toEqual([]);
  expect(tolerant.partial).toEqual([{ threadId: 't', batch: 'w-b5' }]);
  await store.deleteMessages([messageId('w-b1', 0)]);
  expect((await verify(store, ledger, { allowPartialUnacknowledged: true })).lost).toHaveLength(1);
});

it('checker: with exact, reports a batch nobody acknowledged', async () => {
  const { store, memory, ledger } = await setUp();
  await saveBatch(memory, scene, 'stray-b1');
  const verdict = await verify(store, ledger, { exact: true });
  expect(verdict.problems).toEqual(['thread t: batch stray-b1 was never acknowledged']);
});
