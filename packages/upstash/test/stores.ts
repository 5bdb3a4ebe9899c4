import { Redis } from '@upstash/redis';
import { UpstashStore, type UpstashStoreOptions } from '../src/index.ts';

/**
 * Test stores over ENGRAM_UPSTASH_URL. Every store of one run shares the prefix in
 * ENGRAM_UPSTASH_TEST_PREFIX (set once by the test file, inherited by forked workers).
 */
export function testClient(): Redis {
  return new Redis({
    url: process.env.ENGRAM_UPSTASH_URL ?? '',
    token: process.env.ENGRAM_UPSTASH_TOKEN ?? '',
    automaticDeserialization: false,
    enableTelemetry: false,
    retry: { retries: 1, backoff: () => 20 },
  });
}

const clients = new WeakMap<UpstashStore, Redis>();

/** A store with its own client, on the run's prefix. */
export function testStore(
  prefix = process.env.ENGRAM_UPSTASH_TEST_PREFIX,
  options: Pick<UpstashStoreOptions, 'keywords'> = {},
): UpstashStore {
  if (!prefix) throw new Error('ENGRAM_UPSTASH_TEST_PREFIX is not set');
  const client = testClient();
  const store = new UpstashStore({ ...options, client, prefix });
  clients.set(store, client);
  return store;
}

/** Points the store's client at a closed port: every later call fails to connect. */
export function breakStore(store: UpstashStore): void {
  const client = clients.get(store);
  if (!client) throw new Error('not a test store');
  (client as unknown as { client: { baseUrl: string } }).client.baseUrl = 'http://127.0.0.1:9';
}

/**
 * Every key matching `pattern`, by a whole SCAN (one call of `count` 1000 looks at 1000 slots
 * only, so on a server holding more keys it misses some).
 */
export async function keysMatching(pattern: string): Promise<string[]> {
  const client = testClient();
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = (await client.scan(cursor, { match: pattern, count: 1000 })) as [string, string[]];
    found.push(...keys);
    cursor = String(next);
  } while (cursor !== '0');
  return found;
}

/**
 * Every key under `prefix` with what it holds (string, hash fields and values, set, sorted set
 * or list members), one text per key: the conformance `storedRows` hook.
 */
export async function keysWithValues(prefix: string): Promise<string[]> {
  const keys = await keysMatching(`${prefix}:*`);
  const client = testClient();
  const rows: string[] = [];
  for (let at = 0; at < keys.length; at += 500) {
    const part = keys.slice(at, at + 500);
    const types = client.pipeline();
    for (const key of part) types.type(key);
    const kinds = (await types.exec()) as string[];
    const reads = client.pipeline();
    part.forEach((key, i) => {
      const kind = kinds[i];
      if (kind === 'hash') reads.hgetall(key);
      else if (kind === 'set') reads.smembers(key);
      else if (kind === 'zset') reads.zrange(key, 0, -1);
      else if (kind === 'list') reads.lrange(key, 0, -1);
      else reads.get(key);
    });
    const values = await reads.exec();
    rows.push(...part.map((key, i) => `${key} ${JSON.stringify(values[i])}`));
  }
  return rows;
}

/** Deletes every key under `prefix` (test cleanup only; the store itself never scans). */
export async function dropPrefix(prefix: string): Promise<void> {
  const keys = await keysMatching(`${prefix}:*`);
  for (let at = 0; at < keys.length; at += 1000) await testClient().del(...keys.slice(at, at + 1000));
}

/**
 * The conformance `withSecret` hook: stores holding `secret` as their token against a closed
 * port and against the real endpoint (which refuses it), and as a URL password (refused at
 * construction).
 */
export function storesWithSecret(secret: string): Record<string, () => UpstashStore> {
  const url = process.env.ENGRAM_UPSTASH_URL ?? '';
  const retry = { retries: 0, backoff: () => 0 };
  const withPassword = new URL(url);
  withPassword.username = 'default';
  withPassword.password = secret;
  return {
    'token, closed port': () => new UpstashStore({ url: 'http://127.0.0.1:9', token: secret, retry }),
    'wrong token, real endpoint': () => new UpstashStore({ url, token: secret, retry }),
    'password in the URL, real endpoint': () =>
      new UpstashStore({
        url: withPassword.toString(),
        token: process.env.ENGRAM_UPSTASH_TOKEN ?? '',
        retry,
      }),
  };
}
