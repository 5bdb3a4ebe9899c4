import type { TurnDriver, TurnRow } from '@engram/core/driver';
import type { UpstashTx } from './driver.ts';
import { type Frame, list, ms, text } from './mapping.ts';
import type { Call } from './scripts.ts';

/** The turn domain of `UpstashDriver`. */
export type UpstashTurns = TurnDriver<UpstashTx>;

/**
 * Turn records: a hash per row, `<p>:turn:<id>` (`threadId`, `resourceId`, `createdAt` in ms,
 * `body`), and per thread a sorted set `<p>:thread-turns:<tid>` of row ids scored by `createdAt`,
 * so ties order by the ids' bytes. A row is written by `OP.putTurn` in the commit that checks its
 * thread's owner unchanged since the write read it; a thread's rows are dropped by
 * `OP.dropThreadTurns`, a message's by `OP.dropTurns`, in the commit that deletes them. Reads are
 * one script each.
 */
export function upstashTurns(call: Call): UpstashTurns {
  return {
    put: async (tx, row) => {
      const { id, threadId, resourceId, body } = row;
      tx.ops.push({ op: 'putTurn', id, threadId, resourceId, body, createdAt: ms(row.createdAt) });
    },
    get: async (id) => {
      const reply = await call('turnGet', { ids: [id] });
      const [frame] = list(reply);
      return frame ? toRow(frame) : null;
    },
    list: async (threadId, limit, before) => {
      const cursor = before && { createdAt: ms(before.createdAt), id: before.id };
      return list(await call('turnList', { threadId, limit, before: cursor })).map(toRow);
    },
    deleteByThread: async (tx, threadId) => {
      tx.ops.push({ op: 'dropThreadTurns', id: threadId });
    },
    deleteByMessages: async (tx, ids) => {
      tx.ops.push({ op: 'dropTurns', ids });
    },
  };
}

/** An `{ id, threadId, resourceId, createdAt, body }` frame → `TurnRow`. */
function toRow(frame: Frame): TurnRow {
  const [id, threadId, resourceId, createdAt, body] = list(frame);
  return {
    id: text(id),
    threadId: text(threadId),
    resourceId: text(resourceId),
    createdAt: new Date(Number(text(createdAt))),
    body: text(body),
  };
}

/** Reads rows by id: `rows(ids)` returns the frames of those that exist, in order. */
const ROWS = `
local function rows(ids)
  local out = {}
  for _, id in ipairs(ids) do
    local f = redis.call('HMGET', K.turn(id), 'threadId', 'resourceId', 'createdAt', 'body')
    if f[1] then out[#out + 1] = {id, f[1], f[2], f[3], f[4]} end
  end
  return out
end
`;

/**
 * `threadId`, `limit`, `before` ({ createdAt, id } or absent): up to `limit` rows, newest first
 * (score, then id, descending), strictly older than `before`: the cursor's ties with a smaller id,
 * then rows of older scores.
 */
const LIST = `${ROWS}
local z, b = K.threadTurns(A.threadId), A.before
if not b then return frame(rows(redis.call('ZRANGE', z, '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, A.limit))) end
local ids = {}
for _, id in ipairs(redis.call('ZRANGE', z, b.createdAt, b.createdAt, 'BYSCORE', 'REV')) do
  if #ids < A.limit and id < b.id then ids[#ids + 1] = id end
end
if #ids < A.limit then
  local older = redis.call('ZRANGE', z, '(' .. b.createdAt, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, A.limit - #ids)
  for _, id in ipairs(older) do ids[#ids + 1] = id end
end
return frame(rows(ids))
`;

/**
 * Lua of the write operations (functions of `OP`, run by `commit`). `putTurn` (`id`, `threadId`,
 * `resourceId`, `createdAt`, `body`) writes the row, moving it out of another thread's set.
 */
export const TURN_FUNCTIONS = `
function OP.putTurn(o)
  local key = K.turn(o.id)
  local old = redis.call('HGET', key, 'threadId')
  if old and old ~= o.threadId then redis.call('ZREM', K.threadTurns(old), o.id) end
  redis.call('HSET', key, 'threadId', o.threadId, 'resourceId', o.resourceId, 'createdAt', o.createdAt, 'body', o.body)
  redis.call('ZADD', K.threadTurns(o.threadId), o.createdAt, o.id)
end
function OP.dropTurns(o)
  for _, id in ipairs(o.ids) do
    local key = K.turn(id)
    local t = redis.call('HGET', key, 'threadId')
    if t then
      redis.call('ZREM', K.threadTurns(t), id)
      redis.call('DEL', key)
    end
  end
end
function OP.dropThreadTurns(o)
  local z = K.threadTurns(o.id)
  for _, id in ipairs(redis.call('ZRANGE', z, 0, -1)) do redis.call('DEL', K.turn(id)) end
  redis.call('DEL', z)
end
`;

/** The turn scripts' bodies, by name. */
export const TURN_BODIES = {
  turnGet: `${ROWS}\nreturn frame(rows(A.ids))`,
  turnList: LIST,
};
