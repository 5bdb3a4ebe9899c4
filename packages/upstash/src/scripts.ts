/**
 * The Lua scripts behind every operation. Each runs atomically on the server, so a write
 * touches its record, its indexes and the threads' `updatedAt` all or nothing.
 *
 * Conventions: `ARGV[1]` is the key prefix and the scripts build keys exactly as `keys.ts`
 * does. Some keys are derived from stored data (the old thread of a moved message), so the
 * scripts run under Upstash's default (global) script lock and need a non-cluster Redis.
 * Every script returns one string framed by `frame` (`$<bytes>:<text>`, `*<n>:<items…>`, `_`
 * for nil): such a string is never valid JSON, so a client that JSON-parses replies leaves it
 * alone, and `unframe` in `mapping.ts` reads it back.
 */

import { LAYOUT_VERSION, MIGRATIONS } from './migrations.ts';

export const PRELUDE = `
local P = ARGV[1]
local function enc(id)
  return (string.gsub(id, '[^%w%.%-_~]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local function kThread(id) return P .. ':thread:' .. enc(id) end
local function kMessage(id) return P .. ':message:' .. enc(id) end
local function kResource(id) return P .. ':resource:' .. enc(id) end
local kThreadsC = P .. ':threads:created'
local kThreadsU = P .. ':threads:updated'
local function kResThreadsC(r) return P .. ':resource-threads:created:' .. enc(r) end
local function kResThreadsU(r) return P .. ':resource-threads:updated:' .. enc(r) end
local function kThreadMsgs(t) return P .. ':thread-messages:' .. enc(t) end
local function kThreadResMsgs(t, r) return P .. ':thread-messages:' .. enc(t) .. ':' .. enc(r) end
local function kThreadRes(t) return P .. ':thread-resources:' .. enc(t) end
local function kVector(id) return P .. ':vector:' .. enc(id) end

local function frame(v)
  local parts = {}
  local function put(x)
    if type(x) == 'table' then
      parts[#parts + 1] = '*' .. #x .. ':'
      for i = 1, #x do put(x[i]) end
    elseif x == nil or x == false then
      parts[#parts + 1] = '_'
    else
      local s = tostring(x)
      parts[#parts + 1] = '$' .. #s .. ':'
      parts[#parts + 1] = s
    end
  end
  put(v)
  return table.concat(parts)
end

local function touchThread(t, now)
  local key = kThread(t)
  local r = redis.call('HGET', key, 'resourceId')
  if not r then return end
  redis.call('HSET', key, 'updatedAt', now)
  redis.call('ZADD', kThreadsU, now, t)
  redis.call('ZADD', kResThreadsU(r), now, t)
end

local function unlinkMessage(id)
  local key = kMessage(id)
  local m = redis.call('HMGET', key, 'threadId', 'resourceId')
  if not m[1] then return nil end
  redis.call('DEL', key)
  redis.call('ZREM', kThreadMsgs(m[1]), id)
  local byRes = kThreadResMsgs(m[1], m[2])
  redis.call('ZREM', byRes, id)
  if redis.call('ZCARD', byRes) == 0 then redis.call('SREM', kThreadRes(m[1]), m[2]) end
  return m[1]
end

local function collector()
  local list, seen = {}, {}
  return list, function(x)
    if x and not seen[x] then seen[x] = true; list[#list + 1] = x end
  end
end
`;

/**
 * Upgrades the layout: runs every migration newer than the recorded version, then records the
 * latest. ARGV: prefix. Returns the version found before (newer than the latest: left alone).
 */
const INIT = `
local key = P .. ':schema'
local found = tonumber(redis.call('GET', key) or '0')
${MIGRATIONS.map((m, i) => `if found < ${i + 1} then\n${m.lua}\nend`).join('\n')}
if found < ${LAYOUT_VERSION} then redis.call('SET', key, '${LAYOUT_VERSION}') end
return frame(found)
`;

/** ARGV: prefix, id. */
const GET_THREAD = `
return frame(redis.call('HGETALL', kThread(ARGV[2])))
`;

/** ARGV: prefix, id, resourceId, title, createdAt, updatedAt, wmv, then field/value pairs. */
const SAVE_THREAD = `
local id, r, c, u = ARGV[2], ARGV[3], ARGV[5], ARGV[6]
local key = kThread(id)
local old = redis.call('HGET', key, 'resourceId')
if old and old ~= r then
  redis.call('ZREM', kResThreadsC(old), id)
  redis.call('ZREM', kResThreadsU(old), id)
end
redis.call('DEL', key)
redis.call('HSET', key, 'id', id, 'resourceId', r, 'title', ARGV[4], 'createdAt', c, 'updatedAt', u, 'wmv', ARGV[7])
for i = 8, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', kThreadsC, c, id)
redis.call('ZADD', kThreadsU, u, id)
redis.call('ZADD', kResThreadsC(r), c, id)
redis.call('ZADD', kResThreadsU(r), u, id)
return frame('ok')
`;

