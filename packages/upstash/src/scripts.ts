/**
 * The Lua scripts behind every operation, each atomic on the server. A script takes one
 * argument, a JSON object decoded into `A`: `prefix` (bound to `P`) and the fields its comment
 * names (absent ones are `nil`). Keys come from the `K.<name>(…)` functions of `layout.ts`; some
 * are derived from stored data (the old thread of a moved message), so the scripts need
 * Upstash's default (global) script lock and a non-cluster Redis. A script returns one string
 * framed by `frame` (`$<bytes>:<text>`, `*<n>:<items…>`, `_` for nil), never valid JSON, so a
 * client that JSON-parses replies leaves it alone. The writes of a unit of work are the
 * functions of `OP`: the `commit` script applies them, the one-operation scripts reuse them.
 */

import { KEYWORD_BODIES, KEYWORD_FUNCTIONS } from './keyword-scripts.ts';
import { LAYOUT_VERSION, luaKeyFunctions, MIGRATIONS } from './layout.ts';
import type { Frame, messageRecord } from './mapping.ts';
import { OBSERVATION_BODIES } from './observations.ts';
import { RESOURCE_BODIES } from './resources.ts';
import { SETTING_BODIES } from './settings.ts';
import { TURN_BODIES, TURN_FUNCTIONS } from './turns.ts';
import { VECTOR_BODIES } from './vector-scripts.ts';

/** What a read of a unit of work saw: a field of a record, `false` when absent. */
export type Expectation = [record: 'thread' | 'message', id: string, field: string, value: string | false];

/** One write of a unit of work, a function of `OP`; `newest` is epoch ms. */
export type Operation =
  | { op: 'put'; messages: (ReturnType<typeof messageRecord> & { terms: string[] })[] }
  | { op: 'remove' | 'dropVectors' | 'dropKeywords' | 'dropTurns'; ids: string[] }
  | { op: 'touch'; bumps: { id: string; newest?: number }[] }
  | { op: 'putTurn'; id: string; threadId: string; resourceId: string; createdAt: string; body: string }
  | {
      op:
        | 'deleteThread'
        | 'dropThreadVectors'
        | 'dropThreadKeywords'
        | 'dropThreadObservations'
        | 'dropThreadTurns'
        | 'deleteResource'
        | 'dropResourceObservations';
      id: string;
    };

/** The one argument of a script: `args` and the prefix as JSON, without nulls (truthy in cjson). */
export function scriptArgument(prefix: string, args: object): string {
  return JSON.stringify({ ...args, prefix }, (_key, value: unknown) => (value === null ? undefined : value));
}

