import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createLexicalEmbedder, Memory, type MemoryStorage, SemanticRecall } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Inspector } from '../src/inspector.ts';
import { type InspectorServer, startServer } from '../src/server.ts';
import { call } from './http.ts';
import { tempDir, XSS_IMG, XSS_SCRIPT } from './support.ts';

const RECALL = { topK: 3, messageRange: 1, scope: 'resource', mode: 'vector' } as const;

function recallMemory(storage: MemoryStorage, dimensions = 256): Memory {
  return new Memory({
    storage,
    embedder: createLexicalEmbedder({ dimensions }),
    options: { lastMessages: 4, semanticRecall: RECALL, workingMemory: { enabled: true } },
  });
}

describe('recall API (libsql, lexical embedder)', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let storage: LibSQLStore;
  let memory: Memory;
  let readOnly: InspectorServer;
  const user = `user-${randomBytes(4).toString('hex')}`;
  const otherUser = `other-${randomBytes(4).toString('hex')}`;
  const threadA = `a-${randomBytes(4).toString('hex')}`;
  const threadB = `b-${randomBytes(4).toString('hex')}`;
  const query = 'long walks on the beach with Biscuit';
  let bIds: string[];

  beforeAll(async () => {
    tmp = await tempDir();
    storage = new LibSQLStore({ url: `file:${join(tmp.dir, 'recall.db')}` });
    memory = recallMemory(storage);
    await memory.createThread({ resourceId: user, threadId: threadA, title: 'Weekend plans' });
    await memory.createThread({ resourceId: user, threadId: threadB, title: 'About my dog' });
    await memory.createThread({ resourceId: otherUser, title: 'Someone else' });
    const saved = await memory.saveMessages({
      messages: [
        { threadId: threadB, resourceId: user, role: 'user', content: 'I adopted a greyhound last spring.' },
        {
          threadId: threadB,
          resourceId: user,
          role: 'user',
          content: `Biscuit loves long walks on the beach ${XSS_SCRIPT}`,
        },
        { threadId: threadB, resourceId: user, role: 'assistant', content: `Noted ${XSS_IMG}` },
        { threadId: threadB, resourceId: user, role: 'user', content: 'My tax return is due in April.' },
      ],
    });
    bIds = saved.map((m) => m.id);
    const [other] = (await memory.listThreads({ resourceId: otherUser })).threads;
    await memory.saveMessages({
      messages: [
        {
          threadId: other!.id,
          resourceId: otherUser,
          role: 'user',
          content: 'long walks on the beach with Biscuit',
        },
      ],
    });
    await memory.saveMessages({
      messages: [
        {
          threadId: threadA,
          resourceId: user,
          role: 'user',
          content: 'Where can Biscuit walk on the beach?',
        },
      ],
    });
    readOnly = await startServer(new Inspector({ memory }));
  });

  afterAll(async () => {
    await readOnly?.close();
    await storage?.close();
    await tmp?.remove();
  });

  const recall = (body: unknown, options: Parameters<typeof call>[2] = {}) =>
    call(readOnly, `/api/threads/${encodeURIComponent(threadA)}/recall`, {
      method: 'POST',
      body,
      ...options,
    });

  it('needs the token and this origin', async () => {
    expect((await recall({ query }, { token: null })).status).toBe(401);
    expect((await recall({ query }, { token: 'f'.repeat(32) })).status).toBe(401);
    expect((await recall({ query }, { headers: { origin: 'http://evil.example' } })).status).toBe(403);
    expect((await recall({ query }, { headers: { host: 'evil.example' } })).status).toBe(403);
  });

  it('answers a read-only inspector with core’s hits, scores and windows, labelled by thread', async () => {
    const res = await recall({ query });
    expect(res.status).toBe(200);
    const view = res.json();
    const expected = await memory.recall({ threadId: threadA, resourceId: user, query });
    expect(expected.hits.length).toBeGreaterThan(0);
    expect(view.hits.map((h: { message: { id: string } }) => h.message.id)).toEqual(
      expected.hits.map((h) => h.message.id),
    );
    expect(view.hits.map((h: { score: number }) => h.score)).toEqual(expected.hits.map((h) => h.score));
    expect(view.hits.map((h: { window: { id: string }[] }) => h.window.map((m) => m.id))).toEqual(
      expected.hits.map((h) => h.window.map((m) => m.id)),
    );
    const [best] = view.hits;
    expect(best.message.id).toBe(bIds[1]);
    expect(best).toMatchObject({ threadId: threadB, threadTitle: 'About my dog', current: false });
    // messageRange 1: the hit with one neighbour each side, from its own thread.
    expect(best.window.map((m: { id: string }) => m.id)).toEqual(bIds.slice(0, 3));
    expect(best.score).toBeGreaterThan(0.2);
    expect(best.score).toBeLessThanOrEqual(1);
    // Another resource's identical message is never recalled; thread A's own message is history.
    for (const hit of view.hits) expect(hit.threadId).toBe(threadB);
    expect(view.settings).toEqual({ topK: 3, before: 1, after: 1, scope: 'resource' });
    expect(view.space).toEqual({ id: 'engram:lexical-256', dimensions: 256 });
    expect(view.prompt).toContain(`From another conversation (thread ${JSON.stringify(threadB)}):`);
    expect(view.prompt).toContain('Biscuit loves long walks on the beach');
  });

  it('applies overrides through core: scope thread finds nothing outside thread A', async () => {
    const thread = (await recall({ query, scope: 'thread' })).json();
    expect(thread.hits).toEqual([]);
    expect(thread.settings.scope).toBe('thread');
    const one = (await recall({ query, topK: 1, messageRange: 0 })).json();
    expect(one.hits).toHaveLength(1);
    expect(one.hits[0].window.map((m: { id: string }) => m.id)).toEqual([bIds[1]]);
  });

  it('refuses bad input with 400 (415 for a body that is not JSON), and an absent thread with 404', async () => {
    const bad: [unknown, RegExp][] = [
      [{}, /query must be a non-empty string/],
      [{ query: '   ' }, /query must be a non-empty string/],
      [{ query: 42 }, /query must be a non-empty string/],
      [{ query: 'x'.repeat(10_001) }, /at most 10000 characters/],
      [[query], /must be an object/],
      [null, /must be an object/],
      [{ query, topK: 0 }, /topK/],
      [{ query, topK: 'many' }, /topK/],
      [{ query, scope: 'tenant' }, /scope/],
      [{ query, messageRange: -1 }, /messageRange/],
      [{ query, threadId: 'someone-else' }, /unknown recall field "threadId"/],
    ];
    for (const [body, message] of bad) {
      const res = await recall(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json().code).toBe('INVALID_ARGUMENT');
      expect(res.json().message).toMatch(message);
    }
    const notJson = await recall(undefined, { raw: '{"query":' });
    expect(notJson.status).toBe(400);
    expect((await recall(undefined, { raw: query, headers: { 'content-type': 'text/plain' } })).status).toBe(
      415,
    );
    const missing = await call(readOnly, '/api/threads/nope/recall', { method: 'POST', body: { query } });
    expect(missing.status).toBe(404);
    expect(missing.json().code).toBe('NOT_FOUND');
    expect((await call(readOnly, `/api/threads/${threadA}/recall`)).status).toBe(404);
  });

  it('shows core’s refusal of another embedding space, naming both, and never fakes hits', async () => {
    const other = await startServer(new Inspector({ memory: recallMemory(storage, 64) }));
    try {
      const res = await call(other, `/api/threads/${threadA}/recall`, { method: 'POST', body: { query } });
      expect(res.status).toBe(400);
      expect(res.json().code).toBe('INVALID_ARGUMENT');
      expect(res.json().message).toContain('engram:lexical-256 (256 dimensions)');
      expect(res.json().message).toContain('engram:lexical-64 (64 dimensions)');
      const view = (await call(other, `/api/threads/${threadA}`)).json();
      expect(view.turnRecall.error).toContain('engram:lexical-64 (64 dimensions)');
      expect(view.turnRecall.code).toBe('INVALID_ARGUMENT');
    } finally {
      await other.close();
    }
    expect(await storage.vectors.getSpace()).toEqual({ id: 'engram:lexical-256', dimensions: 256 });
  });

  it('writes nothing: on a store with no vectors yet it answers no hits and records no space', async () => {
    const empty = new LibSQLStore({ url: `file:${join(tmp.dir, 'empty.db')}` });
    const plain = new Memory({ storage: empty });
    await plain.createThread({ resourceId: user, threadId: 't1' });
    await plain.saveMessages({
      messages: [{ threadId: 't1', resourceId: user, role: 'user', content: query }],
    });
    const server = await startServer(new Inspector({ memory: recallMemory(empty) }));
    try {
      const view = (await call(server, '/api/threads/t1/recall', { method: 'POST', body: { query } })).json();
      expect(view.hits).toEqual([]);
      expect(view.note).toMatch(/no message of this store has been embedded yet/);
      expect((await call(server, '/api/threads/t1')).json().turnRecall.note).toMatch(/embedded yet/);
      expect(await empty.vectors.getSpace()).toBeNull();
    } finally {
      await server.close();
      await empty.close();
    }
  });

  it('composes this turn’s recall in the thread view exactly as the SemanticRecall processor does', async () => {
    const view = (await call(readOnly, `/api/threads/${threadA}`)).json();
    const history = await memory.getMessages({ threadId: threadA, resourceId: user });
    const out = await new SemanticRecall(memory).processInput({
      messages: history.map((m) => ({ role: m.role, content: m.content })),
      requestContext: { threadId: threadA, resourceId: user },
    });
    const expected = out.find((m) => m.source === 'memory-recall');
    expect(expected?.content).toContain('Biscuit loves long walks');
    expect(view.turnRecall).toEqual({
      query: 'Where can Biscuit walk on the beach?',
      text: expected?.content,
    });
    expect(view.recall).toEqual({
      configured: true,
      reason: '',
      settings: { topK: 3, before: 1, after: 1, scope: 'resource' },
    });
  });
});
