import type { MemoryStorage } from '@engram/core';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MongoDBStore } from '../src/index.ts';
import { describeMongo, dropDatabase, randomDbName } from './env.ts';
import { message, thread } from './fixtures.ts';

/** An id that would be a query operator if it ever reached a filter. */
const HOSTILE = { $gt: '' } as unknown as string;

/** Every public method, called with the hostile id in each id position it takes. */
const CALLS: Array<[string, (store: MemoryStorage) => Promise<unknown>]> = [
  ['getThreadById threadId', (s) => s.getThreadById({ threadId: HOSTILE })],
  ['getThreadById resourceId', (s) => s.getThreadById({ threadId: 't', resourceId: HOSTILE })],
  ['saveThread id', (s) => s.saveThread({ ...thread(), id: HOSTILE })],
  ['saveThread resourceId', (s) => s.saveThread({ ...thread(), resourceId: HOSTILE })],
  ['updateThread id', (s) => s.updateThread({ id: HOSTILE, title: 'x' })],
  ['deleteThread threadId', (s) => s.deleteThread({ threadId: HOSTILE })],
  ['listThreads resourceId', (s) => s.listThreads({ resourceId: HOSTILE })],
  ['saveMessages id', (s) => s.saveMessages([{ ...message(thread(), 1), id: HOSTILE }])],
  ['saveMessages threadId', (s) => s.saveMessages([{ ...message(thread(), 1), threadId: HOSTILE }])],
  ['saveMessages resourceId', (s) => s.saveMessages([{ ...message(thread(), 1), resourceId: HOSTILE }])],
  ['listMessages threadId', (s) => s.listMessages({ threadId: HOSTILE })],
  ['listMessages resourceId', (s) => s.listMessages({ threadId: 't', resourceId: HOSTILE })],
  ['listMessages include id', (s) => s.listMessages({ threadId: 't', include: [{ id: HOSTILE }] })],
  ['listMessagesById ids', (s) => s.listMessagesById({ ids: [HOSTILE] })],
  ['updateMessages id', (s) => s.updateMessages([{ id: HOSTILE, content: 'x' }])],
  ['deleteMessages ids', (s) => s.deleteMessages([HOSTILE])],
  ['getResourceById resourceId', (s) => s.getResourceById({ resourceId: HOSTILE })],
  ['updateResource resourceId', (s) => s.updateResource({ resourceId: HOSTILE, workingMemory: 'x' })],
  [
    'updateWorkingMemoryAtomically resourceId',
    (s) => s.updateWorkingMemoryAtomically!({ scope: 'resource', resourceId: HOSTILE, update: () => 'x' }),
  ],
  [
    'updateWorkingMemoryAtomically threadId',
    (s) => s.updateWorkingMemoryAtomically!({ scope: 'thread', threadId: HOSTILE, update: () => 'x' }),
  ],
];

describeMongo('MongoDBStore rejects operator-shaped ids before any command is sent', (url) => {
  const dbName = randomDbName();
  let client: MongoClient;
  let store: MongoDBStore;
  const commands: string[] = [];

  beforeAll(async () => {
    client = new MongoClient(url, { monitorCommands: true, serverSelectionTimeoutMS: 5_000 });
    client.on('commandStarted', (event) => commands.push(event.commandName));
    store = new MongoDBStore({ client, dbName });
    await store.init();
  });

  afterAll(async () => {
    await store?.close();
    await client?.close();
    await dropDatabase(url, dbName);
  });

  it('the command monitor sees the store’s own commands (the probe works)', async () => {
    commands.length = 0;
    await store.getThreadById({ threadId: 'absent' });
    expect(commands).toContain('find');
  });

  for (const [name, call] of CALLS) {
    it(`${name}: INVALID_ARGUMENT, no command`, async () => {
      commands.length = 0;
      await expect(call(store)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(commands).toEqual([]);
    });
  }

  it('an operator-shaped metadata filter value is data, never a query', async () => {
    const t = thread({ metadata: { k: 'v' } });
    await store.saveThread(t);
    const listed = await store.listThreads({ resourceId: t.resourceId, metadata: { k: { $ne: 'nothing' } } });
    expect(listed.threads).toEqual([]);
    const stored = thread({ resourceId: t.resourceId, metadata: { k: { $ne: 'nothing' } } });
    await store.saveThread(stored);
    const again = await store.listThreads({ resourceId: t.resourceId, metadata: { k: { $ne: 'nothing' } } });
    expect(again.threads.map((x) => x.id)).toEqual([stored.id]);
  });
});
