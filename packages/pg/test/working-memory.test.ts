import { MemoryError } from '@engram/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg, randomName, sentText, type TestDatabase } from './env.ts';

describePg('working-memory writes: statements sent and lost races', (url) => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let store: PostgresStore;
  let other: PostgresStore;
  const sent: string[] = [];
  /** The whole text of each statement sent. */
  const texts: string[] = [];
  /** Runs before the next compare-and-set is sent: a racing writer's turn. */
  let beforeCompareAndSet: (() => Promise<unknown>) | undefined;

  beforeAll(async () => {
    db = await createDatabase(url);
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // The test database is dropped WITH (FORCE): a client still closing then hears its backend end.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          const text = sentText(args[0]);
          texts.push(text.trim());
          sent.push(text.trim().split(/\s+/)[0]!);
          const race = beforeCompareAndSet;
          if (race && text.includes('IS NOT DISTINCT FROM')) {
            beforeCompareAndSet = undefined;
            return race().then(() => query(...args));
          }
          return query(...args);
        },
      });
    });
    store = new PostgresStore({ pool });
    other = new PostgresStore({ connectionString: db.url });
    await store.init();
    await other.init();
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    await pool?.end();
    await db?.drop();
  });

  type Scope = 'resource' | 'thread';

  /** Saves an empty thread through `via`. */
  async function emptyThread(via: PostgresStore, id: string, resourceId: string): Promise<void> {
    const at = new Date();
    await via.saveThread({ id, resourceId, title: '', metadata: {}, createdAt: at, updatedAt: at });
  }

  /** A thread (of a fresh resource) whose `scope` working memory `other` set to 'base'. */
  async function baseCell(scope: Scope, suffix = '') {
    const resourceId = `${randomName('r')}${suffix}`;
    const threadId = `${randomName('t')}${suffix}`;
    await emptyThread(other, threadId, resourceId);
    await other.updateWorkingMemoryAtomically({ scope, resourceId, threadId, update: () => 'base' });
    // The next compare-and-set of `store` loses to this write of `other`.
    beforeCompareAndSet = () =>
      other.updateWorkingMemoryAtomically({ scope, resourceId, threadId, update: (c) => `${c}+theirs` });
    const stored = async () =>
      scope === 'resource'
        ? (await other.getResourceById({ resourceId }))?.workingMemory
        : (await other.getThreadById({ threadId }))?.metadata.workingMemory;
    return { scope, resourceId, threadId, stored };
  }

  it('an uncontended atomic update is a read and a compare-and-set: 2 statements, no transaction', async () => {
    const resourceId = randomName('r');
    sent.length = 0;
    await store.updateWorkingMemoryAtomically({ scope: 'resource', resourceId, update: () => 'first' });
    await store.updateWorkingMemoryAtomically({
      scope: 'resource',
      resourceId,
      update: (c) => `${c}+second`,
    });
    expect(sent).toEqual(['SELECT', 'INSERT', 'SELECT', 'INSERT']);
    expect((await other.getResourceById({ resourceId }))?.workingMemory).toBe('first+second');

    const threadId = randomName('t');
    await emptyThread(store, threadId, resourceId);
    sent.length = 0;
    await store.updateWorkingMemoryAtomically({ scope: 'thread', threadId, update: (c) => `${c ?? ''}x` });
    expect(sent).toEqual(['SELECT', 'UPDATE']);
    expect((await other.getThreadById({ threadId }))?.metadata.workingMemory).toBe('x');
  });

  it('a replace through updateResource is one statement', async () => {
    const resourceId = randomName('r');
    sent.length = 0;
    await store.updateResource({ resourceId, workingMemory: 'doc' });
    expect(sent).toEqual(['INSERT']);
  });

  it("a lost race runs the update once more, under the row lock, on the winner's value", async () => {
    for (const scope of ['resource', 'thread'] as const) {
      const { resourceId, threadId, stored } = await baseCell(scope);
      // Only the cell's own id: with both, the store first reads the thread to check its owner.
      const cell = scope === 'resource' ? { resourceId } : { threadId };
      const seen: (string | null)[] = [];
      sent.length = 0;
      const value = await store.updateWorkingMemoryAtomically({
        scope,
        ...cell,
        update: (current) => {
          seen.push(current);
          return `${current}+mine`;
        },
      });
      expect(seen).toEqual(['base', 'base+theirs']);
      expect(value).toBe('base+theirs+mine');
      // The locked update: BEGIN with the locking read, the write with COMMIT: two round trips.
      expect(sent.slice(2)).toEqual(['BEGIN;', 'UPDATE']);
      expect(texts.at(-2)).toMatch(/^BEGIN; SELECT .* FOR UPDATE$/s);
      expect(texts.at(-1)).toMatch(/; COMMIT$/);
      expect(await stored()).toBe('base+theirs+mine');
      // Right after a lost race, the record goes straight to the row lock.
      sent.length = 0;
      await store.updateWorkingMemoryAtomically({ scope, ...cell, update: (c) => `${c}!` });
      expect(sent).toEqual(['BEGIN;', 'UPDATE']);
    }
  });

  it('an update that throws writes nothing, on either path', async () => {
    const resourceId = randomName('r');
    await other.updateResource({ resourceId, workingMemory: 'kept' });
    const failing = () => {
      throw new Error('no');
    };
    await expect(
      store.updateWorkingMemoryAtomically({ scope: 'resource', resourceId, update: failing }),
    ).rejects.toThrow('no');
    let calls = 0;
    beforeCompareAndSet = () => other.updateResource({ resourceId, workingMemory: 'changed' });
    await expect(
      store.updateWorkingMemoryAtomically({
        scope: 'resource',
        resourceId,
        update: (current) => {
          if (++calls === 2) throw new Error('second');
          return `${current}!`;
        },
      }),
    ).rejects.toThrow('second');
    expect((await other.getResourceById({ resourceId }))?.workingMemory).toBe('changed');
  });

  it('the locked update stores quotes, backslashes and placeholders exactly, and refuses a NUL writing nothing', async () => {
    const nasty = ["it's", "\\'; DROP TABLE x; --", "$1 $2 \\n E'\\\\'", 'naïve ✓ \u{1F600}'];
    for (const scope of ['resource', 'thread'] as const) {
      // Ids with a quote, a backslash and a placeholder: they travel as literals too.
      const { resourceId, threadId, stored } = await baseCell(scope, "'\\$1");
      const cell = scope === 'resource' ? { resourceId } : { threadId };
      // Lose one race: the record then goes straight to the row lock.
      await store.updateWorkingMemoryAtomically({ scope, ...cell, update: (c) => `${c}+mine` });
      for (const value of nasty) {
        sent.length = 0;
        let seen: string | null = null;
        await store.updateWorkingMemoryAtomically({
          scope,
          ...cell,
          update: (current) => {
            seen = current;
            return value;
          },
        });
        expect(sent).toEqual(['BEGIN;', 'UPDATE']);
        expect(await stored()).toBe(value);
        expect(typeof seen).toBe('string');
      }
      const before = await stored();
      const refused = store.updateWorkingMemoryAtomically({
        scope,
        resourceId,
        threadId,
        update: () => 'a\u0000b',
      });
      await expect(refused).rejects.toBeInstanceOf(MemoryError);
      await expect(refused).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(await stored()).toBe(before);
    }
  });
});