/** The same ARGV as SAVE_THREAD; answers 'exists' and writes nothing when the id is taken. */
const CREATE_THREAD = `
if redis.call('EXISTS', kThread(ARGV[2])) == 1 then return frame('exists') end
${SAVE_THREAD.trim()}
`;

/**
 * ARGV: prefix, id, now, hasTitle ('1'/'0'), title, wmv ('' when working memory is untouched),
 * then metadata field/value pairs. Returns the thread, or nil when absent.
 */
const UPDATE_THREAD = `
local id, now = ARGV[2], ARGV[3]
local key = kThread(id)
local r = redis.call('HGET', key, 'resourceId')
if not r then return frame(false) end
if ARGV[4] == '1' then redis.call('HSET', key, 'title', ARGV[5]) end
for i = 7, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
if ARGV[6] ~= '' then redis.call('HSET', key, 'wmv', ARGV[6]) end
redis.call('HSET', key, 'updatedAt', now)
redis.call('ZADD', kThreadsU, now, id)
redis.call('ZADD', kResThreadsU(r), now, id)
return frame(redis.call('HGETALL', key))
`;

/** ARGV: prefix, id. Deletes the thread, its messages and its indexes. */
const DELETE_THREAD = `
local t = ARGV[2]
local key = kThread(t)
local mz = kThreadMsgs(t)
local ids = redis.call('ZRANGE', mz, 0, -1)
for _, mid in ipairs(ids) do redis.call('DEL', kMessage(mid), kVector(mid)) end
for _, r in ipairs(redis.call('SMEMBERS', kThreadRes(t))) do redis.call('DEL', kThreadResMsgs(t, r)) end
redis.call('DEL', mz, kThreadRes(t))
local r = redis.call('HGET', key, 'resourceId')
if r then
  redis.call('ZREM', kThreadsC, t)
  redis.call('ZREM', kThreadsU, t)
  redis.call('ZREM', kResThreadsC(r), t)
  redis.call('ZREM', kResThreadsU(r), t)
  redis.call('DEL', key)
end
return frame(#ids)
`;

/**
 * ARGV: prefix, hasResource, resourceId, orderBy, direction, offset, count (-1 = all), then
 * metadata filters as (field, 'eq' | 'has', json) triples. Without filters the page is cut here
 * and the total counted; with filters every candidate passing the cheap checks is returned
 * (total -1) and the caller compares JSON values and pages.
 */
const LIST_THREADS = `
local byCreated = ARGV[4] == 'createdAt'
local z
if ARGV[2] == '1' then
  z = byCreated and kResThreadsC(ARGV[3]) or kResThreadsU(ARGV[3])
else
  z = byCreated and kThreadsC or kThreadsU
end
local rev = ARGV[5] == 'DESC'
local offset, count = tonumber(ARGV[6]), tonumber(ARGV[7])
local out = {}
local function range(start, stop)
  if rev then return redis.call('ZRANGE', z, start, stop, 'REV') end
  return redis.call('ZRANGE', z, start, stop)
end
if #ARGV < 8 then
  out[1] = redis.call('ZCARD', z)
  if count ~= 0 then
    local stop = -1
    if count > 0 then stop = offset + count - 1 end
    for _, id in ipairs(range(offset, stop)) do
      local h = redis.call('HGETALL', kThread(id))
      if #h > 0 then out[#out + 1] = h end
    end
  end
else
  out[1] = -1
  for _, id in ipairs(range(0, -1)) do
    local key = kThread(id)
    local ok = true
    for i = 8, #ARGV, 3 do
      local v = redis.call('HGET', key, ARGV[i])
      if not v or (ARGV[i + 1] == 'eq' and v ~= ARGV[i + 2]) then ok = false; break end
    end
    if ok then
      local h = redis.call('HGETALL', key)
      if #h > 0 then out[#out + 1] = h end
    end
  end
end
return frame(out)
`;

/**
 * ARGV: prefix, now, then (id, threadId, resourceId, role, type, content, createdAt) per
 * message. Checks every thread and every stored message first (nothing is written when one
 * fails: a missing thread, a thread of another resource, or an id taken by a message of another
 * resource), then upserts, moves messages saved with another thread, and bumps the touched
 * threads.
 */
