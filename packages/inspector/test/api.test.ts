import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { type JsonValue, Memory } from '@engram/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Inspector, RESOURCE_SCAN_PAGE } from '../src/inspector.ts';
import { type OpenedStore, openStore } from '../src/open.ts';
import { checkRequest } from '../src/security.ts';
import { type InspectorServer, startServer } from '../src/server.ts';
import { call } from './http.ts';
import { ADAPTERS, type Seeded, seed, tempDir } from './support.ts';

const libsql = ADAPTERS.find((a) => a.name === 'libsql')!;

describe('HTTP API', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let opened: OpenedStore;
  let memory: Memory;
  let seeded: Seeded;
  let spec: string;
  let readOnly: InspectorServer;
  let editable: InspectorServer;

  beforeAll(async () => {
    tmp = await tempDir();
    const store = await libsql.create('', tmp.dir);
    spec = store.spec;
    opened = await openStore(store.spec, store.settings);
    memory = opened.memory;
    seeded = await seed(memory);
    readOnly = await startServer(new Inspector({ memory, label: opened.label }));
    editable = await startServer(new Inspector({ memory, label: opened.label, allowEdits: true }));
  });

  afterAll(async () => {
    await readOnly?.close();
    await editable?.close();
    await opened?.close();
    await tmp?.remove();
  });

  describe('token', () => {
    it('is required on the page, the assets and the API', async () => {
      for (const path of [
        '/',
        '/assets/app.js',
        '/assets/app.css',
        '/api/info',
        `/api/threads/${seeded.trip}`,
      ]) {
        expect((await call(readOnly, path, { token: null })).status, path).toBe(401);
        expect((await call(readOnly, path, { token: 'f'.repeat(32) })).status, path).toBe(401);
        expect((await call(readOnly, path, { token: readOnly.token.slice(1) })).status, path).toBe(401);
        expect((await call(readOnly, path, { token: editable.token })).status, path).toBe(401);
        expect((await call(readOnly, path)).status, path).toBe(200);
      }
    });

    it('is accepted as ?token= (the printed URL) and is fresh and random per server', async () => {
      const page = await call(readOnly, `/?token=${readOnly.token}`, { token: null });
      expect(page.status).toBe(200);
      expect(readOnly.url).toBe(`http://127.0.0.1:${readOnly.port}/?token=${readOnly.token}`);
      expect(readOnly.token).toMatch(/^[0-9a-f]{32}$/);
      expect(readOnly.token).not.toBe(editable.token);
      const refused = await call(readOnly, '/api/info', { token: null });
      expect(refused.json().message).toContain('token');
      expect(refused.text).not.toContain(readOnly.token);
    });
  });

  describe('loopback only', () => {
    it('listens on 127.0.0.1 and on no other interface', async () => {
      expect(new URL(readOnly.url).hostname).toBe('127.0.0.1');
      const others = Object.values(networkInterfaces())
        .flat()
        .filter((i) => i && !i.internal && i.family === 'IPv4')
        .map((i) => i!.address);
      for (const address of others) {
        const outcome = await new Promise<string>((resolve) => {
          const socket = connect({ host: address, port: readOnly.port });
          socket.once('connect', () => {
            socket.destroy();
            resolve('connected');
          });
          socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
        });
        expect(outcome, address).toBe('ECONNREFUSED');
      }
    });

    it('refuses a client that is not on the loopback interface', () => {
      const url = new URL(`http://127.0.0.1:1234/?token=t`);
      const from = (remoteAddress: string) =>
        checkRequest(
          { socket: { remoteAddress }, headers: { host: '127.0.0.1:1234' } } as never,
          url,
          1234,
          't',
        );
      expect(from('192.0.2.7')?.status).toBe(403);
      expect(from('::ffff:10.0.0.1')?.status).toBe(403);
      expect(from('127.0.0.1')).toBeNull();
      expect(from('::1')).toBeNull();
    });
  });

  describe('other origins', () => {
    it('refuses a foreign Host (DNS rebinding), even with the token', async () => {
      for (const host of [
        'evil.example',
        `evil.example:${readOnly.port}`,
        `127.0.0.1:${readOnly.port + 1}`,
        '',
      ]) {
        const res = await call(readOnly, '/api/info', { headers: { host } });
        expect(res.status, host).toBe(403);
      }
      expect(
        (await call(readOnly, '/api/info', { headers: { host: `localhost:${readOnly.port}` } })).status,
      ).toBe(200);
    });

    it('refuses a foreign Origin and cross-site fetches, even with the token', async () => {
      for (const origin of ['http://evil.example', `http://127.0.0.1:${readOnly.port + 1}`, 'null']) {
        expect((await call(readOnly, '/api/info', { headers: { origin } })).status, origin).toBe(403);
      }
      const put = await call(editable, '/api/working-memory', {
        method: 'PUT',
        headers: { origin: 'http://evil.example' },
        body: { scope: 'resource', resourceId: seeded.resourceId, base: null, value: '{}' },
      });
      expect(put.status).toBe(403);
      expect(
        (await call(readOnly, '/api/info', { headers: { 'sec-fetch-site': 'cross-site' } })).status,
      ).toBe(403);
      expect(
        (await call(readOnly, '/api/info', { headers: { origin: `http://127.0.0.1:${readOnly.port}` } }))
          .status,
      ).toBe(200);
    });

    it('sends a Content-Security-Policy without inline script, and a page without inline script', async () => {
      const page = await call(readOnly, '/');
      const csp = String(page.headers['content-security-policy']);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(page.headers['x-content-type-options']).toBe('nosniff');
      expect(page.headers['referrer-policy']).toBe('no-referrer');
      const scripts = [...page.text.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)];
      expect(scripts.length).toBe(1);
      expect(scripts.every((m) => m[1]!.trim() === '' && /\ssrc="\/assets\//.test(m[0]))).toBe(true);
      expect(page.text).not.toMatch(/\son[a-z]+=/i);
      expect(page.text).not.toMatch(/\sstyle=/i);
    });
  });

  describe('reads', () => {
    it('answers a thread view with an ETag, and 304 until something changes', async () => {
      const first = await call(readOnly, `/api/threads/${encodeURIComponent(seeded.groceries)}`);
      expect(first.status).toBe(200);
      const etag = String(first.headers.etag);
      const again = await call(readOnly, `/api/threads/${seeded.groceries}`, {
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(304);
      await memory.saveMessages({
        messages: [
          { threadId: seeded.groceries, resourceId: seeded.resourceId, role: 'user', content: 'milk' },
        ],
      });
      const changed = await call(readOnly, `/api/threads/${seeded.groceries}`, {
        headers: { 'if-none-match': etag },
      });
      expect(changed.status).toBe(200);
      expect(changed.json().messages.map((m: { content: unknown }) => m.content)).toEqual(['milk']);
    });

    it('reaches ids holding path and query characters', async () => {
      const id = `a/b?c#d%e&f=g ../${Date.now()}`;
      await memory.createThread({ resourceId: seeded.resourceId, threadId: id, title: 'odd id' });
      const res = await call(readOnly, `/api/threads/${encodeURIComponent(id)}`);
      expect(res.status).toBe(200);
      expect(res.json().thread.id).toBe(id);
      const found = await call(
        readOnly,
        `/api/threads?resourceId=${seeded.resourceId}&q=${encodeURIComponent(id)}`,
      );
      expect(found.json().threads.map((t: { id: string }) => t.id)).toEqual([id]);
      await memory.deleteThread(id);
    });

    it('answers NOT_FOUND for an absent thread and 400 for a malformed path', async () => {
      const missing = await call(readOnly, '/api/threads/nope');
      expect(missing.status).toBe(404);
      expect(missing.json().code).toBe('NOT_FOUND');
      expect((await call(readOnly, '/api/threads/%E0%A4%A')).status).toBe(400);
      expect((await call(readOnly, '/assets/..%2Fpackage.json')).status).toBe(404);
      expect((await call(readOnly, '/assets/index.html')).status).toBe(404);
    });

    it("pages through a thread, gives a message's index (ties by id) and searches every message", async () => {
      const thread = await memory.createThread({ resourceId: seeded.resourceId, title: 'paged' });
      const start = Date.UTC(2026, 5, 1);
      const id = (i: number) => `paged-${thread.id}-${String(i).padStart(3, '0')}`;
      const content = (i: number): JsonValue =>
        i === 10
          ? 'a NEEDLE in a string'
          : i === 200
            ? { format: 2, parts: [{ type: 'text', text: 'a needle in a text part' }] }
            : i === 240
              ? { note: 'needle in JSON' }
              : `message ${i}`;
      await memory.saveMessages({
        messages: Array.from({ length: 250 }, (_, i) => ({
          id: id(i),
          threadId: thread.id,
          resourceId: seeded.resourceId,
          role: 'user' as const,
          content: content(i),
          // Three messages an instant: their order is their ids'.
          createdAt: new Date(start + Math.floor(i / 3) * 1_000),
        })),
      });
      const base = `/api/threads/${encodeURIComponent(thread.id)}`;
      const ids = (res: { json: () => { messages: { id: string }[] } }) =>
        res.json().messages.map((m) => m.id);

      const second = await call(readOnly, `${base}/messages?page=1&perPage=100`);
      expect(second.status).toBe(200);
      expect(ids(second)).toEqual(Array.from({ length: 100 }, (_, i) => id(100 + i)));
      expect(second.json()).toMatchObject({ total: 250, page: 1, perPage: 100, hasMore: true });
      const last = await call(readOnly, `${base}/messages?page=2&perPage=100`);
      expect(ids(last)).toEqual(Array.from({ length: 50 }, (_, i) => id(200 + i)));
      expect(last.json().hasMore).toBe(false);
      const newest = await call(readOnly, `${base}/messages?perPage=3&direction=DESC`);
      expect(ids(newest)).toEqual([id(249), id(248), id(247)]);
      const lower = await call(readOnly, `${base}/messages?perPage=3&direction=desc`);
      expect(ids(lower)).toEqual(ids(newest));
      const sideways = await call(readOnly, `${base}/messages?direction=sideways`);
      expect(sideways.status).toBe(400);
      expect(sideways.json().message).toMatch(/direction must be asc or desc/);
      expect((await call(readOnly, `${base}/messages?perPage=5000`)).json().perPage).toBe(1000);

      for (const i of [0, 1, 2, 3, 125, 249]) {
        const at = await call(readOnly, `${base}/messages/${encodeURIComponent(id(i))}`);
        expect(at.json().index).toBe(i);
        expect(at.json().message.id).toBe(id(i));
      }
      const elsewhere = await call(readOnly, `${base}/messages/${encodeURIComponent(seeded.messageIds[0]!)}`);
      expect(elsewhere.status).toBe(404);
      expect((await call(readOnly, `${base}/messages/nope`)).status).toBe(404);

      const found = await call(readOnly, `${base}/search?q=${encodeURIComponent('Needle')}`);
      expect(found.json()).toEqual({
        query: 'Needle',
        matches: [10, 200, 240].map((i) => ({ index: i, id: id(i) })),
        limited: false,
      });
      expect((await call(readOnly, `${base}/search?q=`)).json().matches).toEqual([]);
      expect((await call(readOnly, '/api/threads/nope/search?q=a')).status).toBe(404);
      expect((await call(readOnly, '/api/threads/nope/messages')).status).toBe(404);
      await memory.deleteThread(thread.id);
    });

    it('answers the recall endpoint with UNSUPPORTED: semantic recall is not configured', async () => {
      const res = await call(readOnly, `/api/threads/${seeded.trip}/recall`, {
        method: 'POST',
        body: { query: 'x' },
      });
      const reason =
        'semantic recall is not configured for this memory (it needs an embedder and options.semanticRecall)';
      expect(res.status).toBe(403);
      expect(res.json()).toEqual({ code: 'UNSUPPORTED', message: reason });
      expect((await call(readOnly, '/api/info')).json().recall).toEqual({ configured: false, reason });
      const view = (await call(readOnly, `/api/threads/${seeded.trip}`)).json();
      expect(view.turnRecall).toBeNull();
    });

    it('the prompt panel carries the warning of an assumed configuration, or its refusal', async () => {
      // The seeded store opened from its bare URL: Markdown mode is assumed over schema-mode data.
      const bare = await openStore(spec);
      const markdown = await bare.memory.createThread({ resourceId: 'r-md' });
      await bare.memory.updateWorkingMemory({ resourceId: 'r-md', workingMemory: '# User\n- Name: Ada\n' });
      const server = await startServer(new Inspector({ memory: bare.memory, assumed: bare.assumed }));
      try {
        const refused = (await call(server, `/api/threads/${seeded.trip}`)).json().prompt;
        expect(refused.refused).toBe(true);
        expect(refused.unavailable).toContain("the resource's stored working memory is a JSON object");
        expect(refused.text).toBeUndefined();
        const warned = (await call(server, `/api/threads/${markdown.id}`)).json().prompt;
        expect(warned.text).toContain('Name: Ada');
        expect(warned.warning).toContain('the working-memory mode and template were assumed');
        expect(warned.warning).toContain('--schema <file.json>');
        // Opened with its schema, the same store's prompt is exact: no warning.
        const exact = (await call(readOnly, `/api/threads/${seeded.trip}`)).json().prompt;
        expect(exact.text).toContain('book flights');
        expect(exact.warning).toBeUndefined();
      } finally {
        await server.close();
        await bare.close();
      }
    });

    it('finds threads by id, by key=value metadata and by title', async () => {
      const find = async (q: string) =>
        (await call(readOnly, `/api/threads?resourceId=${seeded.resourceId}&q=${encodeURIComponent(q)}`))
          .json()
          .threads.map((t: { id: string }) => t.id);
      expect(await find(seeded.groceries)).toEqual([seeded.groceries]);
      expect(await find('topic=food')).toEqual([seeded.groceries]);
      expect(await find('trip PLAN')).toEqual([seeded.trip]);
      expect(await find('no such thing')).toEqual([]);
      // Another resource's thread is not found through this resource.
      expect(await find(seeded.otherThread)).toEqual([]);
    });
  });

  describe('edits', () => {
    const put = (server: InspectorServer, body: unknown) =>
      call(server, '/api/working-memory', { method: 'PUT', body });
    const stored = () => memory.getWorkingMemory({ resourceId: seeded.resourceId });

    it('are refused without --allow-edits, leaving storage unchanged', async () => {
      const before = await stored();
      const res = await put(readOnly, {
        scope: 'resource',
        resourceId: seeded.resourceId,
        base: before,
        value: '{}',
      });
      expect(res.status).toBe(403);
      expect(res.json().message).toContain('--allow-edits');
      const del = await call(readOnly, `/api/threads/${seeded.trip}/messages/${seeded.messageIds[2]}`, {
        method: 'DELETE',
      });
      expect(del.status).toBe(403);
      expect(await stored()).toBe(before);
      expect((await memory.storage.listMessagesById({ ids: [seeded.messageIds[2]!] })).length).toBe(1);
    });

    it('replace the document when made from the stored value, and are refused (409) when it changed', async () => {
      const base = await stored();
      const ok = await put(editable, {
        scope: 'resource',
        resourceId: seeded.resourceId,
        base,
        value: '{"name":"Grace"}',
      });
      expect(ok.status).toBe(200);
      expect(await stored()).toBe('{"name":"Grace"}');
      const stale = await put(editable, {
        scope: 'resource',
        resourceId: seeded.resourceId,
        base,
        value: '{"name":"X"}',
      });
      expect(stale.status).toBe(409);
      expect(stale.json().code).toBe('CONFLICT');
      expect(await stored()).toBe('{"name":"Grace"}');
    });

    it('let exactly one of many concurrent edits from one value win', async () => {
      const base = await stored();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          put(editable, {
            scope: 'resource',
            resourceId: seeded.resourceId,
            base,
            value: `{"name":"w${i}"}`,
          }),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      const winner = results.findIndex((r) => r.status === 200);
      expect(await stored()).toBe(`{"name":"w${winner}"}`);
    });

    it('are validated against the schema (422 with the issues), nothing written', async () => {
      const base = await stored();
      const invalid = await put(editable, {
        scope: 'resource',
        resourceId: seeded.resourceId,
        base,
        value: '{"name":42}',
      });
      expect(invalid.status).toBe(422);
      expect(invalid.json().issues.join(' ')).toContain('name');
      const notJson = await put(editable, {
        scope: 'resource',
        resourceId: seeded.resourceId,
        base,
        value: '{oops',
      });
      expect(notJson.status).toBe(422);
      const wrongType = await call(editable, '/api/working-memory', {
        method: 'PUT',
        headers: { 'content-type': 'text/plain' },
        body: { scope: 'resource', resourceId: seeded.resourceId, base, value: '{}' },
      });
      expect(wrongType.status).toBe(415);
      expect(await stored()).toBe(base);
    });

    it('reach the thread scope too, and refuse a thread of another resource', async () => {
      const thread = await memory.getThreadById({ threadId: seeded.groceries });
      expect(thread?.metadata.workingMemory).toBeUndefined();
      const ok = await put(editable, {
        scope: 'thread',
        threadId: seeded.groceries,
        resourceId: seeded.resourceId,
        base: null,
        value: '{"city":"Oslo"}',
      });
      expect(ok.status).toBe(200);
      expect((await memory.getThreadById({ threadId: seeded.groceries }))?.metadata.workingMemory).toBe(
        '{"city":"Oslo"}',
      );
      const foreign = await put(editable, {
        scope: 'thread',
        threadId: seeded.otherThread,
        resourceId: seeded.resourceId,
        base: null,
        value: '{}',
      });
      expect(foreign.status).toBe(400);
      expect(
        (await memory.getThreadById({ threadId: seeded.otherThread }))?.metadata.workingMemory,
      ).toBeUndefined();
    });

    it('delete a message only through its own thread', async () => {
      const id = seeded.messageIds[2]!;
      const wrong = await call(editable, `/api/threads/${seeded.groceries}/messages/${id}`, {
        method: 'DELETE',
      });
      expect(wrong.status).toBe(404);
      expect((await memory.storage.listMessagesById({ ids: [id] })).length).toBe(1);
      const ok = await call(editable, `/api/threads/${seeded.trip}/messages/${id}`, { method: 'DELETE' });
      expect(ok.status).toBe(204);
      expect(await memory.storage.listMessagesById({ ids: [id] })).toEqual([]);
    });
  });

  describe('an unreachable store', () => {
    it('answers 503 CONNECTION with a clear message, and the page still loads to say so', async () => {
      const { PostgresStore } = await import('@engram/pg');
      const { Memory } = await import('@engram/core');
      const storage = new PostgresStore({
        connectionString: 'postgres://nobody@127.0.0.1:9/none',
        connectTimeoutMs: 1_000,
      });
      const down = await startServer(new Inspector({ memory: new Memory({ storage }) }));
      try {
        expect((await call(down, '/')).status).toBe(200);
        const res = await call(down, '/api/resources?page=0');
        expect(res.status).toBe(503);
        expect(res.json().code).toBe('CONNECTION');
        expect(res.json().message).toMatch(/^pg: /);
      } finally {
        await down.close();
        await storage.close();
      }
    });
  });

  describe('resource scan', () => {
    it('walks every thread in steps and finds every resource', async () => {
      const prefix = `scan-${Date.now()}`;
      for (let i = 0; i < RESOURCE_SCAN_PAGE + 20; i++) {
        await memory.createThread({ resourceId: `${prefix}-${i % 3}`, threadId: `${prefix}-t${i}` });
      }
      const found = new Map<string, number>();
      let steps = 0;
      for (let page = 0; ; page++) {
        const step = (await call(readOnly, `/api/resources?page=${page}`)).json();
        steps++;
        for (const r of step.resources) found.set(r.id, (found.get(r.id) ?? 0) + r.threads);
        expect(step.scanned).toBeLessThanOrEqual(step.total);
        if (!step.hasMore) break;
      }
      expect(steps).toBe(2);
      expect([0, 1, 2].map((i) => found.get(`${prefix}-${i}`))).toEqual([74, 73, 73]);
      expect(found.get(seeded.resourceId)).toBe(3);
    });
  });

  describe('the recorded configuration', () => {
    it('/api/info shows the memory-config a schema-mode Memory wrote, used for a bare URL; none: assumed', async () => {
      const url = `file:${tmp.dir}/recorded-api.db`;
      const schema = { type: 'object', properties: { city: { type: 'string' } } };
      const writer = await openStore(url);
      const agent = new Memory({
        storage: writer.memory.storage,
        options: {
          lastMessages: 3,
          workingMemory: { schema },
          semanticRecall: { mode: 'keyword', topK: 4, messageRange: { before: 0, after: 2 } },
        },
      });
      await agent.createThread({ resourceId: 'r-api' });
      await writer.close();
      const bareUrl = `file:${tmp.dir}/bare-api.db`;
      await (await openStore(bareUrl)).close();

      const info = async (spec: string) => {
        const reader = await openStore(spec);
        const server = await startServer(
          new Inspector({
            memory: reader.memory,
            label: reader.label,
            assumed: reader.assumed,
            configuration: reader.configuration,
          }),
        );
        try {
          return (await call(server, '/api/info')).json();
        } finally {
          await server.close();
          await reader.close();
        }
      };
      const recorded = await info(url);
      expect(recorded.configuration.source).toBe('recorded');
      expect(recorded.configuration.recorded).toMatchObject({
        v: 1,
        workingMemory: {
          mode: 'schema',
          scope: 'resource',
          schema,
          sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        },
        lastMessages: 3,
        semanticRecall: {
          mode: 'keyword',
          topK: 4,
          messageRange: { before: 0, after: 2 },
          scope: 'resource',
        },
      });
      expect(recorded.workingMemory.format).toBe('json');
      expect(JSON.parse(recorded.workingMemory.template)).toEqual(schema);
      expect(recorded.lastMessages).toBe(3);
      expect(recorded.recall).toEqual({
        configured: true,
        reason: '',
        settings: { topK: 4, before: 0, after: 2, scope: 'resource' },
      });
      const bare = await info(bareUrl);
      expect(bare.configuration).toEqual({ source: 'assumed', recorded: null });
      expect(bare.workingMemory.format).toBe('markdown');
    });
  });
});
