import { inspect } from 'node:util';
import { isMemoryError, type Message, type Thread } from '@engram/core';
import { Redis } from '@upstash/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bridge, startBridge } from '../src/bridge/index.ts';
import { redactMessage } from '../src/errors.ts';
import { UpstashStore } from '../src/index.ts';
import { redisSkip, redisUrl, runPrefix } from './env.ts';
import { dropPrefix } from './stores.ts';

const title = redisSkip ? `upstash errors (skipped: ${redisSkip})` : 'upstash errors';

describe('redactMessage', () => {
  it('drops the command @upstash/redis appends and the body of an unreadable reply', () => {
    expect(redactMessage('ERR bad thing, command was: ["evalsha","abc","0","SECRET"]')).toBe('ERR bad thing');
    expect(redactMessage('Unable to parse response body: {"result":"SECRET')).toBe(
      'Unable to parse response body',
    );
    expect(redactMessage('fetch failed')).toBe('fetch failed');
  });
});

describe('credentials in the URL', () => {
  it('a URL with a user or password is refused with INVALID_ARGUMENT that does not quote it', () => {
    for (const url of [
      'https://default:UpstashS3cret@eu1.example.io',
      'https://UpstashS3cret@eu1.example.io',
    ]) {
      let caught: unknown;
      try {
        new UpstashStore({ url, token: 'token' });
      } catch (error) {
        caught = error;
      }
      expect(isMemoryError(caught, 'INVALID_ARGUMENT'), url).toBe(true);
      expect((caught as Error).message).toContain('url must not hold a user name or password');
      expect(inspect(caught, { depth: 10 })).not.toContain('UpstashS3cret');
    }
  });
});

describe.skipIf(redisSkip)(title, () => {
  // A bridge of its own with a small request limit, so the server refuses a large command the
  // way Upstash refuses one over its maximum request size.
  const token = 'errors-test-token';
  const prefix = runPrefix('errors');
  let bridge: Bridge;
  let store: UpstashStore;

  beforeAll(async () => {
    if (!redisUrl) throw new Error('ENGRAM_REDIS_URL must be set');
    bridge = await startBridge({ redisUrl, token, maxBodyBytes: 4_096 });
    const client = new Redis({
      url: bridge.url,
      token,
      automaticDeserialization: false,
      enableTelemetry: false,
    });
    store = new UpstashStore({ client, prefix });
  });

  afterAll(async () => {
    await store?.close();
    await bridge?.close();
    if (process.env.ENGRAM_UPSTASH_URL) await dropPrefix(prefix);
  });

  /** Every way a logger could print the error: message, String(), inspect with causes, JSON. */
  function printed(error: unknown): string {
    return [
      (error as Error).message,
      String(error),
      inspect(error, { depth: 10 }),
      JSON.stringify(error),
    ].join('\n');
  }

  it('a refused saveMessages or updateResource names the operation and ids, never the payload', async () => {
    const secret = `SECRET-${Date.now()}`;
    const payload = `${secret} ${'x'.repeat(8_000)}`;
    const at = new Date(Date.UTC(2024, 0, 1));
    const t: Thread = {
      id: 't-errors',
      resourceId: 'r-errors',
      title: '',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    };
    await store.saveThread(t);
    const m: Message = {
      id: 'm-errors',
      threadId: t.id,
      resourceId: t.resourceId,
      role: 'user',
      content: payload,
      type: 'text',
      createdAt: at,
    };
    for (const [operation, call] of [
      ['saveMessages', () => store.saveMessages([m])],
      ['updateResource', () => store.updateResource({ resourceId: t.resourceId, workingMemory: payload })],
      ['updateThread', () => store.updateThread({ id: t.id, metadata: { workingMemory: payload } })],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(isMemoryError(error, 'STORAGE'), String(error)).toBe(true);
      expect((error as Error).message).toMatch(
        new RegExp(`^upstash: ${operation} failed: ERR request body is larger`),
      );
      expect(printed(error).includes(secret), `${operation}: the payload is in the printed error`).toBe(
        false,
      );
    }
    expect(await store.getResourceById({ resourceId: t.resourceId })).toBeNull();
  });
});