const SAVE_MESSAGES = `
local now = ARGV[2]
local owner = {}
for b = 3, #ARGV, 7 do
  local t, r = ARGV[b + 1], ARGV[b + 2]
  if owner[t] == nil then owner[t] = redis.call('HGET', kThread(t), 'resourceId') end
  if not owner[t] then return frame({'not_found', t}) end
  if owner[t] ~= r then return frame({'resource_mismatch', ARGV[b], r}) end
end
for b = 3, #ARGV, 7 do
  local stored = redis.call('HGET', kMessage(ARGV[b]), 'resourceId')
  if stored and stored ~= ARGV[b + 2] then return frame({'taken', ARGV[b]}) end
end
local touched, touch = collector()
for b = 3, #ARGV, 7 do
  local id, t, r, c = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 6]
  touch(unlinkMessage(id))
  redis.call('HSET', kMessage(id), 'id', id, 'threadId', t, 'resourceId', r, 'role', ARGV[b + 3],
    'type', ARGV[b + 4], 'content', ARGV[b + 5], 'createdAt', c)
  redis.call('ZADD', kThreadMsgs(t), c, id)
  redis.call('ZADD', kThreadResMsgs(t, r), c, id)
  redis.call('SADD', kThreadRes(t), r)
  touch(t)
end
for _, t in ipairs(touched) do touchThread(t, now) end
return frame({'ok'})
`;

/**
 * ARGV: prefix, threadId, hasResource, resourceId, direction, offset, count (-1 = all),
 * min score, max score (Redis range syntax), then (id, before, after) include windows.
 * Returns { total, message hashes… } for the page and the windows, de-duplicated.
 */
const LIST_MESSAGES = `
local t, hasRes, r = ARGV[2], ARGV[3] == '1', ARGV[4]
local z = hasRes and kThreadResMsgs(t, r) or kThreadMsgs(t)
local rev = ARGV[5] == 'DESC'
local offset, count = tonumber(ARGV[6]), tonumber(ARGV[7])
local min, max = ARGV[8], ARGV[9]
local ranged = not (min == '-inf' and max == '+inf')
local out = {}
if ranged then out[1] = redis.call('ZCOUNT', z, min, max) else out[1] = redis.call('ZCARD', z) end
local ids = {}
if count ~= 0 then
  if ranged then
    if rev then
      ids = redis.call('ZRANGE', z, max, min, 'BYSCORE', 'REV', 'LIMIT', offset, count)
    else
      ids = redis.call('ZRANGE', z, min, max, 'BYSCORE', 'LIMIT', offset, count)
    end
  else
    local stop = -1
    if count > 0 then stop = offset + count - 1 end
    if rev then ids = redis.call('ZRANGE', z, offset, stop, 'REV') else ids = redis.call('ZRANGE', z, offset, stop) end
  end
end
local seen = {}
local function add(id)
  if seen[id] then return end
  seen[id] = true
  local h = redis.call('HGETALL', kMessage(id))
  if #h > 0 then out[#out + 1] = h end
end
for _, id in ipairs(ids) do add(id) end
for i = 10, #ARGV, 3 do
  local id, before, after = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local m = redis.call('HMGET', kMessage(id), 'threadId', 'resourceId')
  if m[1] and (not hasRes or m[2] == r) then
    local wz = hasRes and kThreadResMsgs(m[1], r) or kThreadMsgs(m[1])
    local rank = redis.call('ZRANK', wz, id)
    if rank then
      local start = rank - before
      if start < 0 then start = 0 end
      for _, w in ipairs(redis.call('ZRANGE', wz, start, rank + after)) do add(w) end
    end
  end
end
return frame(out)
`;

/** ARGV: prefix, ids…. Returns the hashes of the messages found. */
const GET_MESSAGES = `
local out = {}
for i = 2, #ARGV do
  local h = redis.call('HGETALL', kMessage(ARGV[i]))
  if #h > 0 then out[#out + 1] = h end
end
return frame(out)
`;

/**
 * ARGV: prefix, now, then (id, hasRole, role, hasContent, content, hasType, type, hasCreatedAt,
 * createdAt) per patch. Unknown ids are skipped. Returns the updated hashes.
 */
