import { randomBytes } from 'node:crypto';
import { Redis } from '@upstash/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bridge, startBridge } from '../src/bridge/index.ts';
import { redisSkip, redisUrl, runPrefix } from './env.ts';

const title = redisSkip ? `upstash bridge (skipped: ${redisSkip})` : 'upstash bridge';

describe.skipIf(redisSkip)(title, () => {
  const token = randomBytes(16).toString('hex');
  const prefix = runPrefix('bridge');
  const key = (name: string) => `${prefix}:${name}`;
  let bridge: Bridge;
  /** Auto-pipelining off, so single commands go to `POST /`. */
  let redis: Redis;
  /** The client's defaults: auto-pipelining on (commands batched into `/pipeline`). */
  let piped: Redis;
  /** Raw strings, as the store uses the client. */
  let raw: Redis;

  beforeAll(async () => {
    if (!redisUrl) throw new Error('ENGRAM_REDIS_URL must be set: upstash is listed in ENGRAM_REQUIRE');
    bridge = await startBridge({ redisUrl, token });
    redis = new Redis({ url: bridge.url, token, enableAutoPipelining: false, enableTelemetry: false });
    piped = new Redis({ url: bridge.url, token, enableTelemetry: false });
    raw = new Redis({ url: bridge.url, token, automaticDeserialization: false, enableTelemetry: false });
  });

  afterAll(async () => {
    if (!bridge) return;
    const keys = await redis.eval<string[], string[]>(
      "return redis.call('KEYS', ARGV[1])",
      [],
      [`${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`],
    );
    if (keys.length > 0) await redis.del(...keys);
    await bridge.close();
  });

  it('round-trips strings with non-ASCII text, through / and through auto-pipelines', async () => {
    const text = 'héllo wörld ✓ 日本語 🎉 "quoted" \\ back\nslash';
    expect(await redis.set(key('s1'), text)).toBe('OK');
    expect(await redis.get(key('s1'))).toBe(text);
    expect(await piped.set(key('s2'), text)).toBe('OK');
    const [a, b] = await Promise.all([piped.get(key('s1')), piped.get(key('s2'))]);
    expect([a, b]).toEqual([text, text]);
    expect(await raw.get(key('s1'))).toBe(text);
  });

  it('sends integers as numbers, nil as null, and numeric strings as strings when asked', async () => {
    expect(await redis.incr(key('n'))).toBe(1);
    expect(await redis.incrby(key('n'), 41)).toBe(42);
    expect(await redis.get(key('n'))).toBe(42);
    expect(await raw.get(key('n'))).toBe('42');
    expect(await redis.incrbyfloat(key('f'), 1.5)).toBe(1.5);
    expect(await redis.get(key('missing'))).toBeNull();
    expect(await raw.mget(key('n'), key('missing'))).toEqual(['42', null]);
    expect(await redis.exists(key('n'), key('missing'))).toBe(1);
  });

  it('reads and writes hashes', async () => {
    expect(await redis.hset(key('h'), { name: 'Zoë', age: 33, tags: 'a:b' })).toBe(3);
    expect(await redis.hgetall(key('h'))).toEqual({ name: 'Zoë', age: 33, tags: 'a:b' });
    expect(await redis.hmget(key('h'), 'age', 'nope')).toEqual({ age: 33, nope: null });
    expect(await raw.hmget(key('h'), 'age', 'nope')).toEqual(['33', null]);
    expect(await raw.hgetall(key('h'))).toEqual(['name', 'Zoë', 'age', '33', 'tags', 'a:b']);
    expect(await redis.hgetall(key('no-hash'))).toBeNull();
  });

  it('keeps sorted-set scores and order', async () => {
    await redis.zadd(
      key('z'),
      { score: 2.5, member: 'b' },
      { score: 1, member: 'a' },
      { score: -3, member: 'ñ' },
    );
    expect(await redis.zrange(key('z'), 0, -1)).toEqual(['ñ', 'a', 'b']);
    expect(await redis.zrange(key('z'), 0, -1, { withScores: true })).toEqual(['ñ', -3, 'a', 1, 'b', 2.5]);
    expect(await redis.zscore(key('z'), 'b')).toBe(2.5);
    expect(await redis.zrange(key('z'), '(1', '+inf', { byScore: true })).toEqual(['b']);
    expect(await redis.zcard(key('z'))).toBe(3);
  });

  it('runs eval and passes status replies through like Upstash (OK plain, others encoded)', async () => {
    const result = await raw.eval('return {KEYS[1], ARGV[1], 42, false}', [key('k')], ['ä✓']);
    expect(result).toEqual([key('k'), 'ä✓', 42, null]);
    expect(await redis.eval("return redis.status_reply('PONG')", [], [])).toBe('PONG');
    expect(await redis.eval("return redis.status_reply('OK')", [], [])).toBe('OK');
    await expect(redis.eval("return redis.error_reply('NOPE broken')", [], [])).rejects.toThrow(
      'NOPE broken',
    );
  });

  it('runs createScript: EVALSHA, then EVAL after NOSCRIPT, then EVALSHA again', async () => {
    const sent: string[] = [];
    const spy = new Redis({ url: bridge.url, token, enableAutoPipelining: false, enableTelemetry: false });
    spy.use((req, next) => {
      const body = req.body as string[];
      sent.push(String(body[0]).toLowerCase());
      return next(req);
    });
    const script = spy.createScript<number>(
      `-- ${randomBytes(8).toString('hex')}\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])`,
    );
    expect(await script.exec([key('script')], ['5'])).toBe(5);
    expect(await script.exec([key('script')], ['2'])).toBe(7);
    expect(sent).toEqual(['evalsha', 'eval', 'evalsha']);
  });

  it('runs pipelines, keeping per-command errors apart', async () => {
    const results = await redis
      .pipeline()
      .set(key('p'), 'x')
      .incr(key('pc'))
      .get(key('p'))
      .hset(key('ph'), { a: 1 })
      .exec();
    expect(results).toEqual(['OK', 1, 'x', 1]);
    const kept = await redis
      .pipeline()
      .set(key('p2'), 'y')
      .incr(key('p2'))
      .get(key('p2'))
      .exec({ keepErrors: true });
    expect(kept[0]).toEqual({ result: 'OK', error: undefined });
    expect(kept[1]?.error).toMatch(/not an integer/);
    expect(kept[2]).toEqual({ result: 'y', error: undefined });
    await expect(redis.pipeline().set(key('p3'), 'z').incr(key('p3')).exec()).rejects.toThrow(
      /not an integer/,
    );
  });

  it('runs transactions atomically through /multi-exec', async () => {
    expect(await redis.multi().set(key('t'), '1').incr(key('t')).get(key('t')).exec()).toEqual(['OK', 2, 2]);
    // A runtime error fails only its command; the others still apply.
    const kept = await redis.multi().set(key('t2'), 'a').incr(key('t2')).exec({ keepErrors: true });
    expect(kept[0]?.result).toBe('OK');
    expect(kept[1]?.error).toMatch(/not an integer/);
    // Interleaved writers never see half a transaction.
    await Promise.all(
      Array.from({ length: 20 }, () => piped.multi().incr(key('tx-a')).incr(key('tx-b')).exec()),
    );
    expect(await redis.mget(key('tx-a'), key('tx-b'))).toEqual([20, 20]);
  });

  it('aborts a transaction whose command is refused while queueing (HTTP 400)', async () => {
    const res = await fetch(`${bridge.url}/multi-exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify([
        ['set', key('abort'), 'v'],
        ['nosuchcommand', 'x'],
      ]),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/unknown command/i);
    expect(await redis.get(key('abort'))).toBeNull();
  });

  it('answers command errors with HTTP 400 and an error message', async () => {
    await redis.set(key('e'), 'text');
    await expect(redis.incr(key('e'))).rejects.toThrow(/ERR value is not an integer/);
    await expect(piped.incr(key('e'))).rejects.toThrow(/ERR value is not an integer/);
    const res = await fetch(bridge.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify(['hset', key('e2')]),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/wrong number of arguments/) });
  });

  it('rejects a wrong or missing token with 401 Unauthorized', async () => {
    const wrong = new Redis({ url: bridge.url, token: 'wrong', enableAutoPipelining: false, retry: false });
    await expect(wrong.get(key('s1'))).rejects.toThrow(/Unauthorized/);
    const res = await fetch(bridge.url, { method: 'POST', body: JSON.stringify(['ping']) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'Unauthorized' });
  });

  it('answers an error (never an empty result) when its Redis cannot be reached', async () => {
    const orphan = await startBridge({ redisUrl: 'redis://127.0.0.1:9', token });
    try {
      const client = new Redis({ url: orphan.url, token, enableAutoPipelining: false, retry: false });
      await expect(client.get(key('s1'))).rejects.toThrow(/ECONNREFUSED/);
      const res = await fetch(`${orphan.url}/pipeline`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify([['ping']]),
      });
      expect(res.status).toBe(500);
    } finally {
      await orphan.close();
    }
  });

  it('encodes responses in base64 only when Upstash-Encoding asks for it', async () => {
    await redis.set(key('enc'), 'ünï');
    const ask = (headers: Record<string, string>) =>
      fetch(bridge.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, ...headers },
        body: JSON.stringify(['get', key('enc')]),
      }).then((r) => r.json());
    expect(await ask({ 'Upstash-Encoding': 'base64' })).toEqual({
      result: Buffer.from('ünï').toString('base64'),
    });
    expect(await ask({})).toEqual({ result: 'ünï' });
    const ping = await fetch(bridge.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'Upstash-Encoding': 'base64' },
      body: JSON.stringify(['set', key('enc2'), 1]),
    }).then((r) => r.json());
    expect(ping).toEqual({ result: 'OK' });
  });

  it('moves large values intact across many socket reads', async () => {
    const big = 'ä'.repeat(1_500_000) + randomBytes(1000).toString('base64');
    await raw.set(key('big'), big);
    expect(await raw.get(key('big'))).toBe(big);
    const many = await raw.eval<string[], string[]>(
      'local t = {} for i = 1, 5000 do t[i] = ARGV[1] .. i end return t',
      [],
      ['véry-'],
    );
    expect(many).toHaveLength(5000);
    expect(many[4999]).toBe('véry-5000');
  });
});
