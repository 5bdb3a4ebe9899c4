import { isMemoryError } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, runScript, send, tempDir, waitForLine } from './helpers.ts';

/**
 * `@libsql/client` has a trap: once a statement on a client fails with SQLITE_BUSY, later writes
 * on that client report success but are never committed. The store must replace such a client.
 * Here another process holds the write lock for 500 ms while this one keeps writing with a busy
 * timeout shorter than that, so some writes fail with SQLITE_BUSY; every write reported as
 * successful must then be visible to a fresh client.
 */
describe('libsql: no write reported successful is lost after SQLITE_BUSY', () => {
  const dirs: Array<() => void> = [];
  afterEach(() => {
    for (const cleanup of dirs.splice(0)) cleanup();
  });

  const variants = [
    { name: 'an owned client', injected: false },
    { name: 'an injected client', injected: true },
  ];
  it.each(variants)(
    'keeps every successful write on $name while another process holds the lock',
    async ({ injected }) => {
      const { dir, cleanup } = tempDir();
      dirs.push(cleanup);
      const file = `${dir}/lost-write.db`;
      const own = injected ? createClient({ url: `file:${file}`, timeout: 40 }) : undefined;
      const store = own
        ? new LibSQLStore({ client: own })
        : new LibSQLStore({ url: `file:${file}`, busyTimeoutMs: 40 });
      await store.init();

      const holder = runScript('./fixtures/hold-write-lock.ts', { ENGRAM_LIBSQL_FILE: file, HOLD_MS: '500' });
      await waitForLine(holder, 'locked');
      send(holder, 'go');
      const done = exited(holder);
      let holderDone = false;
      void done.then(() => {
        holderDone = true;
      });

      const succeeded: string[] = [];
      const conflicts: string[] = [];
      let afterRelease = 0;
      let succeededAfterRelease = 0;
      for (let i = 0; afterRelease < 40; i++) {
        const id = `t-${i}`;
        const now = new Date();
        const wasDone = holderDone;
        try {
          // Alternate a plain upsert and a write transaction: both paths must survive the trap.
          if (i % 2 === 0) {
            await store.saveThread({
              id,
              resourceId: 'r',
              title: id,
              metadata: {},
              createdAt: now,
              updatedAt: now,
            });
          } else {
            await store.updateResource({ resourceId: id, metadata: { i } });
          }
          succeeded.push(id);
          if (wasDone) succeededAfterRelease++;
        } catch (error) {
          expect(isMemoryError(error, 'CONFLICT')).toBe(true);
          conflicts.push(id);
        }
        if (wasDone) afterRelease++;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(await done).toBe(0);
      await store.close();
      own?.close();

      const fresh = createClient({ url: `file:${file}` });
      try {
        const threads = await fresh.execute('SELECT id FROM engram_threads');
        const resources = await fresh.execute('SELECT id FROM engram_resources');
        const stored = new Set([...threads.rows, ...resources.rows].map((row) => String(row.id)));
        const lost = succeeded.filter((id) => !stored.has(id));
        expect(lost).toEqual([]);
        expect(conflicts.filter((id) => stored.has(id))).toEqual([]);
        // The lock really blocked some writes, and writes succeeded again once it was released.
        expect(conflicts.length).toBeGreaterThan(0);
        expect(succeededAfterRelease).toBe(40);
      } finally {
        fresh.close();
      }
    },
  );
});