const UPDATE_MESSAGES = `
local now = ARGV[2]
local touched, touch = collector()
local found, keep = collector()
for b = 3, #ARGV, 9 do
  local id = ARGV[b]
  local key = kMessage(id)
  local m = redis.call('HMGET', key, 'threadId', 'resourceId')
  if m[1] then
    if ARGV[b + 1] == '1' then redis.call('HSET', key, 'role', ARGV[b + 2]) end
    if ARGV[b + 3] == '1' then redis.call('HSET', key, 'content', ARGV[b + 4]) end
    if ARGV[b + 5] == '1' then redis.call('HSET', key, 'type', ARGV[b + 6]) end
    if ARGV[b + 7] == '1' then
      local c = ARGV[b + 8]
      redis.call('HSET', key, 'createdAt', c)
      redis.call('ZADD', kThreadMsgs(m[1]), c, id)
      redis.call('ZADD', kThreadResMsgs(m[1], m[2]), c, id)
    end
    touch(m[1])
    keep(id)
  end
end
for _, t in ipairs(touched) do touchThread(t, now) end
local out = {}
for _, id in ipairs(found) do out[#out + 1] = redis.call('HGETALL', kMessage(id)) end
return frame(out)
`;

/** ARGV: prefix, now, ids…. Unknown ids are skipped; touched threads are bumped. */
const DELETE_MESSAGES = `
local now = ARGV[2]
local touched, touch = collector()
for i = 3, #ARGV do
  touch(unlinkMessage(ARGV[i]))
  redis.call('DEL', kVector(ARGV[i]))
end
for _, t in ipairs(touched) do touchThread(t, now) end
return frame(#touched)
`;

/** ARGV: prefix, id. */
const GET_RESOURCE = `
return frame(redis.call('HGETALL', kResource(ARGV[2])))
`;

/**
 * ARGV: prefix, id, now, working-memory mode ('' keep, 's' set, 'n' clear), value, wmv, then
 * metadata field/value pairs. Creates the resource when missing; returns it.
 */
const UPDATE_RESOURCE = `
local key, now, mode = kResource(ARGV[2]), ARGV[3], ARGV[4]
if redis.call('EXISTS', key) == 0 then redis.call('HSET', key, 'id', ARGV[2], 'createdAt', now) end
if mode == 's' then
  redis.call('HSET', key, 'workingMemory', ARGV[5], 'wmv', ARGV[6])
elseif mode == 'n' then
  redis.call('HDEL', key, 'workingMemory')
  redis.call('HSET', key, 'wmv', ARGV[6])
end
for i = 7, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
redis.call('HSET', key, 'updatedAt', now)
return frame(redis.call('HGETALL', key))
`;

/** ARGV: prefix, id. Returns { workingMemory, version }. */
const READ_RESOURCE_WM = `
return frame(redis.call('HMGET', kResource(ARGV[2]), 'workingMemory', 'wmv'))
`;

/**
 * The lease a writer takes after losing a compare-and-set: `<record key>:wmlock` holds its
 * token and expires on its own (a holder that dies frees it). While it is held, compare-and-sets
 * with another token answer 'locked', so the holder's write cannot lose. A write by the holder
 * (or `unlockWorkingMemory`) deletes it.
 */
const LEASE_HELPERS = `
local function leaseOf(key) return key .. ':wmlock' end
local function leaseBlocks(key, token)
  local holder = redis.call('GET', leaseOf(key))
  return holder and holder ~= token
end
local function endLease(key, token)
  if token ~= '' and redis.call('GET', leaseOf(key)) == token then redis.call('DEL', leaseOf(key)) end
end
`;

/**
 * Takes the lease on a resource's working memory and reads it. ARGV: prefix, id, token, ttl ms.
 * Returns { 'ok', value, version } or { 'busy' } (another writer holds the lease).
 */
const LEASE_RESOURCE_WM = `
local key = kResource(ARGV[2])
if not redis.call('SET', leaseOf(key), ARGV[3], 'NX', 'PX', tonumber(ARGV[4])) then return frame({'busy'}) end
local current = redis.call('HMGET', key, 'workingMemory', 'wmv')
return frame({'ok', current[1], current[2]})
`;

/**
 * The same for a thread. Returns { 'ok', resourceId, JSON value, version }, { 'busy' } or
 * { 'not_found' } (no lease is left behind).
 */
const LEASE_THREAD_WM = `
local key = kThread(ARGV[2])
if redis.call('EXISTS', key) == 0 then return frame({'not_found'}) end
if not redis.call('SET', leaseOf(key), ARGV[3], 'NX', 'PX', tonumber(ARGV[4])) then return frame({'busy'}) end
local current = redis.call('HMGET', key, 'resourceId', '.workingMemory', 'wmv')
return frame({'ok', current[1], current[2], current[3]})
`;

