import type { JsonObject, Message } from '@engram/core';
import { Keys, UpstashStore } from '@engram/upstash';
import { Redis } from '@upstash/redis';
import { deepMerge } from '../deep-merge.ts';
import { runScoped, serviceUrl } from '../env.ts';
import type { BenchTarget, RawBaseline, RecallTarget } from '../target.ts';

/** The run's key prefix: `ENGRAM_BENCH_UPSTASH_PREFIX`, or a fresh one deleted at the end. */
const given = process.env.ENGRAM_BENCH_UPSTASH_PREFIX;
const prefix = () => runScoped('ENGRAM_BENCH_UPSTASH_PREFIX', () => `engram-bench-${process.pid}`);

function client(): Redis {
  return new Redis({
    url: serviceUrl('upstash') as string,
    token: process.env.ENGRAM_UPSTASH_TOKEN ?? '',
    automaticDeserialization: false,
    enableTelemetry: false,
  });
}

/** Writes working memory only when its version is still the one read (compare-and-set). */
const CAS = `
if (redis.call('HGET', KEYS[1], 'wmv') or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'workingMemory', ARGV[2], 'wmv', ARGV[3], 'updatedAt', ARGV[4])
return 1
`;

/** The newest ARGV[1] members of sorted set KEYS[1], each read as the hash ARGV[2] .. member. */
const NEWEST = `
local ids = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out = {}
for i, id in ipairs(ids) do out[i] = redis.call('HGETALL', ARGV[2] .. id) end
return out
`;

/**
 * The exact top ARGV[4] of a resource: every thread of sorted set KEYS[1], each thread's messages
 * of the resource (ARGV[1] .. thread .. ARGV[2]), each message's packed float32 vector
 * (ARGV[3] .. id, field vec) dotted with the query (ARGV[5…], unit vectors: dot = cosine).
 * Returns (id, score) pairs, best first.
 */
const SCAN = `
local n = #ARGV - 4
local k = tonumber(ARGV[4])
local q = {}
for i = 1, n do q[i] = tonumber(ARGV[4 + i]) end
local fmt = '<' .. string.rep('f', n)
local best = {}
for _, t in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  for _, id in ipairs(redis.call('ZRANGE', ARGV[1] .. t .. ARGV[2], 0, -1)) do
    local packed = redis.call('HGET', ARGV[3] .. id, 'vec')
    if packed then
      local x = {struct.unpack(fmt, packed)}
      local dot = 0
      for i = 1, n do dot = dot + x[i] * q[i] end
      if #best < k or dot > best[#best][2] then
        local at = #best + 1
        while at > 1 and dot > best[at - 1][2] do
          best[at] = best[at - 1]
          at = at - 1
        end
        best[at] = {id, dot}
        if #best > k then best[#best] = nil end
      end
    end
  end
end
local out = {}
for i, h in ipairs(best) do out[i] = {h[1], string.format('%.17g', h[2])} end
return out
`;

/** The largest resource the recall section searches: the store scans all of it (see note). */
const RECALL_SCAN_LIMIT = 100_000;

