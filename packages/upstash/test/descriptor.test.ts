import { afterAll, describe, expect, it } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import { Keys, UpstashStore } from '../src/index.ts';
import { upstashSkip } from './env.ts';
import { testClient } from './stores.ts';

describe('the upstash descriptor', () => {
  it('names the adapter, its package, its schemes and its lease', () => {
    expect(descriptor).toMatchObject({
      name: 'upstash',
      package: '@engram/upstash',
      schemes: ['https:', 'http:'],
    });
    expect(descriptor.service.envVar).toBe('ENGRAM_UPSTASH_URL');
    expect(descriptor.leaseMs()).toBe(2_000);
  });

  it('opens a store with the options given and the token of env, without connecting; refuses bad ones', async () => {
    const env = { ENGRAM_UPSTASH_TOKEN: 't' };
    const store = await descriptor.open('http://127.0.0.1:9', { prefix: 'p' }, env);
    expect(store).toBeInstanceOf(UpstashStore);
    expect(store.name).toBe('upstash');
    await store.close();
    // An empty prefix; no token in env.
    for (const [options, refused] of [
      [{ prefix: '' }, env],
      [{}, {}],
    ] as const) {
      await expect(descriptor.open('http://127.0.0.1:9', options, refused)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
  });

  it('refuses to provision without ENGRAM_UPSTASH_URL', async () => {
    await expect(descriptor.service.provision('x', {})).rejects.toThrow('ENGRAM_UPSTASH_URL is not set');
  });

  describe.skipIf(upstashSkip)(`on the service${upstashSkip ? ` (skipped: ${upstashSkip})` : ''}`, () => {
    const drops: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const drop of drops) await drop();
    });

    it('provisions a fresh prefix a store works in, and drop removes every key of it', async () => {
      const a = await descriptor.service.provision('descriptor test');
      const b = await descriptor.service.provision('descriptor test');
      drops.push(a.drop, b.drop);
      expect(a.options.prefix).not.toBe(b.options.prefix);
      expect(String(a.options.prefix)).toMatch(/^engram-test:descriptortest-/);
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
      expect(await store.getThreadById({ threadId: 't' })).toMatchObject({ resourceId: 'r' });
      const other = await descriptor.open(b.url, b.options);
      expect(await other.getThreadById({ threadId: 't' })).toBeNull();
      await a.drop();
      const keys = new Keys(String(a.options.prefix));
      expect(await testClient().exists(keys.schema(), keys.thread('t'), keys.threads('createdAt'))).toBe(0);
      expect(await store.getThreadById({ threadId: 't' })).toBeNull();
    });
  });
});

describe('UpstashStore options', () => {
  it("a misspelt option is INVALID_ARGUMENT naming the one meant; tools' options of other adapters are left out", async () => {
    expect(
      () => new UpstashStore({ url: 'http://127.0.0.1:9', token: 't', prefx: 'tenant-a' } as never),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('did you mean prefix?'),
      }),
    );
    const env = { ENGRAM_UPSTASH_TOKEN: 't' };
    const store = await descriptor.open('http://127.0.0.1:9', { prefix: 'p', synchronous: 'normal' }, env);
    expect(store).toBeInstanceOf(UpstashStore);
    await store.close();
  });
});
