import { createHash } from 'node:crypto';
import { InMemoryStore, type JsonObject, MemoryError, type Message, type Thread } from '@engram/core';
import { Redis } from '@upstash/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import { encodeId, Keys, LAYOUT_VERSION, UpstashStore } from '../src/index.ts';
import { SCRIPTS } from '../src/scripts.ts';
import { runPrefix, upstashSkip, upstashToken, upstashUrl } from './env.ts';
import { dropPrefix, testClient } from './stores.ts';

const title = upstashSkip ? `UpstashStore (skipped: ${upstashSkip})` : 'UpstashStore';
const prefix = runPrefix('store');
const keys = new Keys(prefix);
let seq = 0;
const uid = (name: string) => `${name}-${Date.now().toString(36)}-${++seq}`;

const at = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms);
const thread = (id: string, resourceId: string, extra: Partial<Thread> = {}): Thread => ({
  id,
  resourceId,
  title: `title ${id}`,
  metadata: {},
  createdAt: at(0),
  updatedAt: at(0),
  ...extra,
});
const message = (id: string, t: Thread, ms: number, content: Message['content'] = `text ${id}`): Message => ({
  id,
  threadId: t.id,
  resourceId: t.resourceId,
  role: 'user',
  content,
  type: 'text',
  createdAt: at(ms),
});

/** Script source by SHA-1, to see what an EVALSHA runs on the server. */
const scriptBySha = new Map(
  Object.values(SCRIPTS).map((source) => [createHash('sha1').update(source).digest('hex'), source]),
);

/** A store whose client records every command it sends (single, pipelined or in a transaction). */
function spied(): { store: UpstashStore; client: Redis; sent: string[][] } {
  const client = testClient();
  const sent: string[][] = [];
  client.use((req, next) => {
    const path = req.path?.[0];
    const body = req.body as unknown[];
    const commands = path === 'pipeline' || path === 'multi-exec' ? (body as unknown[][]) : [body];
    for (const command of commands) sent.push(command.map(String));
    return next(req);
  });
  return { store: new UpstashStore({ client, prefix }), client, sent };
}

/** What the server runs for the recorded commands: command names, plus script sources. */
function serverSide(sent: string[][]): { names: string[]; sources: string[] } {
  const names = sent.map((c) => (c[0] ?? '').toLowerCase());
  const sources = sent.flatMap((c) => {
    const name = (c[0] ?? '').toLowerCase();
    if (name === 'eval') return [c[1] ?? ''];
    if (name === 'evalsha') return [scriptBySha.get(c[1] ?? '') ?? `<unknown script ${c[1]}>`];
    return [];
  });
  return { names, sources };
}

/** Redis's own per-command call counters (commands run inside scripts included). */
async function commandStats(): Promise<Map<string, number>> {
  const res = await fetch(upstashUrl ?? '', {
    method: 'POST',
    headers: { authorization: `Bearer ${upstashToken}` },
    body: JSON.stringify(['info', 'commandstats']),
  });
  const info = ((await res.json()) as { result: string }).result;
  const stats = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    stats.set(match[1] ?? '', Number(match[2]));
  return stats;
}

