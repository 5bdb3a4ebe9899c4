/**
 * The Lua of the keyword index (see `keywords.ts`), run after the prelude of `scripts.ts`. Terms
 * always come from JavaScript (core's analyzer); these scripts never tokenise. Per resource:
 * - `<p>:keywords:<resource>:<term>`: hash, message id → the term's count in that message (the
 *   posting list; its length is the term's document frequency in the resource);
 * - `<p>:keyword-stats:<resource>`: hash, `docs` (indexed messages) and `terms` (their summed
 *   lengths), deleted with the last message;
 * and per message `<p>:keyword-doc:<message>`: hash, term → count, plus `:resource` and `:length`
 * (a term never holds `:`), so an update or delete knows which postings to remove.
 */

/**
 * `unindexMessage(id)` and `indexMessage(id, resource, terms)`, used by the writes of the prelude
 * (`OP.put`, `OP.dropKeywords`, `OP.dropThreadKeywords`) so the index changes in their script.
 */
export const KEYWORD_FUNCTIONS = `
-- Removes a message from the keyword index (nothing when it is not there).
local function unindexMessage(id)
  local doc = K.keywordDoc(id)
  local flat = redis.call('HGETALL', doc)
  if #flat == 0 then return end
  local r, len
  for i = 1, #flat, 2 do
    if flat[i] == ':resource' then r = flat[i + 1] elseif flat[i] == ':length' then len = tonumber(flat[i + 1]) end
  end
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 1) ~= ':' then redis.call('HDEL', K.keywords(r, flat[i]), id) end
  end
  local stats = K.keywordStats(r)
  if redis.call('HINCRBY', stats, 'docs', -1) <= 0 then redis.call('DEL', stats)
  else redis.call('HINCRBY', stats, 'terms', -len) end
  redis.call('DEL', doc)
end

-- Adds a message of resource r with its analyzed terms (repeats kept); none: not indexed.
local function indexMessage(id, r, terms)
  if #terms == 0 then return end
  local counts, distinct = {}, {}
  for _, t in ipairs(terms) do
    if not counts[t] then distinct[#distinct + 1] = t end
    counts[t] = (counts[t] or 0) + 1
  end
  local doc = K.keywordDoc(id)
  redis.call('HSET', doc, ':resource', r, ':length', #terms)
  for _, t in ipairs(distinct) do
    redis.call('HSET', doc, t, counts[t])
    redis.call('HSET', K.keywords(r, t), id, counts[t])
  end
  redis.call('HINCRBY', K.keywordStats(r), 'docs', 1)
  redis.call('HINCRBY', K.keywordStats(r), 'terms', #terms)
end

function OP.dropKeywords(o) for _, id in ipairs(o.ids) do unindexMessage(id) end end
function OP.dropThreadKeywords(o)
  for _, id in ipairs(redis.call('ZRANGE', K.threadMessages(o.id), 0, -1)) do unindexMessage(id) end
end
`;

/**
 * `terms` (distinct, in query order), `resourceId`, `threadId` (absent: the whole resource), `topK`,
 * `exclude`, `k1`, `b`. Okapi BM25 with the statistics of the resource, summed over the query
 * terms in order (the arithmetic of core's `bm25Score`), over every posting of the query terms in
 * the resource; keeps the best topK by (score desc, createdAt desc, id asc). Returns
 * { (id, threadId, createdAt, score) per hit, best first }.
 */
const SEARCH = `
local r, k, k1, b = A.resourceId, A.topK, A.k1, A.b
local stats = redis.call('HMGET', K.keywordStats(r), 'docs', 'terms')
local N, total = tonumber(stats[1]) or 0, tonumber(stats[2]) or 0
if N <= 0 then return frame({}) end
local avg = total / N
local excluded = {}
for _, id in ipairs(A.exclude) do excluded[id] = true end
local scores, lengths, candidates = {}, {}, {}
for _, term in ipairs(A.terms) do
  local posting = K.keywords(r, term)
  local n = redis.call('HLEN', posting)
  if n > 0 then
    local idf = math.max(math.log((N - n + 0.5) / (n + 0.5)), 1e-6)
    local flat = redis.call('HGETALL', posting)
    for j = 1, #flat, 2 do
      local id = flat[j]
      if not excluded[id] then
        local len = lengths[id]
        if not len then
          len = tonumber(redis.call('HGET', K.keywordDoc(id), ':length')) or 0
          lengths[id] = len
          candidates[#candidates + 1] = id
        end
        local tf = tonumber(flat[j + 1])
        scores[id] = (scores[id] or 0) + (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * len) / avg))
      end
    end
  end
end
local best = {}
for _, id in ipairs(candidates) do
  local m = redis.call('HMGET', K.message(id), 'threadId', 'createdAt')
  if m[1] and (A.threadId == nil or m[1] == A.threadId) then
    keepBest(best, k, {id, m[1], tonumber(m[2]), '', scores[id]})
  end
end
local out = {}
for i, h in ipairs(best) do out[i] = {h[1], h[2], string.format('%d', h[3]), string.format('%.17g', h[5])} end
return frame(out)
`;

/**
 * The backfill of messages stored before the index existed, resumable: `<p>:keyword-backfill`
 * is a list of thread ids still to index (filled by the layout migration). `limit`: returns
 * { thread ids, then (id, resourceId, role, content) of each of their messages } for the threads
 * at the head of the list, whole threads, until `limit` messages (at least one thread).
 */
const BACKFILL_READ = `
local queue = K.keywordBackfill()
local threads, rows, count = {}, {}, 0
for _, t in ipairs(redis.call('LRANGE', queue, 0, 99)) do
  if #threads > 0 and count >= A.limit then break end
  threads[#threads + 1] = t
  for _, id in ipairs(redis.call('ZRANGE', K.threadMessages(t), 0, -1)) do
    local m = redis.call('HMGET', K.message(id), 'id', 'resourceId', 'role', 'content')
    if m[1] then rows[#rows + 1] = m; count = count + 1 end
  end
end
return frame({threads, rows})
`;

/**
 * `threads` (the head of the backfill list just read), `messages` ({ id, role, content, terms }):
 * indexes each message still stored with that role and content (a later write indexed it
 * otherwise), then pops those threads when they are still the head. Returns the threads left.
 */
const BACKFILL_WRITE = `
for _, m in ipairs(A.messages) do
  local s = redis.call('HMGET', K.message(m.id), 'resourceId', 'role', 'content')
  if s[1] and s[2] == m.role and s[3] == m.content then
    unindexMessage(m.id)
    indexMessage(m.id, s[1], m.terms)
  end
end
local queue = K.keywordBackfill()
local head = redis.call('LRANGE', queue, 0, #A.threads - 1)
local same = #head == #A.threads
for i, t in ipairs(A.threads) do same = same and head[i] == t end
if same then redis.call('LTRIM', queue, #A.threads, -1) end
return frame(redis.call('LLEN', queue))
`;

/** The messages of the threads the backfill still has to index (its progress total). */
const BACKFILL_SIZE = `
local n = 0
for _, t in ipairs(redis.call('LRANGE', K.keywordBackfill(), 0, -1)) do
  n = n + redis.call('ZCARD', K.threadMessages(t))
end
return frame(n)
`;

export const KEYWORD_BODIES = {
  searchKeywords: SEARCH,
  keywordBackfillSize: BACKFILL_SIZE,
  keywordBackfillRead: BACKFILL_READ,
  keywordBackfillWrite: BACKFILL_WRITE,
};
