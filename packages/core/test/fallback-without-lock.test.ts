import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Memory } from '../src/index.ts';
import { NonAtomicStore } from './support.ts';

// The fallback test of fallback.test.ts, run with the lock replaced by one that does nothing:
// it must lose keys, which shows the lock is what makes that test pass.
vi.mock('../src/working-memory/fallback-lock.ts', () => {
  class FallbackLock {
    run<T>(_scope: string, _id: string, task: () => Promise<T>): Promise<T> {
      return task();
    }
    get pending(): number {
      return 0;
    }
  }
  const lock = new FallbackLock();
  return { FallbackLock, fallbackLockFor: () => lock };
});

describe('fallback without its lock (control)', () => {
  it('100 concurrent schema-mode updates of different keys lose keys', async () => {
    const memory = new Memory({
      storage: new NonAtomicStore(),
      options: { workingMemory: { schema: z.record(z.string(), z.number()) } },
    });
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        memory.applyWorkingMemoryPatch({ resourceId: 'r', patch: { [`k${i}`]: i } }),
      ),
    );
    const survived = Object.keys(JSON.parse((await memory.getWorkingMemory({ resourceId: 'r' })) ?? '{}'));
    expect(survived.length).toBeLessThan(100);
  });
});
