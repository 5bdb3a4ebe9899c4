import { type AdapterDescriptor, MemoryError, ownOptions } from '@engram/core/driver';
import { LEASE_MS } from './layout.ts';

/**
 * What tools need to know about `@engram/upstash` (`@engram/upstash/descriptor`): a light module;
 * `open` and `drop` load the adapter and `@upstash/redis` when called.
 */
export const descriptor: AdapterDescriptor = {
  name: 'upstash',
  package: '@engram/upstash',
  schemes: ['https:', 'http:'],
  /**
   * An `UpstashStore` for a REST URL and `options.prefix`, with the token in `ENGRAM_UPSTASH_TOKEN`
   * (else `UPSTASH_REDIS_REST_TOKEN`) of `env`. With `connectTimeoutMs`, the client's retries of a
   * failed request stay within it (two, 50 ms apart and doubling, at most a quarter of it each);
   * else the client's defaults.
   */
  async open(url, options = {}, env = process.env) {
    const { prefix, connectTimeoutMs } = options;
    const token = env.ENGRAM_UPSTASH_TOKEN || env.UPSTASH_REDIS_REST_TOKEN;
    if (!token) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        'upstash: an Upstash URL needs its REST token in ENGRAM_UPSTASH_TOKEN or UPSTASH_REDIS_REST_TOKEN',
        { adapter: 'upstash' },
      );
    }
    const { UpstashStore } = await import('./index.ts');
    const bound = typeof connectTimeoutMs === 'number' ? connectTimeoutMs / 4 : undefined;
    const retry =
      bound === undefined ? undefined : { retries: 2, backoff: (n: number) => Math.min(bound, 50 * 2 ** n) };
    return new UpstashStore({
      ...ownOptions(options, UpstashStore.optionKeys),
      url,
      token,
      prefix,
      ...(retry ? { retry } : {}),
    });
  },
  /** The working-memory lease: a writer that stops holds the others up this long at most. */
  leaseMs: () => LEASE_MS,
  service: {
    envVar: 'ENGRAM_UPSTASH_URL',
    /** A key prefix of its own on the REST endpoint at `ENGRAM_UPSTASH_URL`. */
    async provision(label, env = process.env) {
      const url = env.ENGRAM_UPSTASH_URL;
      if (!url) throw new Error('ENGRAM_UPSTASH_URL is not set');
      const prefix = `engram-test:${label.replace(/[^\w-]/g, '')}-${crypto.randomUUID().slice(0, 8)}`;
      return {
        url,
        options: { prefix },
        drop: () => dropPrefix(url, env.ENGRAM_UPSTASH_TOKEN ?? '', prefix),
      };
    },
  },
};

/** Deletes every key under `prefix` (a test namespace; the store itself never scans). */
async function dropPrefix(url: string, token: string, prefix: string): Promise<void> {
  const { Redis } = await import('@upstash/redis');
  const client = new Redis({ url, token, automaticDeserialization: false, enableTelemetry: false });
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, { match: `${prefix}:*`, count: 1000 });
    if (keys.length > 0) await client.del(...keys);
    cursor = String(next);
  } while (cursor !== '0');
}
