import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import { LibSQLStore } from '../src/index.ts';

describe('the libSQL adapter descriptor', () => {
  it('names the adapter, its package and its schemes; embedded, and SQLite locks never break', () => {
    expect(descriptor).toMatchObject({
      name: 'libsql',
      package: '@engram/libsql',
      schemes: ['file:', 'libsql:', 'ws:', 'wss:'],
    });
    expect(descriptor.service.envVar).toBeUndefined();
    expect(descriptor.leaseMs()).toBe(0);
  });

  it('opens a LibSQLStore with its options, and refuses bad ones with INVALID_ARGUMENT', async () => {
    const store = await descriptor.open(':memory:', { busyTimeoutMs: 1234, synchronous: 'normal' });
    expect(store).toBeInstanceOf(LibSQLStore);
    expect(store.name).toBe('libsql');
    await store.close();
    await expect(descriptor.open('file:x.db', { busyTimeoutMs: 0 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(descriptor.open('file:x.db', { synchronous: 'off' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('provisions a new database file per call, which drop removes', async () => {
    const a = await descriptor.service.provision('descriptor test');
    const b = await descriptor.service.provision('descriptor test');
    expect(a.url).toMatch(/^file:.*engram-descriptortest-.*engram\.db$/);
    expect(a.url).not.toBe(b.url);
    const store = await descriptor.open(a.url, a.options);
    const at = new Date();
    await store.saveThread({
      id: 't',
      resourceId: 'r',
      title: '',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    });
    const other = await descriptor.open(b.url, b.options);
    expect(await other.getThreadById({ threadId: 't' })).toBeNull();
    await Promise.all([store.close(), other.close()]);
    const file = fileURLToPath(`file://${a.url.slice('file:'.length)}`);
    expect(existsSync(file)).toBe(true);
    await Promise.all([a.drop(), b.drop()]);
    expect(existsSync(file)).toBe(false);
  });
});

describe('LibSQLStore options', () => {
  it("a misspelt option is INVALID_ARGUMENT naming the one meant; tools' options of other adapters are left out", async () => {
    for (const [options, meant] of [
      [{ busyTimeoutMS: 10 }, 'busyTimeoutMs'],
      [{ syncronous: 'normal' }, 'synchronous'],
      [{ vectors: { cache: { maxbytes: 0 } } }, 'vectors.cache.maxBytes'],
      [{ vectors: { index: { overfetch: 2 } } }, 'vectors.index.overFetch'],
    ] as const) {
      expect(() => new LibSQLStore({ url: ':memory:', ...options } as never)).toThrow(
        expect.objectContaining({
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining(`did you mean ${meant}?`),
        }),
      );
    }
    const store = await descriptor.open(':memory:', {
      synchronous: 'normal',
      schemaName: 'x',
      vectorScanLimit: 5,
    });
    expect(store).toBeInstanceOf(LibSQLStore);
    await store.close();
  });
});
