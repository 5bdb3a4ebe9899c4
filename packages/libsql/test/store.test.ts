import { isMemoryError, type JsonValue, type Thread } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { messagePageStatements } from '../src/sql.ts';
import { exited, runScript, send, tempDir, waitForLine } from './helpers.ts';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function fileUrl(): { url: string; file: string } {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  const file = `${dir}/store.db`;
  return { url: `file:${file}`, file };
}

async function open(url: string): Promise<LibSQLStore> {
  const store = new LibSQLStore({ url });
  cleanups.push(() => store.close());
  await store.init();
  return store;
}

function thread(id: string, resourceId: string, at: number, metadata: Thread['metadata'] = {}): Thread {
  return { id, resourceId, title: id, metadata, createdAt: new Date(at), updatedAt: new Date(at) };
}

describe('libsql: options', () => {
  it('rejects missing or malformed options with INVALID_ARGUMENT', () => {
    const bad: unknown[] = [
      undefined,
      {},
      { url: '' },
      { url: 'file:x.db', busyTimeoutMs: 0 },
      { url: 'file:x.db', busyTimeoutMs: 1.5 },
      { url: 'file:x.db', synchronous: 'off' },
    ];
    for (const options of bad) {
      let error: unknown;
      try {
        new LibSQLStore(options as never);
      } catch (e) {
        error = e;
      }
      expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    }
  });

  it('reports an unsupported URL as INVALID_ARGUMENT on first use', async () => {
    const store = new LibSQLStore({ url: 'ftp://example.com/db' });
    const error = await store.init().catch((e: unknown) => e);
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((error as Error).message).toMatch(/^libsql: init failed/);
  });

  it('declares :memory: process-local and file: not', () => {
    expect(new LibSQLStore({ url: ':memory:' }).capabilities).toEqual({
      atomicWorkingMemory: true,
      transactionalBatches: true,
      processLocal: true,
    });
    expect(new LibSQLStore({ url: 'file:x.db' }).capabilities.processLocal).toBe(false);
  });

  it('gives each :memory: store its own database', async () => {
    const a = await open(':memory:');
    const b = await open(':memory:');
    await a.saveThread(thread('t', 'r', 1));
    expect(await a.getThreadById({ threadId: 't' })).not.toBeNull();
    expect(await b.getThreadById({ threadId: 't' })).toBeNull();
  });
});

