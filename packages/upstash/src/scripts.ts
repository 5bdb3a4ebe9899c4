/**
 * The Lua scripts behind every operation. Each runs atomically on the server, so a write
 * touches its record, its indexes and the threads' `updatedAt` all or nothing.
 *
 * Conventions: every script takes one argument, `ARGV[1]`, a JSON object decoded with
 * `cjson.decode` into `A`: `A.prefix` (bound to `P`) and the named fields of that script's
 * `ScriptArgs` entry below. An optional field is left out of the JSON when absent (it is then
 * `nil` in Lua; `null` is never sent). Keys are built by the `K.<name>(…)` functions generated
 * from the layout in `layout.ts`, the same description `Keys` reads. Some keys are derived from
 * stored data (the old thread of a moved message), so the scripts run under Upstash's default
 * (global) script lock and need a non-cluster Redis. Every script returns one string framed by
 * `frame` (`$<bytes>:<text>`, `*<n>:<items…>`, `_` for nil): such a string is never valid JSON,
 * so a client that JSON-parses replies leaves it alone, and `unframe` in `mapping.ts` reads it
 * back.
 */

import { luaKeyFunctions } from './layout.ts';
import { LAYOUT_VERSION, MIGRATIONS } from './migrations.ts';

/** A thread as the save scripts write it; `metadata` maps `.<key>` fields to JSON text. */
export interface ThreadRecord {
  id: string;
  resourceId: string;
  title: string;
  /** Epoch milliseconds, as text. */
  createdAt: string;
  updatedAt: string;
  /** The new working-memory version. */
  version: string;
  metadata: Record<string, string>;
}

/** A message as `saveMessages` writes it (content is JSON text, dates epoch ms as text). */
export interface MessageRecord {
  id: string;
  threadId: string;
  resourceId: string;
  role: string;
  type: string;
  content: string;
  createdAt: string;
}

/** A working-memory write of a resource: set a value or clear it, with the new version. */
export type WorkingMemoryWrite =
  | { action: 'set'; value: string; version: string }
  | { action: 'clear'; version: string };

/** The named arguments of each script (besides `prefix`, which every call adds). */
export interface ScriptArgs {
  init: Record<string, never>;
  getThread: { id: string };
  createThread: ThreadRecord;
  saveThread: ThreadRecord;
  /** `title` and `version` only when they change; `metadata` maps `.<key>` fields to JSON. */
  updateThread: {
    id: string;
    title?: string;
    version?: string;
    metadata: Record<string, string>;
  };
  deleteThread: { id: string };
  /**
   * Without `filters` the page (`limit` ids from `offset`; every id when `limit` is absent) and
   * the total; with filters every candidate passing the cheap checks (`eq`: the field holds this
   * JSON; `has`: the field exists), for the caller to compare values and page.
   */
  listThreads: {
    resourceId?: string;
    orderBy: 'createdAt' | 'updatedAt';
    direction: 'ASC' | 'DESC';
    offset: number;
    limit?: number;
    filters: { field: string; op: 'eq' | 'has'; value: string }[];
  };
  saveMessages: { messages: MessageRecord[] };
  /** `min`/`max` in Redis score-range syntax; `limit` absent for every message. */
  listMessages: {
    threadId: string;
    resourceId?: string;
    direction: 'ASC' | 'DESC';
    offset: number;
    limit?: number;
    min: string;
    max: string;
    windows: { id: string; before: number; after: number }[];
  };
  getMessages: { ids: string[] };
  /** Each patch sets only the fields it holds. */
  updateMessages: {
    patches: { id: string; role?: string; content?: string; type?: string; createdAt?: string }[];
  };
  deleteMessages: { ids: string[] };
  getResource: { id: string };
  /** `workingMemory` only when it changes. */
  updateResource: {
    id: string;
    now: string;
    workingMemory?: WorkingMemoryWrite;
    metadata: Record<string, string>;
  };
  readResourceWorkingMemory: { id: string };
  readThreadWorkingMemory: { id: string };
  leaseResourceWorkingMemory: { id: string; token: string; ttlMs: number };
  leaseThreadWorkingMemory: { id: string; token: string; ttlMs: number };
  unlockWorkingMemory: { record: 'resource' | 'thread'; id: string; token: string };
  /** `expectedVersion` absent: no version stored yet; `leaseToken` absent: no lease held. */
  casResourceWorkingMemory: {
    id: string;
    now: string;
    expectedVersion?: string;
    write: WorkingMemoryWrite;
    leaseToken?: string;
  };
  /** `value` is the JSON text of the new working memory. */
  casThreadWorkingMemory: {
    id: string;
    expectedVersion?: string;
    value: string;
    version: string;
    leaseToken?: string;
  };
}