describe.skipIf(upstashSkip)(title, () => {
  let raw: Redis;
  let store: UpstashStore;

  beforeAll(async () => {
    if (!upstashUrl) throw new Error('ENGRAM_UPSTASH_URL must be set: upstash is listed in ENGRAM_REQUIRE');
    raw = testClient();
    store = new UpstashStore({ url: upstashUrl, token: upstashToken, prefix });
    await store.init();
  });

  afterAll(async () => {
    if (upstashUrl) await dropPrefix(prefix);
  });

  it('never sends SCAN or KEYS when saving, reading, listing and deleting', async () => {
    const { store: s, sent } = spied();
    const r = uid('res');
    const t = thread(uid('t'), r, { metadata: { topic: 'x' } });
    await s.saveThread(t);
    await s.saveMessages([message(uid('m'), t, 1), message(uid('m'), t, 2)]);
    const [first] = (await s.listMessages({ threadId: t.id })).messages;
    await s.getThreadById({ threadId: t.id });
    await s.listThreads({ resourceId: r });
    await s.listThreads({ resourceId: r, metadata: { topic: 'x' }, orderBy: 'updatedAt' });
    await s.listThreads({ perPage: 5 });
    await s.listMessages({
      threadId: t.id,
      resourceId: r,
      direction: 'DESC',
      include: [{ id: first?.id ?? '' }],
    });
    await s.listMessagesById({ ids: [first?.id ?? ''] });
    await s.updateMessages([{ id: first?.id ?? '', content: 'edited' }]);
    await s.updateThread({ id: t.id, metadata: { more: 1 } });
    await s.updateResource({ resourceId: r, workingMemory: 'wm', metadata: { a: 1 } });
    await s.updateWorkingMemoryAtomically({ scope: 'resource', resourceId: r, update: (c) => `${c}!` });
    await s.getResourceById({ resourceId: r });
    expect(await s.listResourceIds?.({ after: r.slice(0, -1), limit: 1_000 })).toContain(r);
    await s.deleteMessages([first?.id ?? '']);
    await s.deleteThread({ threadId: t.id });

    const { names, sources } = serverSide(sent);
    expect(names.length).toBeGreaterThan(10);
    expect(names.every((n) => n === 'evalsha' || n === 'eval')).toBe(true);
    expect(names).not.toContain('scan');
    expect(names).not.toContain('keys');
    expect(sources.length).toBe(names.length);
    for (const source of sources) {
      expect(source).not.toMatch(/<unknown script/);
      expect(source).not.toMatch(/redis\.call\(\s*'(SCAN|KEYS|HSCAN|ZSCAN|SSCAN)'/i);
    }
    for (const source of Object.values(SCRIPTS)) expect(source).not.toMatch(/'(SCAN|KEYS)'/i);
  });

  it('lists the newest 20 of 10,000 messages with a bounded number of commands', async () => {
    const r = uid('res');
    const big = thread(uid('big'), r);
    const small = thread(uid('small'), r);
    await store.saveThread(big);
    await store.saveThread(small);
    for (let batch = 0; batch < 10; batch++) {
      await store.saveMessages(
        Array.from({ length: 1000 }, (_, i) =>
          message(`${big.id}-${batch * 1000 + i}`, big, batch * 1000 + i),
        ),
      );
    }
    await store.saveMessages(Array.from({ length: 30 }, (_, i) => message(`${small.id}-${i}`, small, i)));

    const { store: s, sent } = spied();
    // Warm the script cache, so both listings below run the same way.
    await s.listMessages({ threadId: small.id, perPage: 1 });
    sent.length = 0;
    const before = await commandStats();
    const page = await s.listMessages({ threadId: big.id, perPage: 20, direction: 'DESC' });
    const after = await commandStats();
    const forBig = sent.length;
    sent.length = 0;
    await s.listMessages({ threadId: small.id, perPage: 20, direction: 'DESC' });

    expect(page.total).toBe(10_000);
    expect(page.hasMore).toBe(true);
    expect(page.messages.map((m) => m.id)).toEqual(
      Array.from({ length: 20 }, (_, i) => `${big.id}-${9999 - i}`),
    );
    // One script call from the client, the same as for a 30-message thread…
    expect(forBig).toBe(1);
    expect(sent.length).toBe(forBig);
    // …and on the server it reads 20 message hashes, not 10,000 (tests running in parallel on the
    // same Redis may add some).
    const hgetall = (after.get('hgetall') ?? 0) - (before.get('hgetall') ?? 0);
    expect(hgetall).toBeGreaterThanOrEqual(20);
    expect(hgetall).toBeLessThan(5_000); // reading the whole thread would be ≥ 10,000
  });

  it('encodes ids in keys so :, *, {, }, % and prefixes never collide', async () => {
    expect(encodeId('a:b*{c}%')).toBe('a%3Ab%2A%7Bc%7D%25');
    expect(encodeId('é 😀')).toBe('%C3%A9%20%F0%9F%98%80');
    expect(encodeId('r1')).not.toBe(encodeId('r10'));
    const ids = ['x:y', 'x', 'x*', '{x}', 'x%3A', 'r1', 'r10', 'é', '~._-', 'q\'"\\'].map(
      (s) => `${uid('k')}${s}`,
    );
    for (const id of ids) await store.saveThread(thread(id, id));
    for (const id of ids) {
      // The keys the Lua scripts wrote are the keys layout.ts names (a backdoor read).
      const hash = (await raw.hgetall(keys.thread(id))) as unknown as string[];
      expect(hash.slice(0, 2)).toEqual(['id', id]);
      expect(await raw.zscore(keys.resourceThreads(id, 'createdAt'), id)).toBe(String(at(0).getTime()));
      expect(await raw.zscore(keys.threads('updatedAt'), id)).toBe(String(at(0).getTime()));
      const page = await store.listThreads({ resourceId: id });
      expect(page.threads.map((t) => t.id)).toEqual([id]);
    }
  });

  it('keeps the message indexes in step with moves, edits and deletes', async () => {
    const r = uid('res');
    const a = thread(uid('a'), r);
    const b = thread(uid('b'), r);
    await store.saveThread(a);
    await store.saveThread(b);
    const m = message(uid('m'), a, 5);
    await store.saveMessages([m, message(uid('m2'), a, 6)]);
    await store.saveMessages([{ ...m, threadId: b.id }]);
    expect(await raw.zscore(keys.threadMessages(a.id), m.id)).toBeNull();
    expect(await raw.zscore(keys.threadMessages(b.id), m.id)).toBe(String(at(5).getTime()));
    expect(await raw.zscore(keys.threadMessages(b.id, r), m.id)).toBe(String(at(5).getTime()));
    await store.updateMessages([{ id: m.id, createdAt: at(9) }]);
    expect(await raw.zscore(keys.threadMessages(b.id, r), m.id)).toBe(String(at(9).getTime()));
    await store.deleteThread({ threadId: b.id });
    for (const key of [
      keys.message(m.id),
      keys.threadMessages(b.id),
      keys.threadMessages(b.id, r),
      keys.thread(b.id),
    ]) {
      expect(await raw.exists(key)).toBe(0);
    }
    expect(await raw.exists(keys.threadResources(b.id))).toBe(0);
    expect(await raw.zscore(keys.resourceThreads(r, 'updatedAt'), b.id)).toBeNull();
    expect((await store.listMessages({ threadId: a.id })).total).toBe(1);
  });

  it('round-trips and merges metadata exactly like the in-memory store ({} vs [], big numbers, __proto__)', async () => {
    const oracle = new InMemoryStore();
    const tricky: JsonObject = JSON.parse(
      '{"empty":{},"list":[],"nested":{"a":[],"b":{},"c":[{}]},"big":9007199254740993,"max":9007199254740991,' +
        '"tiny":1e-300,"huge":1e300,"frac":0.1,"neg":-0,"str":"123","null":null,"t":true,' +
        '"__proto__":{"polluted":true},".dot":"x","ünï":"ü"}',
    );
    const id = uid('meta');
    const t = thread(id, uid('res'), { metadata: tricky });
    for (const s of [store, oracle]) await s.saveThread(t);
    const patch: JsonObject = JSON.parse('{"list":{},"empty":[],"added":{"x":[]},"__proto__":1}');
    const [got, want] = await Promise.all(
      [store, oracle].map((s) => s.updateThread({ id, metadata: patch })),
    );
    expect(JSON.stringify(sortKeys(got?.metadata))).toBe(JSON.stringify(sortKeys(want?.metadata)));
    const read = await store.getThreadById({ threadId: id });
    expect(JSON.stringify(sortKeys(read?.metadata))).toBe(JSON.stringify(sortKeys(want?.metadata)));
    expect(Object.getPrototypeOf(read?.metadata)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();

    const rid = uid('res');
    const [rGot, rWant] = await Promise.all(
      [store, oracle].map((s) => s.updateResource({ resourceId: rid, metadata: tricky, workingMemory: '' })),
    );
    expect(JSON.stringify(sortKeys(rGot?.metadata))).toBe(JSON.stringify(sortKeys(rWant?.metadata)));
    expect(rGot?.workingMemory).toBe('');
  });

  it('works with an injected client that JSON-parses replies', async () => {
    const parsing = new Redis({ url: upstashUrl ?? '', token: upstashToken, enableTelemetry: false });
    const s = new UpstashStore({ client: parsing, prefix });
    const t = thread(uid('json'), uid('res'), { title: '123', metadata: { n: '42' } });
    await s.saveThread(t);
    expect(await s.getThreadById({ threadId: t.id })).toEqual(t);
    const m = message(uid('m'), t, 1, '"quoted"');
    await s.saveMessages([m, message(uid('m'), t, 2, '{"a":1}'), message(uid('m'), t, 3, 7)]);
    expect(await s.getThreadById({ threadId: t.id })).toMatchObject({ title: '123', metadata: { n: '42' } });
    const page = await s.listMessages({ threadId: t.id });
    expect(page.messages.map((x) => x.content)).toEqual(['"quoted"', '{"a":1}', 7]);
    expect(await s.updateResource({ resourceId: t.resourceId, workingMemory: 'null' })).toMatchObject({
      workingMemory: 'null',
    });
  });

  it('gives up with CONFLICT after one compare-and-set and writes under leases for twice a lease at most', async () => {
    const client = testClient();
    const rid = uid('res');
    const casSha = createHash('sha1').update(SCRIPTS.casWorkingMemory).digest('hex');
    // A rival writer that always gets in between the read and the compare-and-set.
    client.use(async (req, next) => {
      const bodies = req.path?.[0] === 'pipeline' ? (req.body as unknown[][]) : [req.body as unknown[]];
      if (bodies.some((b) => b[1] === casSha || String(b[1]).includes('engram:casWorkingMemory'))) {
        await raw.hset(keys.resource(rid), { wmv: `rival-${Math.random()}` });
      }
      return next(req);
    });
    const s = new UpstashStore({ client, prefix });
    await store.updateResource({ resourceId: rid, metadata: { kept: true } });
    let calls = 0;
    const started = Date.now();
    const error = await s
      .updateWorkingMemoryAtomically({
        scope: 'resource',
        resourceId: rid,
        update: () => {
          calls++;
          return 'mine';
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemoryError);
    expect((error as MemoryError).code).toBe('CONFLICT');
    // One optimistic attempt, then writes under leases of its own (only an expired lease or a
    // writer that ignores leases, like this rival, can beat them) until core's bound for a
    // leased update, twice the lease, has passed.
    const elapsed = Date.now() - started;
    expect(calls).toBeGreaterThan(2);
    expect(elapsed).toBeGreaterThanOrEqual(2 * descriptor.leaseMs());
    expect(elapsed).toBeLessThan(2 * descriptor.leaseMs() + 2_000);
    expect((await store.getResourceById({ resourceId: rid }))?.workingMemory ?? null).toBeNull();
    expect(await raw.exists(`${keys.resource(rid)}:wmlock`)).toBe(0);
  });

  it('after a lost race, waits for the lease without calling update, and frees it when update throws', async () => {
    const rid = uid('res');
    await store.updateResource({ resourceId: rid, workingMemory: 'base' });
    const lease = `${keys.resource(rid)}:wmlock`;
    // Another writer holds the lease for a moment: this one's compare-and-set answers 'locked'.
    await raw.set(lease, 'other', { px: 300 });
    const seen: (string | null)[] = [];
    const value = await store.updateWorkingMemoryAtomically({
      scope: 'resource',
      resourceId: rid,
      update: (current) => {
        seen.push(current);
        return `${current}+mine`;
      },
    });
    expect(value).toBe('base+mine');
    // Once for the optimistic attempt, once under its own lease; none while it waited.
    expect(seen).toEqual(['base', 'base']);
    expect(await raw.exists(lease)).toBe(0);
    // Straight to the lease now (the record lost a race a moment ago); a throwing update frees it.
    await expect(
      store.updateWorkingMemoryAtomically({
        scope: 'resource',
        resourceId: rid,
        update: () => {
          throw new Error('refused');
        },
      }),
    ).rejects.toThrow('refused');
    expect(await raw.exists(lease)).toBe(0);
    expect((await store.getResourceById({ resourceId: rid }))?.workingMemory).toBe('base+mine');
  });

  it('a lease left by a writer that died holds others up only until it expires', async () => {
    const rid = uid('res');
    await store.updateResource({ resourceId: rid, workingMemory: 'base' });
    // What a writer killed between taking its lease and writing leaves behind (its 2 s lease).
    await raw.set(`${keys.resource(rid)}:wmlock`, 'dead', { px: 2_000 });
    const started = Date.now();
    const value = await store.updateWorkingMemoryAtomically({
      scope: 'resource',
      resourceId: rid,
      update: (current) => `${current}+after`,
    });
    expect(value).toBe('base+after');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it('records its layout version and refuses a newer one with MIGRATION', async () => {
    const own = runPrefix('layout');
    const s = new UpstashStore({ client: testClient(), prefix: own });
    await s.init();
    await s.init();
    expect(await raw.get(`${own}:schema`)).toBe(String(LAYOUT_VERSION));
    await raw.set(`${own}:schema`, String(LAYOUT_VERSION + 1));
    // The layout is checked once per store, when it opens: a new store refuses the newer one,
    // in init() and in any first operation (a failed open is retried, and fails again).
    const later = new UpstashStore({ client: testClient(), prefix: own });
    await expect(later.init()).rejects.toMatchObject({ code: 'MIGRATION' });
    await expect(later.getThreadById({ threadId: 't' })).rejects.toMatchObject({ code: 'MIGRATION' });
    await raw.del(`${own}:schema`);
  });

  it('maps a wrong token to CONNECTION and bad options to INVALID_ARGUMENT', async () => {
    const s = new UpstashStore({ url: upstashUrl ?? '', token: 'wrong-token', prefix, retry: false });
    await expect(s.getThreadById({ threadId: 'x' })).rejects.toMatchObject({ code: 'CONNECTION' });
    expect(() => new UpstashStore({ url: '', token: 't' })).toThrow(MemoryError);
    expect(() => new UpstashStore({ url: 'not a url', token: 't' })).toThrow(/INVALID|client|url/i);
    expect(() => new UpstashStore({ client: testClient(), prefix: '' })).toThrow(MemoryError);
  });
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      Object.defineProperty(out, key, {
        value: sortKeys((value as Record<string, unknown>)[key]),
        enumerable: true,
      });
    }
    return out;
  }
  return value;
}
