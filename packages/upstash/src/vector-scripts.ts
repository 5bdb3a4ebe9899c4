/**
 * The Lua of semantic recall (see `vectors.ts`), run after the prelude of `scripts.ts`. A vector
 * is the hash `<p>:vector:<message>`: `space`, `hash`, `vec` (float32 packed little-endian) and
 * `xx` (its squared norm; absent on older vectors); `OP.dropVectors` and `OP.dropThreadVectors`
 * delete it with its message. `<p>:vector-space` records the one embedding space.
 */

/** Given `space` and `dimensions`, records them unless a space is. Returns { embedder, dimensions }. */
const SPACE = `
if A.space and redis.call('HSETNX', K.vectorSpace(), 'embedder', A.space) == 1 then
  redis.call('HSET', K.vectorSpace(), 'dimensions', A.dimensions)
end
local s = redis.call('HMGET', K.vectorSpace(), 'embedder', 'dimensions')
return frame(s[1] and s)
`;

/** `space`, `dimensions`, `vectors` ({ id, hash, values }); those of absent messages are skipped. */
const UPSERT = `
local n, fmt = A.dimensions, '<' .. string.rep('f', A.dimensions)
for _, v in ipairs(A.vectors) do
  if redis.call('EXISTS', K.message(v.id)) == 1 then
    local packed = struct.pack(fmt, unpack(v.values))
    -- The squared norm of the stored (float32) values, kept so a search does not recompute it.
    local x, xx = {struct.unpack(fmt, packed)}, 0
    for i = 1, n do xx = xx + x[i] * x[i] end
    redis.call('HSET', K.vector(v.id), 'space', A.space, 'hash', v.hash, 'vec', packed, 'xx', string.format('%.17g', xx))
  end
end
return frame('ok')
`;

/** `space`, `ids`. Returns (id, hash) pairs of the stored vectors in that space. */
const GET = `
local out = {}
for _, id in ipairs(A.ids) do
  local v = redis.call('HMGET', K.vector(id), 'space', 'hash')
  if v[1] == A.space then out[#out + 1] = {id, v[2]} end
end
return frame(out)
`;

/**
 * \`space\`, \`dimensions\`, \`ids\`. Returns (id, hash, numbers) of the stored vectors in that space,
 * the numbers as text, 9 significant digits each: enough to give back each float32 exactly.
 */
const READ = `
local n, out = A.dimensions, {}
for _, id in ipairs(A.ids) do
  local v = redis.call('HMGET', K.vector(id), 'space', 'hash', 'vec')
  if v[1] == A.space and v[3] and #v[3] == 4 * n then
    local x, parts = {struct.unpack('<' .. string.rep('f', n), v[3])}, {}
    for i = 1, n do parts[i] = string.format('%.9g', x[i]) end
    out[#out + 1] = {id, v[2], table.concat(parts, ' ')}
  end
end
return frame(out)
`;

/** `space`, `ids`: deletes those vectors in that space. */
const DELETE = `
for _, id in ipairs(A.ids) do
  local key = K.vector(id)
  if redis.call('HGET', key, 'space') == A.space then redis.call('DEL', key) end
end
return frame('ok')
`;

/**
 * `space`, `dimensions`, `resourceId`, `threadId` (absent: all the resource's), `topK`, `scanLimit`,
 * `exclude`, `query`, `before`/`after` for the hits' windows and `history` ({ threadId, last }: the
 * thread's newest `last` messages of the resource, left out of the hits). Scans at most `scanLimit` vectors
 * of the scope — the resource's messages in the threads holding them (its own, and any moved to
 * another resource since), threads by latest activity, newest message first — keeping the best topK by
 * (score desc, createdAt desc, id asc). Returns { (id, threadId, createdAt, hash, score) per hit,
 * best first; the number scanned; with `before`, the message hashes of each hit's window in the
 * resource, as listMessages reads them (core drops repeats); the history's ids, newest first }.
 */
const SEARCH = `
local n, r, k, limit = A.dimensions, A.resourceId, A.topK, A.scanLimit
local excluded, history = {}, {}
for _, id in ipairs(A.exclude) do excluded[id] = true end
if A.history and A.history.last > 0 then
  -- As listMessages reads a thread's newest messages of a resource (ties: the larger id first).
  history = redis.call('ZRANGE', K.threadResourceMessages(A.history.threadId, r), 0, A.history.last - 1, 'REV')
  for _, id in ipairs(history) do excluded[id] = true end
end
local q, qq, fmt = A.query, 0, '<' .. string.rep('f', n)
for i = 1, n do qq = qq + q[i] * q[i] end
local threads = {A.threadId}
if A.threadId == nil then
  local active = {}
  threads = redis.call('SMEMBERS', K.resourceMessageThreads(r))
  for _, t in ipairs(threads) do active[t] = tonumber(redis.call('ZSCORE', K.threadsUpdated(), t)) or 0 end
  table.sort(threads, function(a, b)
    if active[a] ~= active[b] then return active[a] > active[b] end
    return a > b
  end)
end
local best, scanned = {}, 0
for _, t in ipairs(threads) do
  if scanned >= limit then break end
  local ids = redis.call('ZREVRANGE', K.threadResourceMessages(t, r), 0, -1, 'WITHSCORES')
  for j = 1, #ids, 2 do
    if scanned >= limit then break end
    local v = excluded[ids[j]] and {} or redis.call('HMGET', K.vector(ids[j]), 'space', 'hash', 'vec', 'xx')
    if v[1] == A.space and v[3] and #v[3] == 4 * n then
      scanned = scanned + 1
      local x = {struct.unpack(fmt, v[3])}
      local dot, xx = 0, tonumber(v[4])
      for i = 1, n do dot = dot + x[i] * q[i] end
      if not xx then -- a vector written before its norm was stored: compute it
        xx = 0
        for i = 1, n do xx = xx + x[i] * x[i] end
      end
      local score = (xx > 0 and qq > 0) and dot / math.sqrt(xx * qq) or 0
      keepBest(best, k, {ids[j], t, tonumber(ids[j + 1]), v[2], score})
    end
  end
end
local out, windows = {}, {}
for i, h in ipairs(best) do out[i] = {h[1], h[2], string.format('%d', h[3]), h[4], string.format('%.17g', h[5])} end
if A.before then
  local function add(id)
    local h = redis.call('HGETALL', K.message(id))
    if #h > 0 then windows[#windows + 1] = h end
  end
  for _, h in ipairs(best) do addWindow(h[1], r, A.before, A.after, add) end
end
return frame({out, scanned, windows, history})
`;

export const VECTOR_BODIES = {
  space: SPACE,
  upsertVectors: UPSERT,
  getVectors: GET,
  readVectors: READ,
  deleteVectors: DELETE,
  searchVectors: SEARCH,
};