/** Decoding, key builders, framing, and the writes every script shares. */
export const PRELUDE = `
local A = cjson.decode(ARGV[1])
local P = A.prefix
${luaKeyFunctions()}

local function frame(v)
  local parts = {}
  local function put(x)
    if type(x) == 'table' then
      parts[#parts + 1] = '*' .. #x .. ':'
      for i = 1, #x do put(x[i]) end
    elseif x == nil or x == false then parts[#parts + 1] = '_'
    else parts[#parts + 1] = '$' .. #tostring(x) .. ':' .. tostring(x) end
  end
  put(v)
  return table.concat(parts)
end

-- Bumps a thread of resource r (core's bumpedUpdatedAt) to the latest of its updatedAt, the
-- server's clock and newest (the newest createdAt written into it, or nil).
local function bumpThread(t, r, newest)
  local key = K.thread(t)
  local clock = redis.call('TIME')
  local u = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  u = math.max(u, tonumber(redis.call('HGET', key, 'updatedAt') or '') or 0, newest or 0)
  u = string.format('%d', u)
  redis.call('HSET', key, 'updatedAt', u)
  redis.call('ZADD', K.threadsUpdated(), u, t)
  redis.call('ZADD', K.resourceThreadsUpdated(r), u, t)
end

-- bumpThread of an existing thread (absent ones are ignored).
local function touchThread(t, newest)
  local r = redis.call('HGET', K.thread(t), 'resourceId')
  if r then bumpThread(t, r, newest) end
end

-- The ids of a sorted set from rank offset, limit of them (all when nil), descending when rev.
local function ranks(z, rev, offset, limit)
  local stop = limit and offset + limit - 1 or -1
  if rev then return redis.call('ZRANGE', z, offset, stop, 'REV') end
  return redis.call('ZRANGE', z, offset, stop)
end

-- One include window of listMessages: add(id) for the message and up to before/after messages
-- around it in its own thread (of resource r only, when r is given); nothing for a message that is
-- absent or of another resource.
local function addWindow(id, r, before, after, add)
  local m = redis.call('HMGET', K.message(id), 'threadId', 'resourceId')
  if not m[1] or (r and m[2] ~= r) then return end
  local z = r and K.threadResourceMessages(m[1], r) or K.threadMessages(m[1])
  local rank = redis.call('ZRANK', z, id)
  if not rank then return end
  for _, w in ipairs(redis.call('ZRANGE', z, math.max(0, rank - before), rank + after)) do add(w) end
end

-- Removes a message from its hash and indexes; returns its thread, or nil when absent.
local function unlinkMessage(id)
  local key = K.message(id)
  local m = redis.call('HMGET', key, 'threadId', 'resourceId')
  if not m[1] then return nil end
  redis.call('DEL', key)
  redis.call('ZREM', K.threadMessages(m[1]), id)
  local byRes = K.threadResourceMessages(m[1], m[2])
  redis.call('ZREM', byRes, id)
  if redis.call('ZCARD', byRes) == 0 then
    redis.call('SREM', K.threadResources(m[1]), m[2])
    redis.call('SREM', K.resourceMessageThreads(m[2]), m[1])
  end
  return m[1]
end

-- Search hits { id, threadId, createdAt, hash or '', score }: whether a ranks before b (score
-- desc, createdAt desc, id asc); and keepBest, which inserts hit into best (that order, k at most).
local function better(a, b)
  if a[5] ~= b[5] then return a[5] > b[5] end
  if a[3] ~= b[3] then return a[3] > b[3] end
  return a[1] < b[1]
end
local function keepBest(best, k, hit)
  if #best < k or better(hit, best[#best]) then
    local at = #best + 1
    while at > 1 and better(hit, best[at - 1]) do best[at] = best[at - 1]; at = at - 1 end
    best[at] = hit
    best[k + 1] = nil
  end
end

-- Whether every field a unit of work read ({ record, id, field, value or false }) still holds.
local function holds(expect)
  for _, e in ipairs(expect) do
    local key = e[1] == 'thread' and K.thread(e[2]) or K.message(e[2])
    if redis.call('HGET', key, e[3]) ~= e[4] then return false end
  end
  return true
end

local OP = {}
${KEYWORD_FUNCTIONS}
${TURN_FUNCTIONS}
-- Stores the messages by id (moving one saved with another thread) and, for those given terms,
-- re-indexes their keywords (the others keep theirs); returns the threads touched.
function OP.put(o)
  local touched, seen = {}, {}
  local function touch(t)
    if t and not seen[t] then seen[t] = true; touched[#touched + 1] = t end
  end
  for _, m in ipairs(o.messages) do
    local id, t, r, c = m.id, m.threadId, m.resourceId, m.createdAt
    touch(unlinkMessage(id))
    redis.call('HSET', K.message(id), 'id', id, 'threadId', t, 'resourceId', r, 'role', m.role,
      'type', m.type, 'content', m.content, 'createdAt', c)
    redis.call('ZADD', K.threadMessages(t), c, id)
    redis.call('ZADD', K.threadResourceMessages(t, r), c, id)
    redis.call('SADD', K.threadResources(t), r)
    redis.call('SADD', K.resourceMessageThreads(r), t)
    if m.terms then
      unindexMessage(id)
      indexMessage(id, r, m.terms)
    end
    touch(t)
  end
  return touched
end
function OP.remove(o) for _, id in ipairs(o.ids) do unlinkMessage(id) end end
function OP.touch(o) for _, b in ipairs(o.bumps) do touchThread(b.id, b.newest) end end
function OP.dropVectors(o) for _, id in ipairs(o.ids) do redis.call('DEL', K.vector(id)) end end
function OP.dropThreadVectors(o) OP.dropVectors({ids = redis.call('ZRANGE', K.threadMessages(o.id), 0, -1)}) end
function OP.dropThreadObservations(o) redis.call('DEL', K.threadObservations(o.id)) end
function OP.dropResourceObservations(o) redis.call('DEL', K.resourceObservations(o.id)) end
-- The resource hash, its working-memory lease and its entry in the resource index (its threads
-- are deleted before, one by one).
function OP.deleteResource(o)
  redis.call('DEL', K.resource(o.id), K.resource(o.id) .. ':wmlock')
  redis.call('ZREM', K.resources(), o.id)
end
-- The thread, its messages and its indexes (vectors: dropThreadVectors; keywords:
-- dropThreadKeywords; its observation log: dropThreadObservations; its turns: dropThreadTurns).
function OP.deleteThread(o)
  local t, key, mz = o.id, K.thread(o.id), K.threadMessages(o.id)
  for _, mid in ipairs(redis.call('ZRANGE', mz, 0, -1)) do redis.call('DEL', K.message(mid)) end
  for _, r in ipairs(redis.call('SMEMBERS', K.threadResources(t))) do
    redis.call('DEL', K.threadResourceMessages(t, r))
    redis.call('SREM', K.resourceMessageThreads(r), t)
  end
  redis.call('DEL', mz, K.threadResources(t))
  local r = redis.call('HGET', key, 'resourceId')
  if r then
    redis.call('ZREM', K.threadsCreated(), t)
    redis.call('ZREM', K.threadsUpdated(), t)
    redis.call('ZREM', K.resourceThreadsCreated(r), t)
    redis.call('ZREM', K.resourceThreadsUpdated(r), t)
    redis.call('DEL', key)
  end
end
`;

