import { isMemoryError } from '@engram/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OracleStore } from '../src/index.ts';
import type { OracleBinds, OracleResult } from '../src/oracledb.ts';
import { fakePool, message, oracledb, type Sent, thread } from './fixtures.ts';

/** A store on a fake pool, opened, with what it sent while opening forgotten. */
async function storeOn(answer: (sql: string, binds: OracleBinds) => OracleResult, serverVersion?: number) {
  const fake = fakePool(serverVersion, answer);
  const store = new OracleStore({ pool: fake.pool });
  await store.init();
  fake.sent.length = 0;
  fake.events.length = 0;
  return { store, ...fake };
}

/** The first line of each statement sent. */
const heads = (sent: Sent[]) => sent.map((s) => s.sql.split('\n')[0]);

const THREAD_ROW = {
  ID: 't1',
  RESOURCE_ID: 'r1',
  TITLE: 'Title',
  METADATA: '{"workingMemory":"a","x":1}',
  CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
  UPDATED_AT_TEXT: '2024-05-01T10:20:30.123',
};

const MESSAGE_ROW = {
  ID: 'm1',
  THREAD_ID: 't1',
  RESOURCE_ID: 'r1',
  MESSAGE_ROLE: 'user',
  MESSAGE_TYPE: 'text',
  CONTENT: '"hello"',
  CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
};

/** Answers the lock queries of a write from `threads` (id → resource) and `messages` (rows). */
function places(threads: Record<string, string>, messages: Array<Record<string, string>> = []) {
  return (sql: string, binds: OracleBinds): OracleResult => {
    if (sql.startsWith('SELECT id, resource_id FROM engram_threads')) {
      const ids = Object.values(binds) as string[];
      return { rows: ids.filter((id) => id in threads).map((id) => ({ ID: id, RESOURCE_ID: threads[id] })) };
    }
    if (sql.startsWith('SELECT id, thread_id, resource_id FROM engram_messages')) return { rows: messages };
    return { rows: [], rowsAffected: 1 };
  };
}

describe('saveMessages through the driver (fake connection)', () => {
  it('locks the threads, then the messages, in id order; merges each message; bumps the threads; commits', async () => {
    const moved = { ID: 'm1', THREAD_ID: 't0', RESOURCE_ID: 'r1' };
    const { store, sent, events } = await storeOn(places({ t1: 'r1', t2: 'r1' }, [moved]));
    const later = new Date('2999-01-01T00:00:00.000Z');
    const batch = [message({ id: 'm2', threadId: 't2' }), message({ id: 'm1', createdAt: later })];
    const before = Date.now();
    const saved = await store.saveMessages(batch);
    expect(saved).toEqual(batch);
    expect(saved[0]).not.toBe(batch[0]);
    expect(heads(sent)).toEqual([
      'SELECT id, resource_id FROM engram_threads WHERE id IN (:t0, :t1) FOR UPDATE',
      'SELECT id, thread_id, resource_id FROM engram_messages WHERE id IN (:m0, :m1) FOR UPDATE',
      'MERGE INTO engram_messages m',
      'MERGE INTO engram_messages m',
      // The keyword index, in the same transaction: the messages' rows out, their terms in.
      'DELETE FROM engram_message_terms WHERE message_id IN (:m0, :m1)',
      'DELETE FROM engram_message_term_counts WHERE message_id IN (:m0, :m1)',
      'INSERT INTO engram_message_term_counts (message_id, term_count)',
      'INSERT INTO engram_message_terms (message_id, term, tf)',
      expect.stringMatching(/^UPDATE engram_threads SET updated_at = GREATEST/),
      expect.stringMatching(/^UPDATE engram_threads SET updated_at = GREATEST/),
    ]);
    expect(sent[0]?.binds).toEqual({ t0: 't1', t1: 't2' });
    expect(sent[1]?.binds).toEqual({ m0: 'm1', m1: 'm2' });
    expect([sent[2]?.binds.message_id, sent[3]?.binds.message_id]).toEqual(['m2', 'm1']);
    expect(sent[4]?.binds).toEqual({ m0: 'm2', m1: 'm1' });
    expect(sent[6]?.binds).toEqual({ rows_json: '[["m2",1],["m1",1]]' });
    expect(sent[7]?.binds).toEqual({ rows_json: '[["m2","hello",1],["m1","hello",1]]' });
    // The thread the message left and the thread of an older message are bumped to the time of
    // the write; the thread of the message from the future to its createdAt.
    const [now, future] = [sent[8]!.binds, sent[9]!.binds];
    expect(now).toMatchObject({ t0: 't2', t1: 't0' });
    expect(Date.parse(`${now.updated_at}Z`)).toBeGreaterThanOrEqual(before - 1);
    expect(future).toEqual({ t0: 't1', updated_at: '2999-01-01T00:00:00.000' });
    expect(events).toEqual(['commit', 'release']);
  });

  it.each([
    ['a missing thread', {}, [], 'NOT_FOUND'],
    ['a thread of another resource', { t1: 'bob' }, [], 'INVALID_ARGUMENT'],
    [
      'an id of a message of another resource',
      { t1: 'r1' },
      [{ ID: 'm1', THREAD_ID: 't9', RESOURCE_ID: 'bob' }],
      'CONFLICT',
    ],
  ] as const)('refuses %s before writing anything, and rolls back', async (_, threads, messages, code) => {
    const { store, sent, events } = await storeOn(places(threads, [...messages]));
    const error = await store.saveMessages([message()]).catch((e: unknown) => e);
    expect(isMemoryError(error, code)).toBe(true);
    expect(sent.some((s) => s.sql.startsWith('MERGE') || s.sql.startsWith('UPDATE'))).toBe(false);
    expect(events).toEqual(['rollback', 'release']);
  });

  it('refuses an id a message of another resource took after the lock (the MERGE merges nothing)', async () => {
    const taken = places({ t1: 'r1' });
    const { store, events } = await storeOn((sql, binds) =>
      sql.startsWith('MERGE INTO engram_messages') ? { rowsAffected: 0 } : taken(sql, binds),
    );
    const error = await store.saveMessages([message()]).catch((e: unknown) => e);
    expect(isMemoryError(error, 'CONFLICT')).toBe(true);
    expect(events).toEqual(['rollback', 'release']);
  });
});

