import { fileURLToPath } from 'node:url';
import { InMemoryStore, Memory } from '@engram/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Inspector } from '../src/inspector.ts';
import type { ObservationLogView } from '../src/observations.ts';
import { type OpenedStore, openStore } from '../src/open.ts';
import { type InspectorServer, startServer } from '../src/server.ts';
import { PLAIN } from './fixtures/no-observations.ts';
import { OBSERVED, type ObservedSeed, seedObservedMemory } from './fixtures/observed-memory.ts';
import { call } from './http.ts';

const NO_OBSERVATIONS_MODULE = fileURLToPath(new URL('./fixtures/no-observations.ts', import.meta.url));

describe('observations API (in-memory store, log seeded through core)', () => {
  let seeded: ObservedSeed;
  let server: InspectorServer;

  beforeAll(async () => {
    seeded = await seedObservedMemory();
    server = await startServer(new Inspector({ memory: seeded.memory }));
  });

  afterAll(async () => {
    await server?.close();
  });

  it('needs the token', async () => {
    const res = await call(server, `/api/threads/${seeded.threadId}/observations`, { token: null });
    expect(res.status).toBe(401);
  });

  it('answers the generations, entries, buffered chunks and cursor as stored, and the engine’s tail, tokens and block', async () => {
    const res = await call(server, `/api/threads/${encodeURIComponent(seeded.threadId)}/observations`);
    expect(res.status).toBe(200);
    const view = res.json() as ObservationLogView;
    const target = { threadId: seeded.threadId, resourceId: seeded.resourceId };
    const snapshot = await seeded.memory.observations!.inspect(target);
    const rows = await seeded.memory.storage.observations!.generations(`thread:${seeded.threadId}`);

    expect(view.status).toBe('log');
    expect(view.scope).toBe('thread');
    expect(view.key).toBe(`thread:${seeded.threadId}`);
    expect(view.generation).toBe(2);
    expect(view.version).toBe(rows.at(-1)!.version);
    expect(view.updatedAt).toBe(rows.at(-1)!.updatedAt.toISOString());
    expect(view.generations.map((g) => [g.generation, g.version])).toEqual(
      rows.map((r) => [r.generation, r.version]),
    );
    // Generation 1: the Observer's activated observation; generation 2: the Reflector's, plus a chunk.
    const [first, second] = view.generations;
    expect(first!.entries).toEqual([
      expect.objectContaining({
        threadId: seeded.threadId,
        messages: 4,
        text: expect.stringContaining('Lisbon'),
      }),
    ]);
    expect(first!.chunks).toEqual([]);
    expect(second!.entries).toHaveLength(1);
    expect(second!.entries[0]!.threadId).toBe('');
    expect(second!.chunks).toHaveLength(1);
    expect(second!.chunks[0]!.messageIds).toEqual([seeded.tailIds[0]]);
    expect(second!.currentTask).toBe('Planning the Lisbon trip');
    expect(OBSERVED).toContain(second!.chunks[0]!.text.split('\n')[0]);

    expect(view.cursor).toEqual({
      at: new Date(Date.UTC(2026, 10, 30, 9, 3)).toISOString(),
      id: seeded.observedIds.at(-1),
    });
    expect(view.late).toEqual([]);
    expect(view.block).toBe(snapshot.block);
    expect(view.block).not.toBeNull();
    expect(view.logTokens).toBe(snapshot.logTokens);
    expect(view.tailTokens).toBe(snapshot.tailTokens);
    expect(view.tailMessages).toBe(snapshot.tail.length);
    expect(view.observedMessages).toBe(4);
    expect(view.marks.map((m) => [m.id, m.mark, m.buffered])).toEqual([
      ...seeded.observedIds.map((id) => [id, 'observed', false]),
      [seeded.tailIds[0], 'raw-tail', true],
      [seeded.tailIds[1], 'raw-tail', false],
    ]);
    const tailMarks = view.marks.filter((m) => m.mark === 'raw-tail');
    expect(tailMarks.reduce((sum, m) => sum + m.tokens, 0)).toBe(snapshot.tailTokens);
  });

  it('marks the newest ?last=N messages only, and the thread view carries the same observations', async () => {
    const res = await call(server, `/api/threads/${seeded.threadId}/observations?last=2`);
    expect(res.json().marks.map((m: { id: string }) => m.id)).toEqual(seeded.tailIds);
    const thread = await call(server, `/api/threads/${seeded.threadId}`);
    const full = await call(server, `/api/threads/${seeded.threadId}/observations`);
    expect(thread.json().observations).toEqual(full.json());
  });

  it('says plainly when a thread has no log, and answers 404 for an absent thread', async () => {
    const none = (await call(server, `/api/threads/${seeded.plainThreadId}/observations`)).json();
    // The memory is configured with thread scope: only the thread's key is read.
    expect(none).toEqual({
      status: 'none',
      message: `no observation log (looked at thread:${seeded.plainThreadId}): every message is in the raw tail`,
      keys: [`thread:${seeded.plainThreadId}`],
      marks: [],
    });
    const absent = await call(server, '/api/threads/nope/observations');
    expect(absent.status).toBe(404);
    expect(absent.json().code).toBe('NOT_FOUND');
  });
});