/**
 * Runs every migration newer than the recorded layout version, records the latest; returns the
 * version found, how many threads the keyword backfill still has to index, and the cursor of the
 * resource index backfill (nil when none is pending). `keywordsOff` (the keyword index off: saves
 * index nothing) sets `keyword-rebuild`; an open with the index on that finds it queues every
 * thread for the backfill.
 */
const INIT = `
local found = tonumber(redis.call('GET', K.schema()) or '0')
${MIGRATIONS.map((lua, i) => `if found < ${i + 1} then\n${lua}\nend`).join('\n')}
if found < ${LAYOUT_VERSION} then redis.call('SET', K.schema(), '${LAYOUT_VERSION}') end
if A.keywordsOff then redis.call('SET', K.keywordRebuild(), '1')
elseif redis.call('DEL', K.keywordRebuild()) == 1 then
  redis.call('DEL', K.keywordBackfill())
  for _, t in ipairs(redis.call('ZRANGE', K.threadsCreated(), 0, -1)) do redis.call('RPUSH', K.keywordBackfill(), t) end
end
return frame({found, redis.call('LLEN', K.keywordBackfill()), redis.call('GET', K.resourceBackfill())})
`;

/** A thread (`threadRecord`) replaces the stored one, and moves between resources' indexes. */
const SAVE_THREAD = `
local id, r, c, u = A.id, A.resourceId, A.createdAt, A.updatedAt
local key = K.thread(id)
local old = redis.call('HGET', key, 'resourceId')
if old and old ~= r then
  redis.call('ZREM', K.resourceThreadsCreated(old), id)
  redis.call('ZREM', K.resourceThreadsUpdated(old), id)
end
redis.call('DEL', key)
redis.call('HSET', key, 'id', id, 'resourceId', r, 'title', A.title, 'createdAt', c, 'updatedAt', u, 'wmv', A.version)
for field, value in pairs(A.metadata) do redis.call('HSET', key, field, value) end
redis.call('ZADD', K.threadsCreated(), c, id)
redis.call('ZADD', K.threadsUpdated(), u, id)
redis.call('ZADD', K.resourceThreadsCreated(r), c, id)
redis.call('ZADD', K.resourceThreadsUpdated(r), u, id)
return frame('ok')
`;