/**
 * The one argument of a script call: `args` and the prefix as a JSON object. Absent fields are
 * left out; a `null` is left out too (cjson would decode it to a truthy value).
 */
export function scriptArgument(prefix: string, args: object): string {
  return JSON.stringify({ ...args, prefix }, (_key, value: unknown) => (value === null ? undefined : value));
}

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

-- Bumps a thread's updatedAt (core's bumpedUpdatedAt): the stored one, the server's clock
-- (TIME, read as the script runs) and newest (the newest createdAt written into the thread, a
-- number, or nil), whichever is latest; r is the thread's resource.
local function bumpThread(t, r, newest)
  local key = K.thread(t)
  local clock = redis.call('TIME')
  local u = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local stored = tonumber(redis.call('HGET', key, 'updatedAt') or '')
  if stored and stored > u then u = stored end
  if newest and newest > u then u = newest end
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

-- Keeps the newest of the numbers given per key (createdAt per thread).
local function newestOf()
  local newest = {}
  return newest, function(k, v)
    v = tonumber(v)
    if newest[k] == nil or v > newest[k] then newest[k] = v end
  end
end

local function unlinkMessage(id)
  local key = K.message(id)
  local m = redis.call('HMGET', key, 'threadId', 'resourceId')
  if not m[1] then return nil end
  redis.call('DEL', key)
  redis.call('ZREM', K.threadMessages(m[1]), id)
  local byRes = K.threadResourceMessages(m[1], m[2])
  redis.call('ZREM', byRes, id)
  if redis.call('ZCARD', byRes) == 0 then redis.call('SREM', K.threadResources(m[1]), m[2]) end
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
 * latest. Returns the version found before (newer than the latest: left alone).
 */
const INIT = `
local key = K.schema()
local found = tonumber(redis.call('GET', key) or '0')
${MIGRATIONS.map((m, i) => `if found < ${i + 1} then\n${m.lua}\nend`).join('\n')}
if found < ${LAYOUT_VERSION} then redis.call('SET', key, '${LAYOUT_VERSION}') end
return frame(found)
`;

const GET_THREAD = `
return frame(redis.call('HGETALL', K.thread(A.id)))
`;

/** Replaces the thread's hash and moves it between resources' indexes. */
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

/** As SAVE_THREAD; answers 'exists' and writes nothing when the id is taken. */
const CREATE_THREAD = `
if redis.call('EXISTS', K.thread(A.id)) == 1 then return frame('exists') end
${SAVE_THREAD.trim()}
`;

/** Returns the thread, or nil when absent. */
const UPDATE_THREAD = `
local id = A.id
local key = K.thread(id)
local r = redis.call('HGET', key, 'resourceId')
if not r then return frame(false) end
if A.title ~= nil then redis.call('HSET', key, 'title', A.title) end
for field, value in pairs(A.metadata) do redis.call('HSET', key, field, value) end
if A.version ~= nil then redis.call('HSET', key, 'wmv', A.version) end
bumpThread(id, r, nil)
return frame(redis.call('HGETALL', key))
`;

/** Deletes the thread, its messages, their vectors and its indexes. */
const DELETE_THREAD = `
local t = A.id
local key = K.thread(t)
local mz = K.threadMessages(t)
local ids = redis.call('ZRANGE', mz, 0, -1)
for _, mid in ipairs(ids) do redis.call('DEL', K.message(mid), K.vector(mid)) end
for _, r in ipairs(redis.call('SMEMBERS', K.threadResources(t))) do redis.call('DEL', K.threadResourceMessages(t, r)) end
redis.call('DEL', mz, K.threadResources(t))
local r = redis.call('HGET', key, 'resourceId')
if r then
  redis.call('ZREM', K.threadsCreated(), t)
  redis.call('ZREM', K.threadsUpdated(), t)
  redis.call('ZREM', K.resourceThreadsCreated(r), t)
  redis.call('ZREM', K.resourceThreadsUpdated(r), t)
  redis.call('DEL', key)
end
return frame(#ids)
`;