/** Upstash REST (the local bridge in front of Redis): the store and `@upstash/redis` side by side. */
export const target: BenchTarget = {
  name: 'upstash',
  async open() {
    const storage = new UpstashStore({ client: client(), prefix: prefix() });
    await storage.init();
    const redis = client();
    const keys = new Keys(prefix());
    const cas = redis.createScript<number>(CAS);
    const newest = redis.createScript<string[][]>(NEWEST);
    // The bench's ids use only characters that key encoding keeps as they are, so a key is
    // the prefix followed by the id.
    const messagePrefix = keys.message('');
    const threadPrefix = keys.thread('');
    const raw: RawBaseline = {
      async getWorkingMemory(resourceId) {
        return (await redis.hget<string>(keys.resource(resourceId), 'workingMemory')) ?? null;
      },
      async replaceWorkingMemory(resourceId, document) {
        await redis.hset(keys.resource(resourceId), {
          workingMemory: document,
          wmv: crypto.randomUUID(),
          updatedAt: String(Date.now()),
        });
      },
      async mergeWorkingMemory(resourceId: string, patch: JsonObject) {
        const key = keys.resource(resourceId);
        for (let attempt = 0; attempt < 100; attempt++) {
          // Without automatic deserialisation the client answers HMGET with a plain list.
          const [stored, version] = (await redis.hmget(key, 'workingMemory', 'wmv')) as unknown as [
            string | null,
            string | null,
          ];
          const next = deepMerge(stored, patch);
          const won = await cas.exec([key], [version ?? '', next, crypto.randomUUID(), String(Date.now())]);
          if (Number(won) === 1) return;
        }
        throw new Error('raw compare-and-set gave up after 100 attempts');
      },
      async saveMessages(batch: Message[]) {
        const pipeline = redis.pipeline();
        for (const m of batch) {
          const at = m.createdAt.getTime();
          pipeline.hset(keys.message(m.id), {
            id: m.id,
            threadId: m.threadId,
            resourceId: m.resourceId,
            role: m.role,
            type: m.type,
            content: JSON.stringify(m.content),
            createdAt: String(at),
          });
          pipeline.zadd(keys.threadMessages(m.threadId), { score: at, member: m.id });
        }
        await pipeline.exec();
      },
      async listNewest(threadId, n) {
        const rows = await newest.exec([keys.threadMessages(threadId)], [String(n), messagePrefix]);
        return rows.map((row) => {
          const record: Record<string, string> = {};
          for (let i = 0; i < row.length; i += 2) record[row[i] as string] = row[i + 1] as string;
          return { ...record, content: JSON.parse(record.content ?? 'null') };
        });
      },
      async listThreads(resourceId, n) {
        return newest.exec([keys.resourceThreads(resourceId, 'createdAt')], [String(n), threadPrefix]);
      },
    };
    return {
      storage,
      raw,
      async close() {
        await storage.close();
      },
    };
  },
  async openWithoutKeywords() {
    const storage = new UpstashStore({ client: client(), prefix: prefix(), keywords: false });
    await storage.init();
    return storage;
  },
  async openRecall(): Promise<RecallTarget> {
    const storage = new UpstashStore({
      client: client(),
      prefix: prefix(),
      vectorScanLimit: RECALL_SCAN_LIMIT,
    });
    await storage.init();
    const keys = new Keys(prefix());
    const scan = client().createScript<[string, string][]>(SCAN);
    return {
      storage,
      // Each vector is a few kB of EVAL arguments: 250 per call keeps requests small.
      batch: 250,
      note: `vectorScanLimit ${RECALL_SCAN_LIMIT} (default 5,000, which would search only the newest 5,000 messages of the 10k and 100k resources): both sides scan every vector of the resource; memory.recall timed up to 10,000 messages only (at 100,000 each call is the same multi-second scan as searchVectors, and the run's time is better spent on that row)`,
      memoryRecallUpTo: 10_000,
      raw: {
        describe:
          "one EVAL: the resource's threads (sorted set), each thread's messages, HGET of each packed vector, dot product, top k kept in the script",
        async scan(resourceId, vector, topK) {
          // The bench's ids use only characters that key encoding keeps as they are.
          const rows = await scan.exec(
            [keys.resourceThreads(resourceId, 'updatedAt')],
            [
              keys.threadMessages(''),
              `:${resourceId}`,
              `${prefix()}:vector:`,
              String(topK),
              ...Array.from(vector, String),
            ],
          );
          return rows.map(([id]) => ({ id }));
        },
      },
      async close() {
        await storage.close();
      },
    };
  },
  async dispose() {
    if (given || !serviceUrl('upstash')) return;
    const redis = client();
    let cursor = '0';
    do {
      const [next, found] = (await redis.scan(cursor, { match: `${prefix()}:*`, count: 1000 })) as [
        string,
        string[],
      ];
      if (found.length > 0) await redis.del(...found);
      cursor = String(next);
    } while (cursor !== '0');
  },
};
