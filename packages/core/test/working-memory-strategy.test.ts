import { describe, expect, it } from 'vitest';
import type {
  CompareAndSetWorkingMemory,
  LockedWorkingMemory,
  NormalizedUpdateThread,
  Thread,
  WorkingMemoryCell,
} from '../src/adapter.ts';
import { InMemoryStore, MemoryError } from '../src/index.ts';
import { WorkingMemoryRunner } from '../src/storage/working-memory-strategy.ts';

const resource: WorkingMemoryCell = { scope: 'resource', resourceId: 'r1' };
const thread: WorkingMemoryCell = { scope: 'thread', threadId: 't1' };
const append = (current: string | null) => `${current ?? ''}+`;

/** A compare-and-set cell whose writes lose `losses` times before they win. */
function casCell(losses: number, start: string | null = 'a') {
  const cell = {
    value: start,
    version: 0,
    reads: 0,
    writes: [] as Array<{ expected: unknown; version: string }>,
  };
  let lost = 0;
  const strategy: CompareAndSetWorkingMemory<number> = {
    kind: 'compareAndSet',
    retry: { attempts: 3, maxDelayMs: 0 },
    read: async () => {
      cell.reads++;
      return { value: cell.value, version: cell.version };
    },
    write: async (_cell, expected, value, version) => {
      cell.writes.push({ expected: expected?.version, version });
      if (lost++ < losses) return false;
      cell.value = value;
      cell.version++;
      return true;
    },
  };
  return { cell, strategy };
}

describe('WorkingMemoryRunner', () => {
  it('retries a lost compare-and-set and stores what the winning attempt computed', async () => {
    const { cell, strategy } = casCell(2);
    const calls: Array<string | null> = [];
    const result = await new WorkingMemoryRunner(() => 'test').run(strategy, resource, (current) => {
      calls.push(current);
      return append(current);
    });
    expect(result).toBe('a+');
    expect(cell.value).toBe('a+');
    expect(calls).toEqual(['a', 'a', 'a']);
    // Every write gets a fresh version from core.
    expect(new Set(cell.writes.map((w) => w.version)).size).toBe(3);
  });

  it('gives up with CONFLICT after the bound, naming the adapter', async () => {
    const { cell, strategy } = casCell(Number.POSITIVE_INFINITY);
    const failure = new WorkingMemoryRunner(() => 'test').run(strategy, resource, append);
    await expect(failure).rejects.toMatchObject({ code: 'CONFLICT', adapter: 'test' });
    expect(cell.writes).toHaveLength(3);
    expect(cell.value).toBe('a');
  });

  it('reports NOT_FOUND for a missing thread without calling update, and creates a missing resource', async () => {
    const writes: Array<unknown> = [];
    const strategy: CompareAndSetWorkingMemory<number> = {
      kind: 'compareAndSet',
      read: async () => null,
      write: async (_cell, expected, value) => {
        writes.push([expected, value]);
        return true;
      },
    };
    const runner = new WorkingMemoryRunner(() => 'test');
    let called = false;
    const missing = runner.run(strategy, thread, () => {
      called = true;
      return 'x';
    });
    await expect(missing).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'test: thread "t1" does not exist',
    });
    expect(called).toBe(false);
    await expect(runner.run(strategy, resource, append)).resolves.toBe('+');
    expect(writes).toEqual([[null, '+']]);
  });

  it('after a lost race goes to the lock, and straight there while the cell is contended', async () => {
    const { cell, strategy } = casCell(Number.POSITIVE_INFINITY);
    const locked: WorkingMemoryCell[] = [];
    const afterLostRace: LockedWorkingMemory = {
      kind: 'locked',
      update: async (target, apply) => {
        locked.push(target);
        cell.value = apply(cell.value);
        return true;
      },
    };
    const runner = new WorkingMemoryRunner(() => 'test');
    const withLock = { ...strategy, afterLostRace };
    await expect(runner.run(withLock, thread, append)).resolves.toBe('a+');
    expect(cell.writes).toHaveLength(1);
    await expect(runner.run(withLock, thread, append)).resolves.toBe('a++');
    expect(cell.reads).toBe(1);
    expect(locked).toEqual([thread, thread]);
    // Another cell is not contended: it tries the compare-and-set first.
    await runner.run(withLock, resource, append);
    expect(cell.reads).toBe(2);
  });

  it('turns a locked update that finds no thread into NOT_FOUND', async () => {
    const strategy: LockedWorkingMemory = { kind: 'locked', update: async () => false };
    await expect(new WorkingMemoryRunner(() => 'test').run(strategy, thread, append)).rejects.toBeInstanceOf(
      MemoryError,
    );
  });
});

/** Records what `doUpdateThread` was handed. */
class Recording extends InMemoryStore {
  readonly seen: NormalizedUpdateThread[] = [];
  protected override doUpdateThread(args: NormalizedUpdateThread): Promise<Thread> {
    this.seen.push(args);
    return super.doUpdateThread(args);
  }
}

describe('StoreBase.updateThread', () => {
  it('hands doUpdateThread a fresh working-memory version exactly when the update writes working memory', async () => {
    const store = new Recording();
    const now = new Date();
    await store.saveThread({
      id: 't1',
      resourceId: 'r1',
      title: '',
      metadata: {},
      createdAt: now,
      updatedAt: now,
    });
    await store.updateThread({ id: 't1', metadata: { topic: 'x' } });
    await store.updateThread({ id: 't1', metadata: { workingMemory: 'a' } });
    await store.updateThread({ id: 't1', metadata: { workingMemory: null } });
    await store.updateThread({ id: 't1', title: 'renamed' });
    const versions = store.seen.map((args) => args.workingMemoryVersion);
    expect(versions[0]).toBeUndefined();
    expect(versions[3]).toBeUndefined();
    expect(typeof versions[1]).toBe('string');
    expect(typeof versions[2]).toBe('string');
    expect(versions[1]).not.toBe(versions[2]);
  });
});
