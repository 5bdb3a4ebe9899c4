import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { InMemoryStore, MemoryError, redactDriverError } from '../src/driver.ts';
import { StoreLifecycle } from '../src/storage/lifecycle.ts';
import { caught } from './support.ts';

/** A lifecycle whose open and release are recorded and can be held open or made to fail. */
function recorded() {
  const log: string[] = [];
  let opens = 0;
  let failNext = false;
  let hold: Promise<void> | undefined;
  const lifecycle = new StoreLifecycle(
    () => 'test',
    async () => {
      opens++;
      log.push(`open ${opens} start`);
      await hold;
      if (failNext) {
        failNext = false;
        log.push(`open ${opens} failed`);
        throw new MemoryError('CONNECTION', 'refused');
      }
      log.push(`open ${opens} done`);
    },
    async () => {
      log.push('release');
    },
  );
  return {
    lifecycle,
    log,
    failNextOpen: () => {
      failNext = true;
    },
    holdOpen: () => {
      let resolve!: () => void;
      hold = new Promise((r) => {
        resolve = r;
      });
      return resolve;
    },
  };
}

describe('StoreLifecycle', () => {
  it('opens once for any number of concurrent and later ready() calls', async () => {
    const { lifecycle, log } = recorded();
    await Promise.all([lifecycle.ready(), lifecycle.ready(), lifecycle.ready('listThreads')]);
    await lifecycle.ready();
    expect(log).toEqual(['open 1 start', 'open 1 done']);
  });

  it('forgets a failed open: the next call tries again', async () => {
    const { lifecycle, log, failNextOpen } = recorded();
    failNextOpen();
    expect(await caught(() => lifecycle.ready())).toMatchObject({ code: 'CONNECTION', message: 'refused' });
    await lifecycle.ready();
    expect(log).toEqual(['open 1 start', 'open 1 failed', 'open 2 start', 'open 2 done']);
  });

  it('close() during an open in flight waits for it, then releases; the waiting callers reject', async () => {
    const { lifecycle, log, holdOpen } = recorded();
    const release = holdOpen();
    const waiting = lifecycle.ready('saveThread').catch((error: unknown) => error);
    const closed = lifecycle.close();
    expect(lifecycle.closed).toBe(true);
    release();
    await closed;
    expect(log).toEqual(['open 1 start', 'open 1 done', 'release']);
    expect(await waiting).toMatchObject({
      code: 'CONNECTION',
      message: 'test: saveThread failed: the store is closed; create a new store to connect again',
    });
  });

  it('close() is idempotent and releases once; ready() after it rejects without opening', async () => {
    const { lifecycle, log } = recorded();
    await Promise.all([lifecycle.close(), lifecycle.close()]);
    await lifecycle.close();
    expect(await caught(() => lifecycle.ready())).toMatchObject({ code: 'CONNECTION' });
    expect(log).toEqual(['release']);
  });
});

describe('InMemoryStore follows the lifecycle', () => {
  it('works without init(), and every call after close() rejects with CONNECTION', async () => {
    const s = new InMemoryStore();
    await s.updateResource({ resourceId: 'r', workingMemory: 'wm' });
    await s.close();
    for (const call of [
      () => s.init(),
      () => s.getResourceById({ resourceId: 'r' }),
      () => s.saveMessages([]),
      () => s.deleteMessages([]),
      () => s.listMessagesById({ ids: [] }),
    ]) {
      const error = await caught(call);
      expect(error).toBeInstanceOf(MemoryError);
      expect(error).toMatchObject({ code: 'CONNECTION', adapter: 'memory' });
      expect((error as Error).message).toContain('the store is closed');
    }
  });
});

describe('redactDriverError', () => {
  it('keeps name, codes, stack frames and causes; drops payload fields and redacts messages', () => {
    const inner = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const driver = Object.assign(new Error('null value violates not-null constraint, command was: SECRET'), {
      code: '23502',
      constraint: 'engram_pk',
      detail: 'Failing row contains (SECRET)',
      where: 'SECRET',
      cause: inner,
    });
    const clean = redactDriverError(driver, (m) => m.replace(/, command was: .*/, '')) as Error &
      Record<string, unknown>;
    expect(clean.message).toBe('null value violates not-null constraint');
    expect(clean).toMatchObject({ name: 'Error', code: '23502', constraint: 'engram_pk' });
    expect(clean.detail).toBeUndefined();
    expect((clean.cause as Error & { code: string }).code).toBe('ECONNREFUSED');
    expect(clean.stack).toMatch(/^Error: null value violates not-null constraint\n\s+at /);
    expect(inspect(clean, { depth: 10 })).not.toContain('SECRET');
    expect(redactDriverError('plain SECRET', (m) => m.replace('SECRET', '…'))).toBe('plain …');
  });
});
