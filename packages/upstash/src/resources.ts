import type { Redis } from '@upstash/redis';
import { list, text } from './mapping.ts';
import type { Call } from './scripts.ts';

/** Keys the resource index backfill asks `SCAN` to look at per round (its `COUNT`). */
const BACKFILL_COUNT = 1_000;

/**
 * The resource index, `<p>:resources`: a sorted set of every resource id that has a record
 * (`<p>:resource:<id>`), all scored 0, so Redis orders it by the ids' bytes (`memcmp`), which is
 * the UTF-8 byte order of the contract. The scripts that create a resource record (`updateResource`,
 * a resource's working memory) add its id, the commit of `deleteResource` removes it. A resource
 * that only owns threads has no record and is not listed.
 *
 * `after`, `limit`: up to `limit` ids greater than `after` (all when nil), ascending.
 */
const LIST_RESOURCES = `
local min = A.after and '(' .. A.after or '-'
return frame(redis.call('ZRANGE', K.resources(), min, '+', 'BYLEX', 'LIMIT', 0, A.limit))
`;

/**
 * One round of the backfill: `keys` (what `SCAN` returned from cursor `from`), `next` (the cursor
 * it returned). Adds to the index each key that is this store's resource record (a hash whose `id`
 * builds that very key, so leases and the keys of another prefix are skipped); then, if the stored
 * cursor is still `from`, moves it to `next` (`'0'`: done, the cursor key goes). Returns the stored
 * cursor, nil when the backfill is over.
 */
const BACKFILL = `
for _, key in ipairs(A.keys) do
  if redis.call('TYPE', key).ok == 'hash' then
    local id = redis.call('HGET', key, 'id')
    if id and K.resource(id) == key then redis.call('ZADD', K.resources(), 0, id) end
  end
end
local state = K.resourceBackfill()
local at = redis.call('GET', state)
if at and at == A.from then
  if A.next == '0' then
    redis.call('DEL', state)
    at = false
  else
    redis.call('SET', state, A.next)
    at = A.next
  end
end
return frame(at)
`;

export const RESOURCE_BODIES = {
  listResources: LIST_RESOURCES,
  resourceBackfill: BACKFILL,
};

/** `resources.list`: a page of the resource index. */
export async function listResources(call: Call, after: string | null, limit: number): Promise<string[]> {
  return list(await call('listResources', { after, limit })).map(text);
}

/**
 * Fills the resource index of a store written before it existed (layout version 3 queues this for
 * a store that had records): `SCAN` walks the database for `<p>:resource:*` hashes, a round at a
 * time, and a script indexes those that are resource records and advances the cursor kept at
 * `<p>:resource-backfill`. Resumable: an interrupted backfill goes on from the stored cursor at
 * the next `open()`; indexing twice is harmless (`ZADD`), and a record deleted meanwhile is
 * skipped (the script reads it again). Stores opening together share the cursor: a round that
 * finds it moved on continues from where it is. `SCAN` returns every key present for the whole
 * walk; a resource created meanwhile is indexed by its own write.
 */
export async function backfillResources(
  client: Redis,
  call: Call,
  prefix: string,
  from: string,
): Promise<void> {
  const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}:resource:*`;
  let cursor: string | null = from;
  while (cursor !== null) {
    const [next, keys] = await client.scan(cursor, { match, count: BACKFILL_COUNT, type: 'hash' });
    const reply = await call('resourceBackfill', { from: cursor, next: String(next), keys });
    cursor = reply === null ? null : text(reply);
  }
}