/**
 * Returns { 'page', total, thread hashes } without filters, { 'candidates', thread hashes }
 * with them (see `ScriptArgs.listThreads`).
 */
const LIST_THREADS = `
local byCreated = A.orderBy == 'createdAt'
local z
if A.resourceId ~= nil then
  z = byCreated and K.resourceThreadsCreated(A.resourceId) or K.resourceThreadsUpdated(A.resourceId)
else
  z = byCreated and K.threadsCreated() or K.threadsUpdated()
end
local rev = A.direction == 'DESC'
local rows = {}
local function range(start, stop)
  if rev then return redis.call('ZRANGE', z, start, stop, 'REV') end
  return redis.call('ZRANGE', z, start, stop)
end
if #A.filters == 0 then
  local total = redis.call('ZCARD', z)
  if A.limit ~= 0 then
    local stop = -1
    if A.limit ~= nil then stop = A.offset + A.limit - 1 end
    for _, id in ipairs(range(A.offset, stop)) do
      local h = redis.call('HGETALL', K.thread(id))
      if #h > 0 then rows[#rows + 1] = h end
    end
  end
  return frame({'page', total, rows})
end
for _, id in ipairs(range(0, -1)) do
  local key = K.thread(id)
  local ok = true
  for _, f in ipairs(A.filters) do
    local v = redis.call('HGET', key, f.field)
    if not v or (f.op == 'eq' and v ~= f.value) then ok = false; break end
  end
  if ok then
    local h = redis.call('HGETALL', key)
    if #h > 0 then rows[#rows + 1] = h end
  end
end
return frame({'candidates', rows})
`;

/**
 * Checks every thread and every stored message first (nothing is written when one fails: a
 * missing thread, a thread of another resource, or an id taken by a message of another
 * resource), then upserts, moves messages saved with another thread, and bumps the touched
 * threads.
 */
const SAVE_MESSAGES = `
local owner = {}
for _, m in ipairs(A.messages) do
  local t, r = m.threadId, m.resourceId
  if owner[t] == nil then owner[t] = redis.call('HGET', K.thread(t), 'resourceId') end
  if not owner[t] then return frame({'not_found', t}) end
  if owner[t] ~= r then return frame({'resource_mismatch', m.id, r}) end
end
for _, m in ipairs(A.messages) do
  local stored = redis.call('HGET', K.message(m.id), 'resourceId')
  if stored and stored ~= m.resourceId then return frame({'taken', m.id}) end
end
local touched, touch = collector()
local newest, saw = newestOf()
for _, m in ipairs(A.messages) do
  local id, t, r, c = m.id, m.threadId, m.resourceId, m.createdAt
  saw(t, c)
  touch(unlinkMessage(id))
  redis.call('HSET', K.message(id), 'id', id, 'threadId', t, 'resourceId', r, 'role', m.role,
    'type', m.type, 'content', m.content, 'createdAt', c)
  redis.call('ZADD', K.threadMessages(t), c, id)
  redis.call('ZADD', K.threadResourceMessages(t, r), c, id)
  redis.call('SADD', K.threadResources(t), r)
  touch(t)
end
for _, t in ipairs(touched) do touchThread(t, newest[t]) end
return frame({'ok'})
`;