describe('other writes through the driver (fake connection)', () => {
  it('createThread inserts; a taken id (ORA-00001) is CONFLICT', async () => {
    const { store, sent } = await storeOn(() => {
      throw Object.assign(new Error('ORA-00001: unique constraint violated'), { code: 'ORA-00001' });
    });
    const error = await store.createThread(thread()).catch((e: unknown) => e);
    expect(isMemoryError(error, 'CONFLICT')).toBe(true);
    expect((error as Error).message).toMatch(/already exists/);
    expect(heads(sent)).toEqual([expect.stringMatching(/^INSERT INTO engram_threads/)]);
  });

  it('updateThread locks the row, merges metadata in JS and raises updatedAt', async () => {
    const { store, sent, events } = await storeOn((sql) =>
      sql.includes('FROM engram_threads t WHERE t.id = :thread_id FOR UPDATE') ? { rows: [THREAD_ROW] } : {},
    );
    const updated = await store.updateThread({ id: 't1', title: 'New', metadata: { y: 2 } });
    expect(updated).toMatchObject({ title: 'New', metadata: { workingMemory: 'a', x: 1, y: 2 } });
    expect(updated.updatedAt.getTime()).toBeGreaterThan(Date.parse('2024-05-01T10:20:30.123Z'));
    expect(sent[1]?.binds).toMatchObject({
      thread_id: 't1',
      title: 'New',
      metadata: '{"workingMemory":"a","x":1,"y":2}',
    });
    expect(events).toEqual(['commit', 'release']);
  });

  it('updateMessages locks the messages, reads the ones found and merges them patched, then bumps their threads', async () => {
    const { store, sent } = await storeOn((sql, binds) => {
      if (sql.startsWith('SELECT id, thread_id'))
        return { rows: [{ ID: 'm1', THREAD_ID: 't1', RESOURCE_ID: 'r1' }] };
      if (sql.startsWith('SELECT m.id')) return { rows: [MESSAGE_ROW] };
      return places({})(sql, binds);
    });
    const [updated] = await store.updateMessages([
      { id: 'm1', content: 'bye' },
      { id: 'gone', role: 'tool' },
    ]);
    expect(updated).toMatchObject({ id: 'm1', content: 'bye', role: 'user', threadId: 't1' });
    expect(heads(sent)).toEqual([
      'SELECT id, thread_id, resource_id FROM engram_messages WHERE id IN (:m0, :m1) FOR UPDATE',
      expect.stringMatching(/^SELECT m\.id, .* WHERE m\.id IN \(:m0\)$/),
      'MERGE INTO engram_messages m',
      'DELETE FROM engram_message_terms WHERE message_id IN (:m0)',
      'DELETE FROM engram_message_term_counts WHERE message_id IN (:m0)',
      'INSERT INTO engram_message_term_counts (message_id, term_count)',
      'INSERT INTO engram_message_terms (message_id, term, tf)',
      expect.stringMatching(/^UPDATE engram_threads SET updated_at = GREATEST/),
    ]);
    expect(sent[2]?.binds).toMatchObject({ message_id: 'm1', content: '"bye"' });
    // Updated text is indexed by its new words only.
    expect(sent[6]?.binds).toEqual({ rows_json: '[["m1","bye",1]]' });
  });

  it('deleteMessages deletes the messages found and bumps their threads; deleteThread locks the thread, deletes its logs, then the thread', async () => {
    const { store, sent } = await storeOn(places({}, [{ ID: 'm1', THREAD_ID: 't1', RESOURCE_ID: 'r1' }]));
    await store.deleteMessages(['m1', 'm1', 'absent']);
    expect(heads(sent)).toEqual([
      'SELECT id, thread_id, resource_id FROM engram_messages WHERE id IN (:m0, :m1) FOR UPDATE',
      'DELETE FROM engram_turns WHERE id IN (:id0)',
      'DELETE FROM engram_messages WHERE id IN (:m0)',
      expect.stringMatching(/^UPDATE engram_threads SET updated_at = GREATEST.* WHERE id IN \(:t0\)$/),
    ]);
    sent.length = 0;
    await store.deleteThread({ threadId: 't1' });
    expect(heads(sent)).toEqual([
      'SELECT id, resource_id FROM engram_threads WHERE id IN (:t0) FOR UPDATE',
      'DELETE FROM engram_observations WHERE thread_id = :thread_id',
      'DELETE FROM engram_turns WHERE thread_id = :thread_id',
      'DELETE FROM engram_threads WHERE id = :thread_id',
    ]);
  });

  it('updates thread working memory under the row lock; a missing thread is NOT_FOUND', async () => {
    let found = true;
    const { store, sent, events } = await storeOn((sql) =>
      sql.includes('FOR UPDATE') && found ? { rows: [THREAD_ROW] } : { rows: [] },
    );
    const next = await store.updateWorkingMemoryAtomically({
      scope: 'thread',
      threadId: 't1',
      update: (current) => `${current}b`,
    });
    expect(next).toBe('ab');
    expect(sent[0]?.sql).toMatch(/FOR UPDATE$/);
    expect(sent[1]?.binds.metadata).toBe('{"workingMemory":"ab","x":1}');
    expect(events).toEqual(['commit', 'release']);
    found = false;
    const missing = store.updateWorkingMemoryAtomically({
      scope: 'thread',
      threadId: 't1',
      update: () => 'x',
    });
    await expect(missing).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('updates resource working memory: creates the row when missing, locks it, writes it', async () => {
    const { store, sent } = await storeOn((sql) =>
      sql.includes('FROM engram_resources r WHERE r.id = :resource_id FOR UPDATE')
        ? {
            rows: [
              {
                ID: 'r1',
                WORKING_MEMORY: null,
                WORKING_MEMORY_EMPTY: 0,
                METADATA: '{}',
                CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
                UPDATED_AT_TEXT: '2024-05-01T10:20:30.123',
              },
            ],
          }
        : { rowsAffected: 1 },
    );
    const next = await store.updateWorkingMemoryAtomically({
      scope: 'resource',
      resourceId: 'r1',
      update: (current) => (current === null ? '' : 'wrong'),
    });
    expect(next).toBe('');
    expect(heads(sent)).toEqual([
      'MERGE INTO engram_resources r',
      expect.stringMatching(/FROM engram_resources r WHERE r\.id = :resource_id FOR UPDATE$/),
      expect.stringMatching(/^UPDATE engram_resources SET working_memory = :working_memory/),
    ]);
    expect(sent[2]?.binds).toMatchObject({ working_memory: null, working_memory_empty: 1 });
  });
});

describe('the lifecycle through the driver (fake connection)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('creates its pool at open with the defaults and the caller attributes, migrates, closes the pool once', async () => {
    const fake = fakePool();
    const createPool = vi.spyOn(oracledb, 'createPool').mockResolvedValue(fake.pool);
    const store = new OracleStore({
      user: 'u',
      password: 'p',
      connectString: 'h/s',
      tablePrefix: 'App_',
      poolAttributes: { poolMax: 3 },
    });
    expect(createPool).not.toHaveBeenCalled();
    await Promise.all([store.init(), store.getThreadById({ threadId: 't1' })]);
    expect(createPool).toHaveBeenCalledTimes(1);
    expect(createPool.mock.calls[0]?.[0]).toMatchObject({
      user: 'u',
      password: 'p',
      connectString: 'h/s',
      poolMin: 0,
      poolMax: 3,
      sessionCallback: expect.any(Function),
    });
    expect(fake.sent.some((s) => s.sql.startsWith('CREATE TABLE app_threads ('))).toBe(true);
    expect(fake.sent.at(-1)?.sql).toMatch(/FROM app_threads t WHERE t\.id = :thread_id$/);
    await store.close();
    await store.close();
    expect(fake.events.filter((e) => e === 'pool closed')).toHaveLength(1);
  });

  it('declares vectors until it opens on a server without the VECTOR type; deletes never touch vectors', async () => {
    const { store, sent } = await storeOn(places({}), 1_919_000_000);
    expect(store.vectors).toBeUndefined();
    await store.deleteThread({ threadId: 't1' });
    expect(sent.some((s) => s.sql.includes('vector'))).toBe(false);
  });
});