describe('libsql: storage layout', () => {
  it('stores dates as integer milliseconds and JSON as text, not double-encoded', async () => {
    const { url } = fileUrl();
    const store = await open(url);
    const at = Date.UTC(2025, 4, 6, 7, 8, 9, 123);
    await store.saveThread(thread('t1', 'r1', at, { nested: { a: [1, 'x'] } }));
    await store.saveMessages([
      {
        id: 'm1',
        threadId: 't1',
        resourceId: 'r1',
        role: 'user',
        content: { format: 2, parts: [{ type: 'text', text: 'hi' }] },
        type: 'v2',
        createdAt: new Date(at),
      },
    ]);
    const raw = createClient({ url });
    try {
      const t = await raw.execute(
        "SELECT typeof(created_at) AS ct, created_at, json_type(metadata) AS mt, json_extract(metadata, '$.nested.a[1]') AS x FROM engram_threads",
      );
      expect(t.rows[0]).toMatchObject({ ct: 'integer', created_at: at, mt: 'object', x: 'x' });
      const m = await raw.execute(
        'SELECT typeof(created_at) AS ct, json_type(content) AS jt FROM engram_messages',
      );
      expect(m.rows[0]).toMatchObject({ ct: 'integer', jt: 'object' });
    } finally {
      raw.close();
    }
  });

  it('lists a thread page through the (thread_id, created_at, id) index', async () => {
    const { url } = fileUrl();
    await open(url);
    const raw = createClient({ url });
    try {
      const { rows } = messagePageStatements({ threadId: 't', direction: 'DESC' }, { limit: 10, offset: 0 });
      const plan = await raw.execute({ sql: `EXPLAIN QUERY PLAN ${rows.sql}`, args: rows.args });
      const detail = plan.rows.map((r) => String(r.detail)).join('\n');
      expect(detail).toContain('engram_messages_thread_created_id');
      expect(detail).not.toMatch(/TEMP B-TREE/);
    } finally {
      raw.close();
    }
  });

  it('counts a thread from the kept counts, without reading its messages', async () => {
    const { url } = fileUrl();
    await open(url);
    const raw = createClient({ url });
    try {
      for (const resourceId of [undefined, 'r']) {
        const { count } = messagePageStatements({ threadId: 't', resourceId, direction: 'DESC' });
        const plan = await raw.execute({ sql: `EXPLAIN QUERY PLAN ${count.sql}`, args: count.args });
        const detail = plan.rows.map((r) => String(r.detail)).join('\n');
        expect(detail).toContain('engram_message_counts');
        expect(detail).not.toContain('engram_messages ');
      }
    } finally {
      raw.close();
    }
  });

  it('reads a page and its total in one statement (the total a scalar subquery), an empty page apart', async () => {
    const { url } = fileUrl();
    const store = await open(url);
    for (const id of ['t1', 't2', 't3']) await store.saveThread(thread(id, 'r', 1));
    await store.saveMessages(
      Array.from({ length: 5 }, (_, i) => ({
        id: `m${i}`,
        threadId: 't1',
        resourceId: 'r',
        role: 'user' as const,
        content: `message ${i}`,
        type: 'text',
        createdAt: new Date(10 + i),
      })),
    );
    const raw = createClient({ url });
    try {
      const { rows } = messagePageStatements({ threadId: 't1', direction: 'DESC' }, { limit: 2, offset: 0 });
      const page = await raw.execute(rows);
      expect(page.rows.map((r) => [r.id, Number(r.page_total)])).toEqual([
        ['m4', 5],
        ['m3', 5],
      ]);
      const plan = await raw.execute({ sql: `EXPLAIN QUERY PLAN ${rows.sql}`, args: rows.args });
      const detail = plan.rows.map((r) => String(r.detail)).join('\n');
      expect(detail).toMatch(/SCALAR SUBQUERY[\s\S]*engram_message_counts/);
      expect(detail).not.toMatch(/TEMP B-TREE/);
    } finally {
      raw.close();
    }
    const messages = await store.listMessages({ threadId: 't1', perPage: 2, direction: 'DESC' });
    expect([messages.messages.map((m) => m.id), messages.total]).toEqual([['m4', 'm3'], 5]);
    const past = await store.listMessages({ threadId: 't1', page: 9, perPage: 2 });
    expect([past.messages.length, past.total]).toEqual([0, 5]);
    const threads = await store.listThreads({ resourceId: 'r', perPage: 2 });
    expect([threads.threads.length, threads.total]).toEqual([2, 3]);
    const none = await store.listThreads({ resourceId: 'r', page: 9, perPage: 2 });
    expect([none.threads.length, none.total]).toEqual([0, 3]);
    expect(Object.keys(threads.threads[0] ?? {}).sort()).toEqual([
      'createdAt',
      'id',
      'metadata',
      'resourceId',
      'title',
      'updatedAt',
    ]);
  });

  it('keeps the message counts equal to the messages through saves, moves and deletes', async () => {
    const { url } = fileUrl();
    const store = await open(url);
    for (const [id, r] of [
      ['t1', 'r1'],
      ['t2', 'r1'],
      ['t3', 'r2'],
    ] as const)
      await store.saveThread(thread(id, r, 1));
    const msg = (id: string, threadId: string, resourceId: string) => ({
      id,
      threadId,
      resourceId,
      role: 'user' as const,
      content: id,
      type: 'text',
      createdAt: new Date(10),
    });
    await store.saveMessages([
      msg('a', 't1', 'r1'),
      msg('b', 't1', 'r1'),
      msg('c', 't2', 'r1'),
      msg('d', 't3', 'r2'),
    ]);
    await store.saveMessages([msg('a', 't1', 'r1'), msg('b', 't2', 'r1'), msg('e', 't1', 'r1')]); // b moves to t2
    await store.saveThread(thread('t3', 'r1', 1)); // t3 changes owner; d keeps resource r2
    // d still belongs to r2: saving it under r1 is refused with the whole batch, counts untouched.
    await expect(store.saveMessages([msg('f', 't3', 'r1'), msg('d', 't3', 'r1')])).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await store.saveMessages([msg('f', 't3', 'r1')]);
    await store.deleteMessages(['c', 'nope']);
    await store.saveThread(thread('t4', 'r3', 1));
    await store.saveMessages([msg('g', 't4', 'r3')]);
    await store.deleteThread({ threadId: 't4' });
    const raw = createClient({ url });
    try {
      const kept = await raw.execute(
        'SELECT thread_id, resource_id, n FROM engram_message_counts ORDER BY 1, 2',
      );
      const actual = await raw.execute(
        'SELECT thread_id, resource_id, COUNT(*) AS n FROM engram_messages GROUP BY 1, 2 ORDER BY 1, 2',
      );
      expect(kept.rows.map((r) => ({ ...r }))).toEqual(actual.rows.map((r) => ({ ...r })));
      expect(kept.rows.map((r) => [r.thread_id, r.resource_id, r.n])).toEqual([
        ['t1', 'r1', 2],
        ['t2', 'r1', 1],
        ['t3', 'r1', 1],
        ['t3', 'r2', 1],
      ]);
    } finally {
      raw.close();
    }
    expect((await store.listMessages({ threadId: 't3' })).total).toBe(2);
    expect((await store.listMessages({ threadId: 't3', resourceId: 'r2' })).total).toBe(1);
    expect((await store.listMessages({ threadId: 't1', dateRange: { start: new Date(11) } })).total).toBe(0);
  });

  it("saves one thread's new messages in one statement and leaves stored ids to the full save", async () => {
    const { url } = fileUrl();
    const store = await open(url);
    await store.saveThread(thread('t1', 'r1', 1));
    await store.saveThread(thread('t2', 'r1', 1));
    await store.saveThread(thread('t3', 'r2', 1));
    const msg = (id: string, threadId: string, resourceId: string, content: JsonValue = id) => ({
      id,
      threadId,
      resourceId,
      role: 'user' as const,
      content,
      type: 'text',
      createdAt: new Date(10),
    });
    const tricky = {
      q: 'a "quoted" \\ back\nslash',
      nul: 'x\u0000y',
      ls: '\u2028\u2029',
      e: '🦉',
      n: [1.5, -2, null, true],
    };
    const before = Date.now();
    const saved = await store.saveMessages([msg('a', 't1', 'r1'), msg('b', 't1', 'r1', tricky)]);
    expect(saved[1]).toEqual(msg('b', 't1', 'r1', tricky));
    expect((await store.getThreadById({ threadId: 't1' }))!.updatedAt.getTime()).toBeGreaterThanOrEqual(
      before,
    );
    // A re-save and a new message: the statement refuses it (a is stored), the full save writes both.
    await store.saveMessages([msg('a', 't1', 'r1', 'changed'), msg('c', 't1', 'r1')]);
    await store.saveMessages([msg('b', 't2', 'r1', tricky)]); // moves b to t2
    // Another resource's message or thread, a missing thread: refused, nothing written.
    await expect(store.saveMessages([msg('x', 't3', 'r2'), msg('c', 't3', 'r2')])).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(store.saveMessages([msg('y', 't3', 'r1')])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(store.saveMessages([msg('z', 'missing', 'r1')])).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await store.listMessagesById({ ids: ['x', 'y', 'z'] })).toEqual([]);
    expect((await store.listMessagesById({ ids: ['a', 'b'] })).map((m) => [m.threadId, m.content])).toEqual([
      ['t1', 'changed'],
      ['t2', tricky],
    ]);
    const raw = createClient({ url });
    try {
      const stored = await raw.execute("SELECT content FROM engram_messages WHERE id = 'b'");
      expect(stored.rows[0]?.content).toBe(JSON.stringify(tricky));
      const kept = await raw.execute(
        'SELECT thread_id, resource_id, n FROM engram_message_counts ORDER BY 1, 2',
      );
      expect(kept.rows.map((r) => [r.thread_id, r.resource_id, r.n])).toEqual([
        ['t1', 'r1', 2],
        ['t2', 'r1', 1],
      ]);
      const view = await raw.execute('SELECT COUNT(*) AS n FROM engram_message_batches');
      expect(view.rows[0]?.n).toBe(0);
    } finally {
      raw.close();
    }
  });

  it('orders ids by their bytes (BINARY), like compareIds', async () => {
    const store = await open(':memory:');
    const ids = ['b', 'B', 'a', '_', 'é', 'Z', '10', '9', 'a:b'];
    for (const id of ids) await store.saveThread(thread(id, 'r', 1000));
    const { threads } = await store.listThreads({ resourceId: 'r', direction: 'ASC' });
    const bytes = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(threads.map((t) => t.id)).toEqual(bytes);
  });
});