/** Sets `title` and `version` when given, merges `metadata` and bumps; returns the thread, or nil. */
const UPDATE_THREAD = `
local key = K.thread(A.id)
local r = redis.call('HGET', key, 'resourceId')
if not r then return frame(false) end
if A.title ~= nil then redis.call('HSET', key, 'title', A.title) end
for field, value in pairs(A.metadata) do redis.call('HSET', key, field, value) end
if A.version ~= nil then redis.call('HSET', key, 'wmv', A.version) end
bumpThread(A.id, r, nil)
return frame(redis.call('HGETALL', key))
`;

/**
 * `resourceId`, `orderBy`, `direction`, `offset`, `limit`, `min`/`max` (`createdAt` score range),
 * `filters` ({ field, op: `eq` | `has`, value }). Returns { 'page', total, thread hashes }, or with
 * filters, or a range beside the `updatedAt` order, { 'candidates', hashes } (core keeps those in
 * the range).
 */
const LIST_THREADS = `
local kind = A.orderBy == 'createdAt' and 'Created' or 'Updated'
local z = A.resourceId and K['resourceThreads' .. kind](A.resourceId) or K['threads' .. kind]()
local rev, rows, min, max = A.direction == 'DESC', {}, A.min, A.max
-- The scores of the createdAt zsets are the range's: beside the updatedAt order, core filters.
local ranged = kind == 'Created' and not (min == '-inf' and max == '+inf')
local function add(key)
  local h = redis.call('HGETALL', key)
  if #h > 0 then rows[#rows + 1] = h end
end
local function range(offset, limit)
  if not ranged then return ranks(z, rev, offset, limit) end
  if rev then return redis.call('ZRANGE', z, max, min, 'BYSCORE', 'REV', 'LIMIT', offset, limit or -1) end
  return redis.call('ZRANGE', z, min, max, 'BYSCORE', 'LIMIT', offset, limit or -1)
end
if #A.filters == 0 and (kind == 'Created' or (min == '-inf' and max == '+inf')) then
  if A.limit ~= 0 then
    for _, id in ipairs(range(A.offset or 0, A.limit)) do add(K.thread(id)) end
  end
  return frame({'page', ranged and redis.call('ZCOUNT', z, min, max) or redis.call('ZCARD', z), rows})
end
for _, id in ipairs(range(0, nil)) do
  local key, ok = K.thread(id), true
  for _, f in ipairs(A.filters) do
    local v = redis.call('HGET', key, f.field)
    if not v or (f.op == 'eq' and v ~= f.value) then ok = false; break end
  end
  if ok then add(key) end
end
return frame({'candidates', rows})
`;

/**
 * `threadId`, `resourceId`, `direction`, `offset`, `limit`, `min`/`max` (score ranges), `windows`
 * (core's include). Returns { total, message hashes… } of the page and the windows (core drops repeats).
 */
const LIST_MESSAGES = `
local t, r = A.threadId, A.resourceId
local z = r and K.threadResourceMessages(t, r) or K.threadMessages(t)
local rev, offset, min, max = A.direction == 'DESC', A.offset or 0, A.min, A.max
local ranged = not (min == '-inf' and max == '+inf')
local out = {ranged and redis.call('ZCOUNT', z, min, max) or redis.call('ZCARD', z)}
local ids = {}
if A.limit ~= 0 and not ranged then ids = ranks(z, rev, offset, A.limit)
elseif A.limit ~= 0 and rev then ids = redis.call('ZRANGE', z, max, min, 'BYSCORE', 'REV', 'LIMIT', offset, A.limit or -1)
elseif A.limit ~= 0 then ids = redis.call('ZRANGE', z, min, max, 'BYSCORE', 'LIMIT', offset, A.limit or -1) end
local function add(id)
  local h = redis.call('HGETALL', K.message(id))
  if #h > 0 then out[#out + 1] = h end
end
for _, id in ipairs(ids) do add(id) end
for _, w in ipairs(A.windows) do addWindow(w.id, r, w.withPreviousMessages, w.withNextMessages, add) end
return frame(out)
`;

