/**
 * The Lua scripts of semantic recall (see `vectors.ts`), after the shared prelude of
 * `scripts.ts`. A message's vector is the hash `<p>:vector:<message>` with `space`, `hash`,
 * `vec` (the float32 values packed little-endian with `struct.pack`) and `xx` (their squared
 * norm, so a search computes one dot product per vector; absent on vectors written before it
 * was kept, where the search computes it); the store's delete scripts remove it with its
 * message. `<p>:vector-space` records the one embedding space (keys: `layout.ts`). Arguments
 * are named, as in `scripts.ts`.
 */
import { PRELUDE } from './scripts.ts';

/** The named arguments of each vector script (besides `prefix`, which every call adds). */
export interface VectorScriptArgs {
  getSpace: Record<string, never>;
  claimSpace: { space: string; dimensions: number };
  /** Vectors of absent messages are skipped. */
  upsert: { space: string; dimensions: number; vectors: { id: string; hash: string; values: number[] }[] };
  get: { space: string; ids: string[] };
  delete: { space: string; ids: string[] };
  /** `threadId` absent: every thread of the resource. */
  search: {
    space: string;
    dimensions: number;
    resourceId: string;
    threadId?: string;
    topK: number;
    scanLimit: number;
    exclude: string[];
    query: number[];
  };
}

/** Returns { embedder, dimensions } or nil. */
const GET_SPACE = `
local s = redis.call('HMGET', K.vectorSpace(), 'embedder', 'dimensions')
if not s[1] then return frame(nil) end
return frame({s[1], s[2]})
`;

/** Records the space unless one is; returns the recorded one. */
const CLAIM_SPACE = `
if redis.call('HSETNX', K.vectorSpace(), 'embedder', A.space) == 1 then
  redis.call('HSET', K.vectorSpace(), 'dimensions', A.dimensions)
end
local s = redis.call('HMGET', K.vectorSpace(), 'embedder', 'dimensions')
return frame({s[1], s[2]})
`;

/** Returns how many vectors were written. */
const UPSERT = `
local n = A.dimensions
local fmt = '<' .. string.rep('f', n)
local written = 0
for _, v in ipairs(A.vectors) do
  if redis.call('EXISTS', K.message(v.id)) == 1 then
    local packed = struct.pack(fmt, unpack(v.values))
    -- The squared norm of the stored (float32) values, kept so a search does not recompute it.
    local x, xx = {struct.unpack(fmt, packed)}, 0
    for i = 1, n do xx = xx + x[i] * x[i] end
    redis.call('HSET', K.vector(v.id), 'space', A.space, 'hash', v.hash, 'vec', packed, 'xx', string.format('%.17g', xx))
    written = written + 1
  end
end
return frame(written)
`;

/** Returns (id, hash) pairs of the stored vectors in that space. */
const GET = `
local out = {}
for _, id in ipairs(A.ids) do
  local v = redis.call('HMGET', K.vector(id), 'space', 'hash')
  if v[1] == A.space then out[#out + 1] = {id, v[2]} end
end
return frame(out)
`;

const DELETE = `
for _, id in ipairs(A.ids) do
  local key = K.vector(id)
  if redis.call('HGET', key, 'space') == A.space then redis.call('DEL', key) end
end
return frame('ok')
`;

/**
 * Scans at most the scan limit of the scope's messages with a vector — threads by latest
 * activity, each newest message first — and keeps the best topK by (score desc, createdAt desc,
 * id asc). Returns (id, threadId, createdAt, hash, score) per hit, best first, then the number
 * of vectors scanned.
 */
const SEARCH = `
local space, n, r = A.space, A.dimensions, A.resourceId
local k, limit = A.topK, A.scanLimit
local excluded = {}
for _, id in ipairs(A.exclude) do excluded[id] = true end
local q, qq = A.query, 0
for i = 1, n do qq = qq + q[i] * q[i] end
local fmt = '<' .. string.rep('f', n)
local best = {}
local function better(a, b)
  if a[5] ~= b[5] then return a[5] > b[5] end
  if a[3] ~= b[3] then return a[3] > b[3] end
  return a[1] < b[1]
end
local threads
if A.threadId ~= nil then
  threads = {}
  if redis.call('HGET', K.thread(A.threadId), 'resourceId') == r then threads[1] = A.threadId end
else
  threads = redis.call('ZREVRANGE', K.resourceThreadsUpdated(r), 0, -1)
end
local scanned = 0
for _, t in ipairs(threads) do
  if scanned >= limit then break end
  local ids = redis.call('ZREVRANGE', K.threadResourceMessages(t, r), 0, -1, 'WITHSCORES')
  for j = 1, #ids, 2 do
    if scanned >= limit then break end
    local id = ids[j]
    if not excluded[id] then
      local v = redis.call('HMGET', K.vector(id), 'space', 'hash', 'vec', 'xx')
      if v[1] == space and v[3] and #v[3] == 4 * n then
        scanned = scanned + 1
        local x = {struct.unpack(fmt, v[3])}
        local dot, xx = 0, tonumber(v[4])
        for i = 1, n do dot = dot + x[i] * q[i] end
        if not xx then
          -- A vector written before its norm was stored: compute it.
          xx = 0
          for i = 1, n do xx = xx + x[i] * x[i] end
        end
        local score = 0
        if xx > 0 and qq > 0 then score = dot / math.sqrt(xx * qq) end
        local hit = {id, t, tonumber(ids[j + 1]), v[2], score}
        if #best < k or better(hit, best[#best]) then
          local at = #best + 1
          while at > 1 and better(hit, best[at - 1]) do
            best[at] = best[at - 1]
            at = at - 1
          end
          best[at] = hit
          if #best > k then best[#best] = nil end
        end
      end
    end
  end
end
local out = {}
for i, h in ipairs(best) do out[i] = {h[1], h[2], string.format('%d', h[3]), h[4], string.format('%.17g', h[5])} end
return frame({out, scanned})
`;

const BODIES = {
  getSpace: GET_SPACE,
  claimSpace: CLAIM_SPACE,
  upsert: UPSERT,
  get: GET,
  delete: DELETE,
  search: SEARCH,
} as const;

/** The name of one vector script. */
export type VectorScriptName = keyof typeof BODIES;

/** Every vector script, with the shared prelude in front. */
export const VECTOR_SCRIPTS: Record<VectorScriptName, string> = Object.fromEntries(
  Object.entries(BODIES).map(([name, body]) => [
    name,
    `-- engram:vectors:${name}\n${PRELUDE}\n${body.trim()}\n`,
  ]),
) as Record<VectorScriptName, string>;
