import type { ObservationDriver, ObservationRow } from '@engram/core/driver';
import type { UpstashTx } from './driver.ts';
import { type Frame, list, ms, text } from './mapping.ts';
import type { Call } from './scripts.ts';

/** The observation domain of `UpstashDriver`. */
export type UpstashObservations = ObservationDriver<UpstashTx>;

/**
 * Observation logs, one hash per log key: `<p>:observations:thread:<tid>` or
 * `<p>:observations:resource:<rid>`. Field `head` holds the newest generation `g`; fields
 * `<g>:resourceId`, `<g>:threadId` (absent for a resource log), `<g>:version`, `<g>:body` and
 * `<g>:updatedAt` (ms) hold each generation. A swap is one script (`observationSwap`); a thread's
 * log is dropped by `OP.dropThreadObservations` in the commit that deletes the thread.
 */
export function upstashObservations(call: Call): UpstashObservations {
  return {
    head: async (key) => {
      const reply = await call('observationHead', logOf(key));
      return reply === null ? null : toRow(key, reply);
    },
    generations: async (key) =>
      list(await call('observationGenerations', logOf(key))).map((frame) => toRow(key, frame)),
    swap: async (expected, next) => {
      // Numbers travel as decimal text and are compared as such: no float rounding in Lua.
      const args = {
        ...logOf(next.key),
        expected: expected && { generation: String(expected.generation), version: String(expected.version) },
        next: {
          resourceId: next.resourceId,
          threadId: next.threadId,
          generation: String(next.generation),
          version: String(next.version),
          body: next.body,
          updatedAt: ms(next.updatedAt),
        },
      };
      return text(await call('observationSwap', args)) === 'ok';
    },
    deleteByThread: async (tx, threadId) => {
      tx.ops.push({ op: 'dropThreadObservations', id: threadId });
    },
    // A log summarises messages; deleting one does not rewrite it.
    deleteByMessages: async () => {},
    deleteByResource: async (tx, resourceId) => {
      tx.ops.push({ op: 'dropResourceObservations', id: resourceId });
    },
  };
}

/** The scope and id of a log key (`thread:<id>` or `resource:<id>`, checked by core). */
function logOf(key: string): { scope: string; id: string } {
  const colon = key.indexOf(':');
  return { scope: key.slice(0, colon), id: key.slice(colon + 1) };
}

/** A `{ generation, resourceId, threadId, version, body, updatedAt }` frame → `ObservationRow`. */
function toRow(key: string, frame: Frame): ObservationRow {
  const [generation, resourceId, threadId, version, body, updatedAt] = list(frame);
  return {
    key,
    resourceId: text(resourceId),
    threadId: threadId === null ? null : text(threadId),
    generation: Number(text(generation)),
    version: Number(text(version)),
    body: text(body),
    updatedAt: new Date(Number(text(updatedAt))),
  };
}

/** The log's hash (`scope`, `id`) and its rows as frames. */
const LOG = `
local log = A.scope == 'thread' and K.threadObservations(A.id) or K.resourceObservations(A.id)
local function row(g)
  local f = redis.call('HMGET', log, g .. ':resourceId', g .. ':threadId', g .. ':version', g .. ':body', g .. ':updatedAt')
  return {g, f[1], f[2], f[3], f[4], f[5]}
end
`;

/** Returns the newest row, or nil. */
const HEAD = `${LOG}
local g = redis.call('HGET', log, 'head')
return frame(g and row(g))
`;

/** Returns every row, oldest first (generations are numbered from 1 without gaps). */
const GENERATIONS = `${LOG}
local out = {}
for g = 1, tonumber(redis.call('HGET', log, 'head') or '0') do out[g] = row(string.format('%d', g)) end
return frame(out)
`;

/**
 * `expected` ({ generation, version }; absent: no row yet), `next` (the row, numbers as text).
 * 'lost' and nothing written unless the newest row is `expected`. Else writes `next` over it
 * (same generation) or, starting the next generation, raises its version to `next.version`
 * first; returns 'ok'.
 */
const SWAP = `${LOG}
local e, n = A.expected, A.next
local head = redis.call('HGET', log, 'head')
if e == nil then
  if head then return frame('lost') end
elseif head ~= e.generation or redis.call('HGET', log, head .. ':version') ~= e.version then
  return frame('lost')
elseif n.generation ~= head then
  redis.call('HSET', log, head .. ':version', n.version)
end
local g = n.generation
redis.call('HSET', log, 'head', g, g .. ':resourceId', n.resourceId, g .. ':version', n.version,
  g .. ':body', n.body, g .. ':updatedAt', n.updatedAt)
if n.threadId then redis.call('HSET', log, g .. ':threadId', n.threadId) else redis.call('HDEL', log, g .. ':threadId') end
return frame('ok')
`;

/** The observation scripts' bodies, by name. */
export const OBSERVATION_BODIES = {
  observationHead: HEAD,
  observationGenerations: GENERATIONS,
  observationSwap: SWAP,
};
