import type { Message } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(url: string): Promise<LibSQLStore> {
  const store = new LibSQLStore({ url });
  cleanups.push(() => store.close());
  await store.init();
  return store;
}

const FRUIT = ['apple', 'banana', 'cherry', 'durian', 'elderberry', 'fig', 'grape'];

/** Message `i` of `resourceId`: its own word `w<i>` and one of the fruit. */
function message(resourceId: string, i: number, threadId = `${resourceId}-t`): Message {
  return {
    id: `${resourceId}-m${i}`,
    threadId,
    resourceId,
    role: i % 2 ? 'assistant' : 'user',
    content: `note w${i} about ${FRUIT[i % FRUIT.length]}`,
    type: 'text',
    createdAt: new Date(Date.UTC(2025, 0, 1) + i * 1_000),
  };
}

/** The ids of the hits of each query, per resource. */
async function hitsOf(store: LibSQLStore, queries: string[]): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  for (const resourceId of ['alice', 'bob']) {
    for (const query of queries) {
      const hits = await store.keywords!.search({ query, topK: 50, resourceId });
      found[`${resourceId} ${query}`] = hits.map((h) => h.messageId).sort();
    }
  }
  return found;
}

describe('libSQL keyword index key', () => {
  it("finds the messages it indexed after a logical copy renumbers the messages' rowids (sqlite3 .dump and a restore)", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const url = `file:${dir}/store.db`;
    const store = await open(url);
    for (const resourceId of ['alice', 'bob']) {
      for (const t of ['t', 'u']) {
        const at = new Date(Date.UTC(2025, 0, 1));
        await store.createThread({
          id: `${resourceId}-${t}`,
          resourceId,
          title: t,
          metadata: {},
          createdAt: at,
          updatedAt: at,
        });
      }
    }
    // Both write paths: the one-statement save (new messages of one thread) and the composed one
    // (two threads at once, and a re-save that moves a message).
    for (let i = 0; i < 30; i++) await store.saveMessages([message(i % 2 ? 'bob' : 'alice', i)]);
    await store.saveMessages([message('alice', 30), message('alice', 31, 'alice-u')]);
    await store.saveMessages([{ ...message('alice', 4, 'alice-u'), content: 'note w4 about kiwi' }]);
    // Gaps in the rowids, as deletes leave them.
    await store.deleteMessages(['alice-m0', 'bob-m3', 'alice-m12', 'bob-m21']);
    const queries = [...FRUIT, 'kiwi', 'w4', 'w12', 'w30', 'w31'];
    const before = await hitsOf(store, queries);
    expect(before['alice cherry']).toEqual(['alice-m16', 'alice-m2', 'alice-m30']);
    expect(before['alice kiwi']).toEqual(['alice-m4']);
    expect(before['alice w12']).toEqual([]);
    expect(before['bob cherry']).toEqual(['bob-m23', 'bob-m9']);
    await store.close();

    // What a restore from `.dump` does to a table without an INTEGER PRIMARY KEY: its rows are
    // inserted again in order and numbered 1, 2, … (the keyword index's own rows keep theirs).
    const raw = createClient({ url });
    try {
      const renumbered = await raw.execute(
        'UPDATE engram_messages SET rowid = (SELECT count(*) FROM engram_messages o WHERE o.rowid <= engram_messages.rowid)',
      );
      expect(renumbered.rowsAffected).toBe(28);
      const { rows } = await raw.execute('SELECT min(rowid) AS low, max(rowid) AS high FROM engram_messages');
      expect([Number(rows[0]?.low), Number(rows[0]?.high)]).toEqual([1, 28]);
    } finally {
      raw.close();
    }

    const reopened = await open(url);
    expect(await hitsOf(reopened, queries)).toEqual(before);
    // Deletes take out the deleted message's terms, not another's; new messages are found.
    await reopened.deleteMessages(['alice-m16', 'bob-m9']);
    await reopened.saveMessages([
      message('bob', 37),
      { ...message('alice', 40), content: 'note w40 about cherry' },
    ]);
    const after = await hitsOf(reopened, ['cherry', 'w16', 'w30', 'w37']);
    expect(after).toEqual({
      'alice cherry': ['alice-m2', 'alice-m30', 'alice-m40'],
      'alice w16': [],
      'alice w30': ['alice-m30'],
      'alice w37': [],
      'bob cherry': ['bob-m23', 'bob-m37'],
      'bob w16': [],
      'bob w30': [],
      'bob w37': ['bob-m37'],
    });
  });

  it('a message row without seq (written by other software) does not break saves after the index is rebuilt', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const url = `file:${dir}/store.db`;
    const store = await open(url);
    const at = new Date(Date.UTC(2025, 0, 1));
    await store.createThread({
      id: 'alice-t',
      resourceId: 'alice',
      title: 't',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    });
    await store.saveMessages([message('alice', 0), message('alice', 2)]);
    const raw = createClient({ url });
    try {
      await raw.execute({
        sql: `INSERT INTO engram_messages (id, thread_id, resource_id, role, content, type, created_at)
              VALUES ('foreign', 'alice-t', 'alice', 'user', '"a foreign apple"', 'text', ?)`,
        args: [at.getTime()],
      });
    } finally {
      raw.close();
    }
    // The index off and on again: the rebuild indexes every message, the foreign one included.
    const off = new LibSQLStore({ url, keywords: false });
    await off.init();
    await off.close();
    const rebuilt = await open(url);
    // Before: the foreign row took an FTS5 rowid of its own, and this save's seq collided with it.
    await rebuilt.saveMessages([message('alice', 4), message('alice', 6)]);
    await store.saveMessages([message('alice', 8)]);
    expect(await hitsOf(rebuilt, ['apple', 'cherry', 'elderberry'])).toMatchObject({
      'alice apple': ['alice-m0'],
      'alice cherry': ['alice-m2'],
      'alice elderberry': ['alice-m4'],
    });
  });
});
