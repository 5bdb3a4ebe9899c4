import { compareIds } from '@engram/core/driver';
import type { Redis } from '@upstash/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { Keys, LAYOUT_VERSION, UpstashStore } from '../src/index.ts';
import { runPrefix, upstashSkip } from './env.ts';
import { dropPrefix, testClient } from './stores.ts';

const title = upstashSkip ? `resource index (skipped: ${upstashSkip})` : 'resource index';
const prefix = runPrefix('resources');

const at = new Date(Date.UTC(2024, 0, 1));
const thread = (id: string, resourceId: string) => ({
  id,
  resourceId,
  title: id,
  metadata: {},
  createdAt: at,
  updatedAt: at,
});

/** Every listed id, walked in pages of 2. */
async function listAll(store: UpstashStore): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const page = (await store.listResourceIds?.({ after: ids.at(-1), limit: 2 })) ?? [];
    ids.push(...page);
    if (page.length < 2) return ids;
  }
}

/** Ids whose bytes sort differently from their UTF-16 units, or that a naive key scheme would split. */
const IDS = ['r1', 'r10', 'a:b', 'a%3Ab', '*', '[x]', '\\', 'ä✓ 🎉', 'x\ny', 'é', 'z', 'ｚ', '𝔸', 'A'];

describe.skipIf(upstashSkip)(title, () => {
  afterAll(async () => {
    if (!upstashSkip) await dropPrefix(prefix);
  });

  it('lists resource records only, kept by the writes that create and delete them', async () => {
    const p = `${prefix}:writes`;
    const store = new UpstashStore({ client: testClient(), prefix: p });
    await store.updateResource({ resourceId: 'b', metadata: { a: 1 } });
    await store.updateWorkingMemoryAtomically({ scope: 'resource', resourceId: 'a', update: () => 'wm' });
    await store.saveThread(thread('t', 'thread-only'));
    await store.updateWorkingMemoryAtomically({ scope: 'thread', threadId: 't', update: () => 'wm' });
    expect(await listAll(store)).toEqual(['a', 'b']);
    await store.deleteResource?.({ resourceId: 'a' });
    expect(await listAll(store)).toEqual(['b']);
    await store.restoreResource({ id: 'a', workingMemory: null, metadata: {}, createdAt: at, updatedAt: at });
    expect(await listAll(store)).toEqual(['a', 'b']);
    expect(await store.listResourceIds?.({ after: 'a' })).toEqual(['b']);
  });

  it('is backfilled when a store written with the layout before it opens, resuming after an interruption', async () => {
    const p = `${prefix}:old`;
    const keys = new Keys(p);
    const raw = testClient();
    const store = new UpstashStore({ client: testClient(), prefix: p });
    for (const resourceId of IDS) await store.updateResource({ resourceId, workingMemory: resourceId });
    await store.updateWorkingMemoryAtomically({
      scope: 'resource',
      resourceId: 'wm-only',
      update: () => 'x',
    });
    // Keys under `<p>:resource:` that are not resource records of this store: a thread's owner
    // without a record, a lease alone, and the records of a store whose prefix is `<p>:resource`.
    await store.saveThread(thread('t', 'thread-only'));
    await raw.set(`${keys.resource('lease-only')}:wmlock`, 'token');
    const nested = new UpstashStore({ client: testClient(), prefix: `${p}:resource` });
    await nested.updateResource({ resourceId: 'nested', workingMemory: 'x' });
    // Enough other keys that SCAN needs several rounds.
    await raw.eval(
      `for i = 1, 3000 do redis.call('SET', ARGV[1] .. i, 'x') end return 'ok'`,
      [],
      [`${p}:filler:`],
    );
    // The layout of version 2: no resource index.
    await raw.del(keys.resources());
    await raw.set(keys.schema(), '2');

    // A store whose second SCAN fails stops part-way, leaving the cursor for the next open.
    const failing = testClient();
    let scans = 0;
    failing.use((req, next) => {
      if (String((req.body as unknown[])[0]).toLowerCase() === 'scan' && ++scans === 2) {
        throw new Error('connection lost');
      }
      return next(req);
    });
    await expect(new UpstashStore({ client: failing, prefix: p }).init()).rejects.toThrow();
    const cursor = await raw.get<string>(`${p}:resource-backfill`);
    expect(cursor).not.toBeNull();
    expect(cursor).not.toBe('0');

    const upgraded = new UpstashStore({ client: testClient(), prefix: p });
    await upgraded.init();
    expect(await raw.exists(`${p}:resource-backfill`)).toBe(0);
    expect(await raw.get(keys.schema())).toBe(String(LAYOUT_VERSION));
    expect(await listAll(upgraded)).toEqual([...IDS, 'wm-only'].sort(compareIds));
    expect(await listAll(nested)).toEqual(['nested']);
  });

  it('queues no backfill for a new store', async () => {
    const p = `${prefix}:new`;
    const raw: Redis = testClient();
    const store = new UpstashStore({ client: testClient(), prefix: p });
    await store.init();
    expect(await raw.exists(`${p}:resource-backfill`)).toBe(0);
    expect(await listAll(store)).toEqual([]);
  });
});
