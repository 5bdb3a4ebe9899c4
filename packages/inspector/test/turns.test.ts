import { InMemoryStore, Memory } from '@engram/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Inspector } from '../src/inspector.ts';
import { type OpenedStore, openStore } from '../src/open.ts';
import { type InspectorServer, startServer } from '../src/server.ts';
import { call } from './http.ts';
import { ADAPTERS, type RecordedTurns, recordTurns, tempDir } from './support.ts';

/** The records as the API sends them (dates as ISO strings). */
const json = (value: unknown) => JSON.parse(JSON.stringify(value));

describe('turn records in the HTTP API', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let opened: OpenedStore;
  let server: InspectorServer;
  let recorded: RecordedTurns;

  beforeAll(async () => {
    tmp = await tempDir();
    const store = await ADAPTERS.find((a) => a.name === 'libsql')!.create('', tmp.dir);
    opened = await openStore(store.spec, store.settings);
    const agent = new Memory({ storage: opened.memory.storage, options: { turnRecords: true } });
    recorded = await recordTurns(agent, 'turn-user');
    server = await startServer(new Inspector({ memory: opened.memory, label: opened.label }));
  });

  afterAll(async () => {
    await server?.close();
    await opened?.close();
    await tmp?.remove();
  });

  it('lists a thread’s turns newest first, with the window, recall hits and token counts', async () => {
    expect((await call(server, '/api/info')).json().turns).toEqual({ supported: true });
    const answer = await call(server, `/api/threads/${encodeURIComponent(recorded.threadId)}/turns`);
    expect(answer.status).toBe(200);
    const body = answer.json();
    expect(body).toEqual({ supported: true, turns: json(recorded.turns), more: false });
    const [newest, oldest] = body.turns;
    expect(newest.history).toEqual(oldest.messageIds);
    expect(newest.recall.hits).toEqual([
      {
        messageId: recorded.recalled.id,
        threadId: recorded.recalled.threadId,
        score: 1.25,
        scores: { keyword: 1.25 },
        window: [recorded.recalled.id],
      },
    ]);
    expect(oldest.history).toEqual([]);
    expect(newest.tokens.history).toBeGreaterThan(0);
  });

  it('pages with limit and before, and answers 404 for an unknown thread or turn', async () => {
    const path = `/api/threads/${encodeURIComponent(recorded.threadId)}/turns`;
    const first = (await call(server, `${path}?limit=1`)).json();
    expect(first.turns.map((t: { id: string }) => t.id)).toEqual([recorded.turns[0]!.id]);
    expect(first.more).toBe(true);
    const next = (
      await call(server, `${path}?limit=1&before=${encodeURIComponent(first.turns[0].id)}`)
    ).json();
    expect(next.turns.map((t: { id: string }) => t.id)).toEqual([recorded.turns[1]!.id]);
    expect(next.more).toBe(false);
    expect((await call(server, `${path}?before=nope`)).status).toBe(404);
    expect((await call(server, '/api/threads/no-such-thread/turns')).status).toBe(404);
    expect((await call(server, `${path}?limit=-1`)).status).toBe(400);
  });

  it('says so when the store keeps no turn records', async () => {
    const memory = new Memory({ storage: new InMemoryStore({ turns: false }) });
    await memory.createThread({ threadId: 't', resourceId: 'r' });
    const plain = await startServer(new Inspector({ memory }));
    try {
      expect((await call(plain, '/api/info')).json().turns).toEqual({ supported: false });
      expect((await call(plain, '/api/threads/t/turns')).json()).toEqual({
        supported: false,
        message: 'memory keeps no turn records (its adapter has no "turns" domain)',
      });
    } finally {
      await plain.close();
    }
  });
});
