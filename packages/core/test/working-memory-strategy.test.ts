import { describe, expect, it } from 'vitest';
import type {
  CompareAndSetWorkingMemory,
  LeasedWorkingMemory,
  LockedWorkingMemory,
  ThreadChange,
  WorkingMemoryCell,
} from '../src/driver.ts';
import { MemoryDriver, MemoryError, RETRY_POLICY, Store } from '../src/driver.ts';
import { WorkingMemoryRunner } from '../src/storage/working-memory.ts';

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

/** A locked fallback over `cell` (always found) that records the cells it updated. */
function lockedFallback(cell: { value: string | null }) {
  const locked: WorkingMemoryCell[] = [];
  const afterLostRace: LockedWorkingMemory = {
    kind: 'locked',
    update: async (target, apply) => {
      locked.push(target);
      cell.value = apply(cell.value);
      return true;
    },
  };
  return { locked, afterLostRace };
}

describe('WorkingMemoryRunner', () => {
  it('retries a lost compare-and-set and stores what the winning attempt computed', async () => {
    const { cell, strategy } = casCell(2);
    const calls: Array<string | null> = [];
    const result = await new WorkingMemoryRunner('test', strategy).run(resource, (current: string | null) => {
      calls.push(current);
      return append(current);
    });
    expect(result).toBe('a+');
    expect(cell.value).toBe('a+');
    expect(calls).toEqual(['a', 'a', 'a']);
    // Every write gets a fresh version from core.
    expect(new Set(cell.writes.map((w) => w.version)).size).toBe(3);
  });

  it("gives up with CONFLICT after core's one bound, naming the adapter", async () => {
    const { cell, strategy } = casCell(Number.POSITIVE_INFINITY);
    const failure = new WorkingMemoryRunner('test', strategy).run(resource, append);
    await expect(failure).rejects.toMatchObject({ code: 'CONFLICT', adapter: 'test' });
    expect(cell.writes).toHaveLength(RETRY_POLICY.attempts);
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
    const runner = new WorkingMemoryRunner('test', strategy);
    let called = false;
    const missing = runner.run(thread, () => {
      called = true;
      return 'x';
    });
    await expect(missing).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'test: thread "t1" does not exist',
    });
    expect(called).toBe(false);
    await expect(runner.run(resource, append)).resolves.toBe('+');
    expect(writes).toEqual([[null, '+']]);
  });

  it('after a lost race goes to the lock, and straight there while the cell is contended', async () => {
    const { cell, strategy } = casCell(Number.POSITIVE_INFINITY);
    const { locked, afterLostRace } = lockedFallback(cell);
    const runner = new WorkingMemoryRunner('test', { ...strategy, afterLostRace });
    await expect(runner.run(thread, append)).resolves.toBe('a+');
    expect(cell.writes).toHaveLength(1);
    await expect(runner.run(thread, append)).resolves.toBe('a++');
    expect(cell.reads).toBe(1);
    expect(locked).toEqual([thread, thread]);
    // Another cell is not contended: it tries the compare-and-set first.
    await runner.run(resource, append);
    expect(cell.reads).toBe(2);
  });

  it('tries as many compare-and-sets as the strategy asks before the lock', async () => {
    const { cell, strategy } = casCell(Number.POSITIVE_INFINITY);
    const { afterLostRace } = lockedFallback(cell);
    const runner = new WorkingMemoryRunner('test', { ...strategy, attempts: 4, afterLostRace });
    await expect(runner.run(resource, append)).resolves.toBe('a+');
    expect(cell.writes).toHaveLength(4);
  });

  it('with attempts 0 sends every update to the fallback without a compare-and-set', async () => {
    const { cell, strategy } = casCell(0);
    const { locked, afterLostRace } = lockedFallback(cell);
    const runner = new WorkingMemoryRunner('test', { ...strategy, attempts: 0, afterLostRace });
    await expect(runner.run(resource, append)).resolves.toBe('a+');
    await expect(runner.run(thread, append)).resolves.toBe('a++');
    expect(locked).toEqual([resource, thread]);
    expect(cell.reads).toBe(0);
    expect(cell.writes).toHaveLength(0);
  });

  it('after a lost race takes a lease: waits while it is busy, retries a write lost to an expired lease', async () => {
    const { strategy } = casCell(Number.POSITIVE_INFINITY);
    const events: string[] = [];
    let busy = 2;
    let lost = 1;
    let value: string | null = 'a';
    const lease: LeasedWorkingMemory<number> = {
      kind: 'leased',
      leaseMs: 1_000,
      acquire: async (_cell, token) => {
        if (busy-- > 0) {
          events.push('busy');
          return 'busy';
        }
        events.push(`acquire ${token.length}`);
        return { value, version: 0 };
      },
      write: async (_cell, _expected, next) => {
        if (lost-- > 0) {
          events.push('lost');
          return 'lost';
        }
        value = next;
        events.push('ok');
        return 'ok';
      },
      release: async () => {
        events.push('release');
      },
    };
    const runner = new WorkingMemoryRunner('test', { ...strategy, afterLostRace: lease });
    await expect(runner.run(resource, append)).resolves.toBe('a+');
    expect(value).toBe('a+');
    expect(events).toEqual(['busy', 'busy', 'acquire 36', 'lost', 'acquire 36', 'ok']);
  });

  it('releases the lease when the update throws, and propagates the error', async () => {
    const { strategy } = casCell(Number.POSITIVE_INFINITY);
    const released: string[] = [];
    const lease: LeasedWorkingMemory<number> = {
      kind: 'leased',
      leaseMs: 1_000,
      acquire: async () => ({ value: 'a', version: 0 }),
      write: async () => 'ok',
      release: async (_cell, token) => {
        released.push(token);
      },
    };
    const runner = new WorkingMemoryRunner('test', { ...strategy, afterLostRace: lease });
    const boom = new Error('boom');
    let calls = 0;
    await expect(
      runner.run(resource, (current) => {
        if (++calls > 1) throw boom;
        return `${current}+`;
      }),
    ).rejects.toBe(boom);
    expect(released).toHaveLength(1);
  });

  it('turns a locked update that finds no thread into NOT_FOUND', async () => {
    const strategy: LockedWorkingMemory = { kind: 'locked', update: async () => false };
    await expect(new WorkingMemoryRunner('test', strategy).run(thread, append)).rejects.toBeInstanceOf(
      MemoryError,
    );
  });
});

/** The reference driver recording what `threads.update` was handed. */
class Recording extends MemoryDriver {
  readonly seen: ThreadChange[] = [];
  constructor() {
    super();
    const update = this.threads.update;
    Object.assign(this.threads, {
      update: (change: ThreadChange) => {
        this.seen.push(change);
        return update(change);
      },
    });
  }
}

describe('Store.updateThread', () => {
  it('hands the driver a fresh working-memory version exactly when the update writes working memory', async () => {
    const driver = new Recording();
    const store = new Store(driver);
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
    const versions = driver.seen.map((change) => change.version);
    expect(versions[0]).toBeUndefined();
    expect(versions[3]).toBeUndefined();
    expect(typeof versions[1]).toBe('string');
    expect(typeof versions[2]).toBe('string');
    expect(versions[1]).not.toBe(versions[2]);
  });
});