describe('libsql: metadata filters', () => {
  it('compares filter values as JSON values of the right type', async () => {
    const store = await open(':memory:');
    await store.saveThread(thread('n', 'r', 1, { v: 1 }));
    await store.saveThread(thread('s', 'r', 2, { v: '1' }));
    await store.saveThread(thread('b', 'r', 3, { v: true }));
    await store.saveThread(thread('z', 'r', 4, { v: null }));
    await store.saveThread(thread('o', 'r', 5, { v: { a: 1, b: [2, { c: 3 }] } }));
    await store.saveThread(thread('k', 'r', 6, { 'a.b': 'dot', 'q"k': 'quote', $: 'dollar' }));
    const ids = async (metadata: Thread['metadata']) =>
      (await store.listThreads({ metadata, direction: 'ASC' })).threads.map((t) => t.id);
    expect(await ids({ v: 1 })).toEqual(['n']);
    expect(await ids({ v: '1' })).toEqual(['s']);
    expect(await ids({ v: true })).toEqual(['b']);
    expect(await ids({ v: null })).toEqual(['z']);
    expect(await ids({ v: { b: [2, { c: 3 }], a: 1 } })).toEqual(['o']);
    expect(await ids({ v: { a: 1 } })).toEqual([]);
    expect(await ids({ 'a.b': 'dot', 'q"k': 'quote', $: 'dollar' })).toEqual(['k']);
    expect(await ids({ missing: null })).toEqual([]);
    const page = await store.listThreads({ metadata: { v: { a: 1, b: [2, { c: 3 }] } }, perPage: 0 });
    expect(page).toMatchObject({ threads: [], total: 1 });
  });
});