/** `ids`. Returns the hash of each, in order; nil for an absent one. */
const GET_MESSAGES = `
local out = {}
for i, id in ipairs(A.ids) do
  local h = redis.call('HGETALL', K.message(id))
  out[i] = #h > 0 and h
end
return frame(out)
`;

/** `threadIds`, `messageIds`. Returns { each thread's resource, each message's { thread, resource } }. */
const PLACES = `
local threads, messages = {}, {}
for i, t in ipairs(A.threadIds) do threads[i] = redis.call('HGET', K.thread(t), 'resourceId') end
for i, id in ipairs(A.messageIds) do messages[i] = redis.call('HMGET', K.message(id), 'threadId', 'resourceId') end
return frame({threads, messages})
`;

/**
 * A unit of work (`expect`, `ops`): 'retry' and nothing written unless every field its reads saw
 * still holds, else its operations in order. Nothing can change between the check and the writes.
 */
const COMMIT = `
if not holds(A.expect) then return frame('retry') end
for _, o in ipairs(A.ops) do OP[o.op](o) end
return frame('ok')
`;

/** Stores the messages and bumps every thread they enter or leave, by the newest `createdAt` saved there. */
const PUT_AND_BUMP = `
local newest = {}
for _, m in ipairs(A.messages) do
  newest[m.threadId] = math.max(newest[m.threadId] or -math.huge, tonumber(m.createdAt))
end
for _, t in ipairs(OP.put(A)) do touchThread(t, newest[t]) end
`;

/** `messages`: the whole save, or 'refused' and nothing written when core's save would refuse it. */
const SAVE_MESSAGES = `
local owner = {}
for _, m in ipairs(A.messages) do
  local t = m.threadId
  if owner[t] == nil then owner[t] = redis.call('HGET', K.thread(t), 'resourceId') end
  if owner[t] ~= m.resourceId then return frame('refused') end
  local stored = redis.call('HGET', K.message(m.id), 'resourceId')
  if stored and stored ~= m.resourceId then return frame('refused') end
end
${PUT_AND_BUMP}
return frame('ok')
`;

/**
 * `patches` (one per id, setting the fields it holds, with `terms` when the role or content
 * changes; unknown ids skipped), `expect` (what those terms were analyzed from). Returns the new
 * hashes, or 'retry' and nothing written when an expectation no longer holds.
 */
const UPDATE_MESSAGES = `
if not holds(A.expect) then return frame('retry') end
local F = {'id', 'threadId', 'resourceId', 'role', 'type', 'content', 'createdAt'}
A.messages = {}
for _, p in ipairs(A.patches) do
  local h = redis.call('HMGET', K.message(p.id), unpack(F))
  if h[1] then
    local m = {}
    for i, f in ipairs(F) do m[f] = p[f] or h[i] end
    m.terms = p.terms
    A.messages[#A.messages + 1] = m
  end
end
${PUT_AND_BUMP}
local out = {}
for i, m in ipairs(A.messages) do out[i] = redis.call('HGETALL', K.message(m.id)) end
return frame(out)
`;

/**
 * `id`, `now`, `metadata`; `version` when the working memory changes, to `value` (absent: clear).
 * Creates the resource when missing (and adds it to `<p>:resources`); returns it.
 */
const UPDATE_RESOURCE = `
local key = K.resource(A.id)
if redis.call('EXISTS', key) == 0 then redis.call('HSET', key, 'id', A.id, 'createdAt', A.now) end
redis.call('ZADD', K.resources(), 0, A.id)
if A.version ~= nil then
  if A.value == nil then redis.call('HDEL', key, 'workingMemory') else redis.call('HSET', key, 'workingMemory', A.value) end
  redis.call('HSET', key, 'wmv', A.version)
end
for field, value in pairs(A.metadata) do redis.call('HSET', key, field, value) end
redis.call('HSET', key, 'updatedAt', A.now)
return frame(redis.call('HGETALL', key))
`;