/** Returns { total, message hashes… } for the page and the windows, de-duplicated. */
const LIST_MESSAGES = `
local t, r = A.threadId, A.resourceId
local hasRes = r ~= nil
local z = hasRes and K.threadResourceMessages(t, r) or K.threadMessages(t)
local rev = A.direction == 'DESC'
local offset, min, max = A.offset, A.min, A.max
local ranged = not (min == '-inf' and max == '+inf')
local out = {}
if ranged then out[1] = redis.call('ZCOUNT', z, min, max) else out[1] = redis.call('ZCARD', z) end
local ids = {}
if A.limit ~= 0 then
  if ranged then
    local count = A.limit or -1
    if rev then
      ids = redis.call('ZRANGE', z, max, min, 'BYSCORE', 'REV', 'LIMIT', offset, count)
    else
      ids = redis.call('ZRANGE', z, min, max, 'BYSCORE', 'LIMIT', offset, count)
    end
  else
    local stop = -1
    if A.limit ~= nil then stop = offset + A.limit - 1 end
    if rev then ids = redis.call('ZRANGE', z, offset, stop, 'REV') else ids = redis.call('ZRANGE', z, offset, stop) end
  end
end
local seen = {}
local function add(id)
  if seen[id] then return end
  seen[id] = true
  local h = redis.call('HGETALL', K.message(id))
  if #h > 0 then out[#out + 1] = h end
end
for _, id in ipairs(ids) do add(id) end
for _, w in ipairs(A.windows) do
  local m = redis.call('HMGET', K.message(w.id), 'threadId', 'resourceId')
  if m[1] and (not hasRes or m[2] == r) then
    local wz = hasRes and K.threadResourceMessages(m[1], r) or K.threadMessages(m[1])
    local rank = redis.call('ZRANK', wz, w.id)
    if rank then
      local start = rank - w.before
      if start < 0 then start = 0 end
      for _, id in ipairs(redis.call('ZRANGE', wz, start, rank + w.after)) do add(id) end
    end
  end
end
return frame(out)
`;

/** Returns the hashes of the messages found. */
const GET_MESSAGES = `
local out = {}
for _, id in ipairs(A.ids) do
  local h = redis.call('HGETALL', K.message(id))
  if #h > 0 then out[#out + 1] = h end
end
return frame(out)
`;

/** Unknown ids are skipped. Returns the updated hashes. */
const UPDATE_MESSAGES = `
local touched, touch = collector()
local found, keep = collector()
local newest, saw = newestOf()
for _, p in ipairs(A.patches) do
  local id = p.id
  local key = K.message(id)
  local m = redis.call('HMGET', key, 'threadId', 'resourceId')
  if m[1] then
    if p.role ~= nil then redis.call('HSET', key, 'role', p.role) end
    if p.content ~= nil then redis.call('HSET', key, 'content', p.content) end
    if p.type ~= nil then redis.call('HSET', key, 'type', p.type) end
    if p.createdAt ~= nil then
      redis.call('HSET', key, 'createdAt', p.createdAt)
      redis.call('ZADD', K.threadMessages(m[1]), p.createdAt, id)
      redis.call('ZADD', K.threadResourceMessages(m[1], m[2]), p.createdAt, id)
      saw(m[1], p.createdAt)
    end
    touch(m[1])
    keep(id)
  end
end
for _, t in ipairs(touched) do touchThread(t, newest[t]) end
local out = {}
for _, id in ipairs(found) do out[#out + 1] = redis.call('HGETALL', K.message(id)) end
return frame(out)
`;

/** Unknown ids are skipped; touched threads are bumped. */
const DELETE_MESSAGES = `
local touched, touch = collector()
for _, id in ipairs(A.ids) do
  touch(unlinkMessage(id))
  redis.call('DEL', K.vector(id))
end
for _, t in ipairs(touched) do touchThread(t, nil) end
return frame(#touched)
`;

const GET_RESOURCE = `
return frame(redis.call('HGETALL', K.resource(A.id)))
`;

/** Creates the resource when missing; returns it. */
const UPDATE_RESOURCE = `
local key, now, wm = K.resource(A.id), A.now, A.workingMemory
if redis.call('EXISTS', key) == 0 then redis.call('HSET', key, 'id', A.id, 'createdAt', now) end
if wm ~= nil and wm.action == 'set' then
  redis.call('HSET', key, 'workingMemory', wm.value, 'wmv', wm.version)
elseif wm ~= nil and wm.action == 'clear' then
  redis.call('HDEL', key, 'workingMemory')
  redis.call('HSET', key, 'wmv', wm.version)
end
for field, value in pairs(A.metadata) do redis.call('HSET', key, field, value) end
redis.call('HSET', key, 'updatedAt', now)
return frame(redis.call('HGETALL', key))
`;

/** Returns { workingMemory, version }. */
const READ_RESOURCE_WM = `
return frame(redis.call('HMGET', K.resource(A.id), 'workingMemory', 'wmv'))
`;