/** Gives a lease back without writing (the update threw). ARGV: prefix, 'r' | 't', id, token. */
const UNLOCK_WM = `
local key = ARGV[2] == 'r' and kResource(ARGV[3]) or kThread(ARGV[3])
endLease(key, ARGV[4])
return frame({'ok'})
`;

/**
 * Compare-and-set of resource working memory. ARGV: prefix, id, expected version ('' = none),
 * now, mode ('s' set, 'n' clear), value, new version, lease token ('' = none): the caller's
 * lease ends whatever the outcome. Returns { 'ok' }, { 'locked' } while another writer holds
 * the lease, or
 * { 'conflict', current value, current version } so a retry needs no separate read.
 */
const CAS_RESOURCE_WM = `
local key, now = kResource(ARGV[2]), ARGV[4]
if leaseBlocks(key, ARGV[8]) then return frame({'locked'}) end
endLease(key, ARGV[8])
local current = redis.call('HMGET', key, 'workingMemory', 'wmv')
if (current[2] or '') ~= ARGV[3] then return frame({'conflict', current[1], current[2]}) end
if redis.call('EXISTS', key) == 0 then redis.call('HSET', key, 'id', ARGV[2], 'createdAt', now) end
if ARGV[5] == 's' then redis.call('HSET', key, 'workingMemory', ARGV[6]) else redis.call('HDEL', key, 'workingMemory') end
redis.call('HSET', key, 'wmv', ARGV[7], 'updatedAt', now)
return frame({'ok'})
`;

/** ARGV: prefix, id. Returns { resourceId, workingMemory JSON, version }. */
const READ_THREAD_WM = `
return frame(redis.call('HMGET', kThread(ARGV[2]), 'resourceId', '.workingMemory', 'wmv'))
`;

/**
 * Compare-and-set of thread working memory (`metadata.workingMemory`). ARGV: prefix, id,
 * expected version, now, JSON value, new version, lease token ('' = none), which ends whatever
 * the outcome. Returns { 'ok' }, { 'not_found' }, { 'locked' } or { 'conflict', current JSON
 * value, current version }.
 */
const CAS_THREAD_WM = `
local id, now = ARGV[2], ARGV[4]
local key = kThread(id)
local current = redis.call('HMGET', key, 'resourceId', '.workingMemory', 'wmv')
local r = current[1]
if not r then endLease(key, ARGV[7]) return frame({'not_found'}) end
if leaseBlocks(key, ARGV[7]) then return frame({'locked'}) end
endLease(key, ARGV[7])
if (current[3] or '') ~= ARGV[3] then return frame({'conflict', current[2], current[3]}) end
redis.call('HSET', key, '.workingMemory', ARGV[5], 'wmv', ARGV[6], 'updatedAt', now)
redis.call('ZADD', kThreadsU, now, id)
redis.call('ZADD', kResThreadsU(r), now, id)
return frame({'ok'})
`;

const BODIES = {
  init: INIT,
  getThread: GET_THREAD,
  createThread: CREATE_THREAD,
  saveThread: SAVE_THREAD,
  updateThread: UPDATE_THREAD,
  deleteThread: DELETE_THREAD,
  listThreads: LIST_THREADS,
  saveMessages: SAVE_MESSAGES,
  listMessages: LIST_MESSAGES,
  getMessages: GET_MESSAGES,
  updateMessages: UPDATE_MESSAGES,
  deleteMessages: DELETE_MESSAGES,
  getResource: GET_RESOURCE,
  updateResource: UPDATE_RESOURCE,
  readResourceWorkingMemory: READ_RESOURCE_WM,
  casResourceWorkingMemory: CAS_RESOURCE_WM,
  readThreadWorkingMemory: READ_THREAD_WM,
  casThreadWorkingMemory: CAS_THREAD_WM,
  leaseResourceWorkingMemory: LEASE_RESOURCE_WM,
  leaseThreadWorkingMemory: LEASE_THREAD_WM,
  unlockWorkingMemory: UNLOCK_WM,
} as const;

/** The name of one script. */
export type ScriptName = keyof typeof BODIES;

/** Every script, with the shared prelude (key builders, framing, index upkeep) in front. */
export const SCRIPTS: Record<ScriptName, string> = Object.fromEntries(
  Object.entries(BODIES).map(([name, body]) => [
    name,
    `-- engram:${name}\n${PRELUDE}\n${LEASE_HELPERS}\n${body.trim()}\n`,
  ]),
) as Record<ScriptName, string>;
