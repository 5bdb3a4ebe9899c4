import type { JsonObject, Message } from '@engram/core';
import { Keys, UpstashStore } from '@engram/upstash';
import { Redis } from '@upstash/redis';
import { deepMerge } from '../deep-merge.ts';
import { runScoped } from '../env.ts';
import type { BenchTarget, RawBaseline } from '../target.ts';

/** The run's key prefix: `ENGRAM_BENCH_UPSTASH_PREFIX`, or a fresh one deleted at the end. */
const given = process.env.ENGRAM_BENCH_UPSTASH_PREFIX;
const prefix = () => runScoped('ENGRAM_BENCH_UPSTASH_PREFIX', () => `engram-bench-${process.pid}`);

function client(): Redis {
  return new Redis({
    url: process.env.ENGRAM_UPSTASH_URL as string,
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

/** Upstash REST (the local bridge in front of Redis): the store and `@upstash/redis` side by side. */
export const upstash: BenchTarget = {
  name: 'upstash',
  unavailable: () =>
    process.env.ENGRAM_UPSTASH_URL
      ? null
      : 'ENGRAM_UPSTASH_URL is not set (eval "$(bash scripts/services.sh)")',
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
  async dispose() {
    if (given || !process.env.ENGRAM_UPSTASH_URL) return;
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