/**
 * The lease a writer takes after losing a compare-and-set: `<record key>:wmlock` holds its
 * token and expires on its own (a holder that dies frees it). While it is held, compare-and-sets
 * with another token answer 'locked', so the holder's write cannot lose. A write by the holder
 * (or `unlockWorkingMemory`) deletes it. `token` is nil when the caller holds no lease.
 */
const LEASE_HELPERS = `
local function leaseOf(key) return key .. ':wmlock' end
local function leaseBlocks(key, token)
  local holder = redis.call('GET', leaseOf(key))
  return holder and holder ~= token
end
local function endLease(key, token)
  if token ~= nil and redis.call('GET', leaseOf(key)) == token then redis.call('DEL', leaseOf(key)) end
end
`;

/**
 * Takes the lease on a resource's working memory and reads it. Returns { 'ok', value, version }
 * or { 'busy' } (another writer holds the lease).
 */
const LEASE_RESOURCE_WM = `
local key = K.resource(A.id)
if not redis.call('SET', leaseOf(key), A.token, 'NX', 'PX', A.ttlMs) then return frame({'busy'}) end
local current = redis.call('HMGET', key, 'workingMemory', 'wmv')
return frame({'ok', current[1], current[2]})
`;

/**
 * The same for a thread. Returns { 'ok', resourceId, JSON value, version }, { 'busy' } or
 * { 'not_found' } (no lease is left behind).
 */
const LEASE_THREAD_WM = `
local key = K.thread(A.id)
if redis.call('EXISTS', key) == 0 then return frame({'not_found'}) end
if not redis.call('SET', leaseOf(key), A.token, 'NX', 'PX', A.ttlMs) then return frame({'busy'}) end
local current = redis.call('HMGET', key, 'resourceId', '.workingMemory', 'wmv')
return frame({'ok', current[1], current[2], current[3]})
`;

/** Gives a lease back without writing (the update threw). */
const UNLOCK_WM = `
local key = A.record == 'resource' and K.resource(A.id) or K.thread(A.id)
endLease(key, A.token)
return frame({'ok'})
`;

/**
 * Compare-and-set of resource working memory; the caller's lease ends whatever the outcome.
 * Returns { 'ok' }, { 'locked' } while another writer holds the lease, or
 * { 'conflict', current value, current version } so a retry needs no separate read.
 */
const CAS_RESOURCE_WM = `
local key, now, write = K.resource(A.id), A.now, A.write
if leaseBlocks(key, A.leaseToken) then return frame({'locked'}) end
endLease(key, A.leaseToken)
local current = redis.call('HMGET', key, 'workingMemory', 'wmv')
if current[2] ~= (A.expectedVersion or false) then return frame({'conflict', current[1], current[2]}) end
if redis.call('EXISTS', key) == 0 then redis.call('HSET', key, 'id', A.id, 'createdAt', now) end
if write.action == 'set' then redis.call('HSET', key, 'workingMemory', write.value) else redis.call('HDEL', key, 'workingMemory') end
redis.call('HSET', key, 'wmv', write.version, 'updatedAt', now)
return frame({'ok'})
`;

/** Returns { resourceId, workingMemory JSON, version }. */
const READ_THREAD_WM = `
return frame(redis.call('HMGET', K.thread(A.id), 'resourceId', '.workingMemory', 'wmv'))
`;

/**
 * Compare-and-set of thread working memory (`metadata.workingMemory`); the caller's lease ends
 * whatever the outcome. Returns { 'ok' }, { 'not_found' }, { 'locked' } or { 'conflict',
 * current JSON value, current version }.
 */
const CAS_THREAD_WM = `
local id = A.id
local key = K.thread(id)
local current = redis.call('HMGET', key, 'resourceId', '.workingMemory', 'wmv')
local r = current[1]
if not r then endLease(key, A.leaseToken) return frame({'not_found'}) end
if leaseBlocks(key, A.leaseToken) then return frame({'locked'}) end
endLease(key, A.leaseToken)
if current[3] ~= (A.expectedVersion or false) then return frame({'conflict', current[2], current[3]}) end
redis.call('HSET', key, '.workingMemory', A.value, 'wmv', A.version)
bumpThread(id, r, nil)
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