/**
 * The working memory of core's cell (`scope`, `threadId` | `resourceId`) and its lease, the token
 * of a writer that lost a compare-and-set: other tokens lose while it lives (a dead holder's ends).
 */
const CELL = `
local thread = A.scope == 'thread'
local id = thread and A.threadId or A.resourceId
local key = thread and K.thread(id) or K.resource(id)
local field = thread and '.workingMemory' or 'workingMemory'
local lease = key .. ':wmlock'
`;

/**
 * With a `token` (and `ttlMs`), takes the lease first: { 'busy' } while another holds it. Returns
 * { 'missing' } for a thread that does not exist, else { 'ok', id (nil when absent), value, version }.
 */
const READ_WM = `${CELL}
if thread and redis.call('EXISTS', key) == 0 then return frame({'missing'}) end
if A.token and not redis.call('SET', lease, A.token, 'NX', 'PX', A.ttlMs) then return frame({'busy'}) end
local c = redis.call('HMGET', key, 'id', field, 'wmv')
return frame({'ok', c[1], c[2], c[3]})
`;

/**
 * `now`, `version`, `value` (absent: clear), `expected` (absent: none stored), `token`: a compare-
 * and-set that ends `token`'s lease (without `version`, all it does). 'ok', 'missing' or 'lost'.
 */
const CAS_WM = `${CELL}
local c = redis.call('HMGET', key, 'id', 'wmv', 'resourceId')
local holder = redis.call('GET', lease)
if holder and holder == A.token then redis.call('DEL', lease) end
if thread and not c[1] then return frame('missing') end
if (holder and holder ~= A.token) or c[2] ~= (A.expected or false) then return frame('lost') end
if not A.version then return frame('ok') end
if not c[1] then redis.call('HSET', key, 'id', id, 'createdAt', A.now) end
if A.value == nil then redis.call('HDEL', key, field) else redis.call('HSET', key, field, A.value) end
redis.call('HSET', key, 'wmv', A.version)
if thread then
  bumpThread(id, c[3], nil)
else
  redis.call('HSET', key, 'updatedAt', A.now)
  redis.call('ZADD', K.resources(), 0, id)
end
return frame('ok')
`;

const BODIES = {
  init: INIT,
  getThread: `return frame(redis.call('HGETALL', K.thread(A.id)))`,
  createThread: `if redis.call('EXISTS', K.thread(A.id)) == 1 then return frame('exists') end\n${SAVE_THREAD}`,
  saveThread: SAVE_THREAD,
  updateThread: UPDATE_THREAD,
  listThreads: LIST_THREADS,
  listMessages: LIST_MESSAGES,
  getMessages: GET_MESSAGES,
  places: PLACES,
  commit: COMMIT,
  saveMessages: SAVE_MESSAGES,
  updateMessages: UPDATE_MESSAGES,
  getResource: `return frame(redis.call('HGETALL', K.resource(A.id)))`,
  updateResource: UPDATE_RESOURCE,
  readWorkingMemory: READ_WM,
  casWorkingMemory: CAS_WM,
  ...VECTOR_BODIES,
  ...KEYWORD_BODIES,
  ...OBSERVATION_BODIES,
  ...RESOURCE_BODIES,
  ...SETTING_BODIES,
  ...TURN_BODIES,
};

export type ScriptName = keyof typeof BODIES;

/** Runs one script with its named arguments and reads its framed reply. */
export type Call = (name: ScriptName, args: object) => Promise<Frame>;

/** Every script, with the prelude in front. */
export const SCRIPTS = Object.fromEntries(
  Object.entries(BODIES).map(([name, body]) => [name, `-- engram:${name}\n${PRELUDE}\n${body.trim()}\n`]),
) as Record<ScriptName, string>;