describe('observations of a resource-scope log', () => {
  let seeded: ObservedSeed;

  beforeAll(async () => {
    seeded = await seedObservedMemory(new InMemoryStore(), {}, 'resource');
  });

  it('reads the resource’s log when the thread has none (a URL store: no configured scope)', async () => {
    // As a store opened from a URL: the memory says nothing about observational memory.
    const bare = new Memory({ storage: seeded.memory.storage });
    const view = (await new Inspector({ memory: bare }).observations(seeded.threadId)) as ObservationLogView;
    const snapshot = await seeded.memory.observations!.inspect({
      threadId: seeded.threadId,
      resourceId: seeded.resourceId,
    });
    expect(view.status).toBe('log');
    expect(view.scope).toBe('resource');
    expect(view.key).toBe(`resource:${seeded.resourceId}`);
    expect(view.block).toBe(snapshot.block);
    expect(view.tailTokens).toBe(snapshot.tailTokens);
    expect(view.marks.filter((m) => m.mark === 'observed').map((m) => m.id)).toEqual(seeded.observedIds);
    // Another thread of the resource shares the log but has no cursor of its own: all raw.
    const other = (await new Inspector({ memory: bare }).observations(
      seeded.plainThreadId,
    )) as ObservationLogView;
    expect(other.key).toBe(`resource:${seeded.resourceId}`);
    expect(other.cursor).toBeNull();
  });

  it('reads only the thread’s key when told --observations-scope thread', async () => {
    const bare = new Memory({ storage: seeded.memory.storage });
    const view = await new Inspector({ memory: bare, observationsScope: 'thread' }).observations(
      seeded.threadId,
    );
    expect(view.status).toBe('none');
  });
});

describe('observations on a store without the domain (in-memory, observations: false)', () => {
  let opened: OpenedStore;
  let server: InspectorServer;
  const threadId = PLAIN.threadId;

  beforeAll(async () => {
    opened = await openStore(NO_OBSERVATIONS_MODULE);
    server = await startServer(new Inspector({ memory: opened.memory }));
  });

  afterAll(async () => {
    await server?.close();
    await opened?.close();
  });

  it('says so, in the endpoint, the thread view and /api/info', async () => {
    expect(opened.memory.storage.observations).toBeUndefined();
    const expected = {
      status: 'unsupported',
      message:
        'the memory store has no observations domain: observational memory cannot run on it, so there is no observation log to show',
    };
    const res = await call(server, `/api/threads/${threadId}/observations`);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual(expected);
    const thread = await call(server, `/api/threads/${threadId}`);
    expect(thread.status).toBe(200);
    expect(thread.json().observations).toEqual(expected);
    expect((await call(server, '/api/info')).json().observations).toEqual({ supported: false, scope: null });
  });
});
