import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FallbackLock, fallbackLockFor, InMemoryStore, Memory, mergeWorkingMemory } from '../src/index.ts';
import { NonAtomicStore } from './support.ts';

const schema = z.record(z.string(), z.number());
const N = 100;

function keysOf(stored: string | null | undefined): string[] {
  return Object.keys(JSON.parse(stored ?? '{}')).sort();
}

const expectedKeys = Array.from({ length: N }, (_, i) => `k${i}`).sort();

describe('in-process fallback for a storage without atomic support', () => {
  it(`${N} concurrent schema-mode updates of different keys (resource scope) all survive`, async () => {
    const storage = new NonAtomicStore();
    const memory = new Memory({ storage, options: { workingMemory: { schema } } });
    expect(await memory.supportsAtomicWorkingMemoryMerge()).toBe(false);
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { [`k${i}`]: i } }),
      ),
    );
    expect(keysOf(await memory.getWorkingMemory({ resourceId: 'r' }))).toStrictEqual(expectedKeys);
    expect(fallbackLockFor(storage).pending).toBe(0);
  });

  it(`${N} concurrent schema-mode updates of different keys (thread scope) all survive`, async () => {
    const storage = new NonAtomicStore();
    const memory = new Memory({ storage, options: { workingMemory: { schema, scope: 'thread' } } });
    const thread = await memory.createThread({ resourceId: 'r' });
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        memory.applyWorkingMemoryPatch({ threadId: thread.id, resourceId: 'r', patch: { [`k${i}`]: i } }),
      ),
    );
    expect(keysOf(await memory.getWorkingMemory({ threadId: thread.id }))).toStrictEqual(expectedKeys);
  });

  it('the same updates without the lock lose keys (the test can fail)', async () => {
    const storage = new NonAtomicStore();
    // The naive read-merge-write the lock protects, run the same way.
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const current = (await storage.getResourceById({ resourceId: 'r' }))?.workingMemory ?? null;
        const next = JSON.stringify(mergeWorkingMemory(current, { [`k${i}`]: i }));
        await storage.updateResource({ resourceId: 'r', workingMemory: next });
      }),
    );
    const survived = keysOf((await storage.getResourceById({ resourceId: 'r' }))?.workingMemory);
    expect(survived.length).toBeLessThan(N);
  });

  it('two Memory instances on one storage share the lock; other scopes and ids are not blocked', async () => {
    const storage = new NonAtomicStore();
    const a = new Memory({ storage, options: { workingMemory: { schema } } });
    const b = new Memory({ storage, options: { workingMemory: { schema } } });
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).applyWorkingMemoryPatch({
          resourceId: i % 4 < 2 ? 'r1' : 'r2',
          patch: { [`k${i}`]: i },
        }),
      ),
    );
    const r1 = keysOf(await a.getWorkingMemory({ resourceId: 'r1' }));
    const r2 = keysOf(await b.getWorkingMemory({ resourceId: 'r2' }));
    expect(r1.length + r2.length).toBe(40);
    expect(r1.length).toBe(20);
  });

  it('template-mode edits (appends) through editWorkingMemory all survive', async () => {
    const storage = new NonAtomicStore();
    const memory = new Memory({ storage, options: { workingMemory: { scope: 'resource' } } });
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        memory.editWorkingMemory({ resourceId: 'r', edit: (current) => `${current ?? ''}- fact ${i}\n` }),
      ),
    );
    const lines = (await memory.getWorkingMemory({ resourceId: 'r' }))!.trim().split('\n');
    expect(new Set(lines).size).toBe(50);
  });

  it('a failing writer does not block the ones queued after it', async () => {
    const storage = new NonAtomicStore();
    const memory = new Memory({ storage, options: { workingMemory: { schema } } });
    const results = await Promise.allSettled([
      memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { a: 1 } }),
      memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { bad: 'not a number' } }),
      memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { b: 2 } }),
    ]);
    expect(results.map((r) => r.status)).toStrictEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await memory.getWorkingMemory({ resourceId: 'r' })).toBe('{"a":1,"b":2}');
  });

  it('on an atomic storage, mergeWorkingMemory needs no lock and loses nothing', async () => {
    const storage = new InMemoryStore();
    const memory = new Memory({ storage, options: { workingMemory: { schema } } });
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        memory.mergeWorkingMemory({ resourceId: 'r', workingMemory: { [`k${i}`]: i } }),
      ),
    );
    expect(keysOf(await memory.getWorkingMemory({ resourceId: 'r' }))).toStrictEqual(expectedKeys);
    expect(fallbackLockFor(storage).pending).toBe(0);
  });
});

describe('FallbackLock', () => {
  it('runs tasks for one key in order, one at a time, and cleans up', async () => {
    const lock = new FallbackLock();
    const log: string[] = [];
    let active = 0;
    let maxActive = 0;
    const task = (name: string) => async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      log.push(`start ${name}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
      log.push(`end ${name}`);
      active--;
      return name;
    };
    const results = await Promise.all([
      lock.run('resource', 'x', task('1')),
      lock.run('resource', 'x', task('2')),
      lock.run('resource', 'x', task('3')),
    ]);
    expect(results).toStrictEqual(['1', '2', '3']);
    expect(maxActive).toBe(1);
    expect(log).toStrictEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lock.pending).toBe(0);
  });

  it('keeps scopes and ids apart', async () => {
    const lock = new FallbackLock();
    let release: () => void = () => {};
    const blocked = lock.run('resource', 'x', () => new Promise<void>((resolve) => (release = resolve)));
    // same id, other scope; other id, same scope: both run while the first is held
    await lock.run('thread', 'x', async () => {});
    await lock.run('resource', 'y', async () => {});
    release();
    await blocked;
  });
});