describe('libsql: locking', () => {
  it('runs a working-memory update that lost its compare-and-set again under the write lock, on the value another writer left', async () => {
    const { url } = fileUrl();
    const store = await open(url);
    await store.updateResource({ resourceId: 'r1', workingMemory: 'v0' });
    const other = createClient({ url, timeout: 5_000 });
    cleanups.push(() => other.close());
    // An update that starts a write on another connection: it lands between the store's read and
    // its compare-and-set (the embedded client runs statements in call order), so that attempt
    // loses and the update runs again on the value the other writer left.
    const race = async (resourceId: string, writes: string[]) => {
      const seen: (string | null)[] = [];
      const pending: Promise<unknown>[] = [];
      const result = await store.updateWorkingMemoryAtomically({
        scope: 'resource',
        resourceId,
        update: (current) => {
          seen.push(current);
          const sql = writes[seen.length - 1];
          if (sql) pending.push(other.execute(sql));
          return `${current}+mine`;
        },
      });
      await Promise.all(pending);
      return { seen, result, stored: (await store.getResourceById({ resourceId }))?.workingMemory };
    };
    const set = (id: string, value: string) =>
      `UPDATE engram_resources SET working_memory = '${value}' WHERE id = '${id}'`;
    expect(await race('r1', [set('r1', 'v1')])).toEqual({
      seen: ['v0', 'v1'],
      result: 'v1+mine',
      stored: 'v1+mine',
    });
    expect(await race('r2', ["INSERT INTO engram_resources VALUES ('r2', 'v1', '{}', 1, 1)"])).toEqual({
      seen: [null, 'v1'],
      result: 'v1+mine',
      stored: 'v1+mine',
    });
    // A thread's working memory: the compare-and-set is on the value in its metadata.
    await store.saveThread(thread('t1', 'r1', 1, { workingMemory: 'w0', other: 1 }));
    const setThread = `UPDATE engram_threads SET metadata = json_set(metadata, '$.workingMemory', 'w1') WHERE id = 't1'`;
    const seen: (string | null)[] = [];
    const result = await store.updateWorkingMemoryAtomically({
      scope: 'thread',
      threadId: 't1',
      update: (current) => {
        seen.push(current);
        if (seen.length === 1) void other.execute(setThread);
        return `${current}+mine`;
      },
    });
    expect({ seen, result }).toEqual({ seen: ['w0', 'w1'], result: 'w1+mine' });
    expect((await store.getThreadById({ threadId: 't1' }))?.metadata).toEqual({
      workingMemory: 'w1+mine',
      other: 1,
    });
    // Lost a race within the last second: straight to the write lock, one run.
    expect(await race('r1', [])).toEqual({
      seen: ['v1+mine'],
      result: 'v1+mine+mine',
      stored: 'v1+mine+mine',
    });
  });

  it('waits for a write lock held by another process instead of failing', async () => {
    const { url, file } = fileUrl();
    const store = await open(url);
    const holder = runScript('./fixtures/hold-write-lock.ts', { ENGRAM_LIBSQL_FILE: file, HOLD_MS: '300' });
    await waitForLine(holder, 'locked');
    send(holder, 'go');
    const started = Date.now();
    await store.updateResource({ resourceId: 'r', metadata: { waited: true } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(await exited(holder)).toBe(0);
    expect((await store.getResourceById({ resourceId: 'r' }))?.metadata).toEqual({ waited: true });
  });

  it('runs concurrent merges of several stores of one process on one file without deadlock', async () => {
    const { url } = fileUrl();
    const stores = await Promise.all([open(url), open(url), open(url)]);
    await stores[0]!.saveThread(thread('t', 'r', 1));
    await Promise.all(
      stores.flatMap((store, s) =>
        Array.from({ length: 10 }, (_, i) =>
          Promise.all([
            store.updateThread({ id: 't', metadata: { [`s${s}-${i}`]: i } }),
            store.updateWorkingMemoryAtomically({
              scope: 'resource',
              resourceId: 'r',
              update: (current) => `${current ?? ''}[${s}-${i}]`,
            }),
          ]),
        ),
      ),
    );
    const stored = await stores[1]!.getThreadById({ threadId: 't' });
    expect(Object.keys(stored!.metadata)).toHaveLength(30);
    const memory = (await stores[2]!.getResourceById({ resourceId: 'r' }))!.workingMemory!;
    expect(memory.match(/\[\d-\d\]/g)).toHaveLength(30);
  });
});

describe('libsql: lifecycle and errors', () => {
  it('closes idempotently and then refuses work with CONNECTION', async () => {
    const store = await open(':memory:');
    await store.close();
    await store.close();
    const error = await store.getThreadById({ threadId: 't' }).catch((e: unknown) => e);
    expect(isMemoryError(error, 'CONNECTION')).toBe(true);
  });

  it('maps a client closed underneath it to CONNECTION, never to an empty result', async () => {
    const { url } = fileUrl();
    const client = createClient({ url, timeout: 5000 });
    const store = new LibSQLStore({ client });
    await store.init();
    await store.saveThread(thread('t', 'r', 1));
    client.close();
    for (const read of [
      () => store.getThreadById({ threadId: 't' }),
      () => store.listThreads({ resourceId: 'r' }),
      () => store.listMessages({ threadId: 't' }),
    ]) {
      const error = await read().catch((e: unknown) => e);
      expect(isMemoryError(error, 'CONNECTION')).toBe(true);
    }
  });

  it("synchronous: 'normal' keeps every committed write for the next store on the file", async () => {
    const { url } = fileUrl();
    const fast = new LibSQLStore({ url, synchronous: 'normal' });
    await fast.init();
    await fast.saveThread(thread('t', 'r', 1));
    await fast.updateResource({ resourceId: 'r', workingMemory: 'kept', metadata: { a: 1 } });
    await fast.updateResource({ resourceId: 'r', workingMemory: 'replaced' });
    await fast.close();
    const next = await open(url);
    const resource = await next.getResourceById({ resourceId: 'r' });
    expect(resource?.workingMemory).toBe('replaced');
    expect(resource?.metadata).toEqual({ a: 1 });
    expect(resource && resource.updatedAt >= resource.createdAt).toBe(true);
    expect(await next.getThreadById({ threadId: 't' })).not.toBeNull();
  });

  it('leaves an injected client open and gives it a busy timeout when it has none', async () => {
    const { url } = fileUrl();
    const client = createClient({ url });
    cleanups.push(() => client.close());
    const store = new LibSQLStore({ client, busyTimeoutMs: 1234 });
    await store.init();
    await store.close();
    const timeout = await client.execute('PRAGMA busy_timeout');
    expect(Number(timeout.rows[0]?.[0])).toBe(1234);
    expect((await client.execute('SELECT COUNT(*) AS n FROM engram_threads')).rows[0]?.n).toBe(0);
  });

  it('rolls back a failed saveMessages completely', async () => {
    const store = await open(':memory:');
    await store.saveThread(thread('t', 'r', 1));
    const ok = {
      id: 'm1',
      threadId: 't',
      resourceId: 'r',
      role: 'user' as const,
      content: 'x',
      type: 'text',
      createdAt: new Date(5),
    };
    const error = await store
      .saveMessages([ok, { ...ok, id: 'm2', threadId: 'missing' }])
      .catch((e: unknown) => e);
    expect(isMemoryError(error, 'NOT_FOUND')).toBe(true);
    expect(await store.listMessagesById({ ids: ['m1'] })).toEqual([]);
    expect((await store.getThreadById({ threadId: 't' }))?.updatedAt).toEqual(new Date(1));
  });
});

describe('libsql: without init()', () => {
  it('creates the tables on first use, and init() after close() is refused', async () => {
    const store = new LibSQLStore({ url: ':memory:' });
    cleanups.push(() => store.close());
    expect(await store.getThreadById({ threadId: 't' })).toBeNull();
    await store.saveThread(thread('t', 'r', 1));
    expect((await store.getThreadById({ threadId: 't' }))?.id).toBe('t');
    await store.close();
    const error = await store.init().catch((e: unknown) => e);
    expect(isMemoryError(error, 'CONNECTION')).toBe(true);
    expect((error as Error).message).toMatch(/^libsql: init failed: the store is closed/);
  });
});

describe('libsql: unreachable database', () => {
  it('reports a file that cannot be opened as CONNECTION', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const store = new LibSQLStore({ url: `file:${dir}/missing-dir/x.db` });
    const error = await store.init().catch((e: unknown) => e);
    expect(isMemoryError(error, 'CONNECTION')).toBe(true);
    expect((error as Error).message).toMatch(/^libsql: init failed: .*missing-dir/);
  });
});
