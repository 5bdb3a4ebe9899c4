/**
 * The key layout, read by `Keys` and by the Lua `K.<name>(…)` functions alike. A key is
 * `<prefix>:<path>`, each `{name}` an id percent-encoded by `encodeId` (Lua: `enc`), so a key
 * splits into its parts one way only (`r1` and `r10` never meet). Scores are epoch ms and members
 * raw ids, so ties order by the ids' bytes: the `(createdAt, id)` order of the contract. A
 * working-memory lease is `<record key>:wmlock`, living `LEASE_MS`.
 */
export const KEY_LAYOUT = {
  schema: 'schema', // string: the layout version (migrations applied)
  thread: 'thread:{thread}', // hash: a thread (`.<key>` fields hold metadata)
  message: 'message:{message}', // hash: a message
  resource: 'resource:{resource}', // hash: a resource (`.<key>` fields hold metadata)
  threadsCreated: 'threads:created', // zset: every thread id, by createdAt
  threadsUpdated: 'threads:updated', // zset: every thread id, by updatedAt
  resourceThreadsCreated: 'resource-threads:created:{resource}', // zset: a resource's thread ids
  resourceThreadsUpdated: 'resource-threads:updated:{resource}', // zset: the same, by updatedAt
  threadMessages: 'thread-messages:{thread}', // zset: a thread's message ids, by createdAt
  threadResourceMessages: 'thread-messages:{thread}:{resource}', // zset: those of one resource
  threadResources: 'thread-resources:{thread}', // set: resources with messages in the thread
  resourceMessageThreads: 'resource-message-threads:{resource}', // set: threads holding the resource's messages, whoever owns them
  vector: 'vector:{message}', // hash: a message's vector (`space`, `hash`, packed float32 `vec`)
  vectorSpace: 'vector-space', // hash: the one embedding space (`embedder`, `dimensions`)
  threadObservations: 'observations:thread:{thread}', // hash: a thread's observation log
  resourceObservations: 'observations:resource:{resource}', // hash: a resource's observation log
  turn: 'turn:{message}', // hash: a turn record (`threadId`, `resourceId`, `createdAt` ms, `body`)
  threadTurns: 'thread-turns:{thread}', // zset: a thread's turn ids, by createdAt
  keywords: 'keywords:{resource}:{term}', // hash: a term's postings in a resource (message id → count)
  keywordStats: 'keyword-stats:{resource}', // hash: `docs` and `terms` of the resource's keyword index
  keywordDoc: 'keyword-doc:{message}', // hash: a message's term counts, `:resource`, `:length`
  keywordBackfill: 'keyword-backfill', // list: thread ids whose messages the keyword backfill still indexes
  keywordRebuild: 'keyword-rebuild', // string: set by a store with the keyword index off; the next open with it on queues every thread
  resources: 'resources', // zset: every resource id with a record, all scores 0 (so ordered by bytes)
  resourceBackfill: 'resource-backfill', // string: the SCAN cursor of the resource index backfill
  settings: 'settings', // hash: store-level settings (setting key → JSON text of an object)
} as const;

/** Hash field prefix of metadata keys; record fields never start with it. */
export const META = '.';

/** How long a working-memory lease lives when its holder never writes, in ms. */
export const LEASE_MS = 2_000;

/**
 * The layout versions, append-only: entry `i` is the Lua of version `i + 1`, a comment first.
 * `init()` runs, in one script, every version newer than the one recorded at `<prefix>:schema`,
 * then records the latest, so an older layout is upgraded in place and atomically.
 */
export const MIGRATIONS: readonly string[] = [
  '-- hashes per record; sorted-set indexes by createdAt/updatedAt',
  `-- keyword index: every thread queued for the backfill, which open() runs (keywords.ts)
for _, t in ipairs(redis.call('ZRANGE', K.threadsCreated(), 0, -1)) do redis.call('RPUSH', K.keywordBackfill(), t) end`,
  `-- resource index: a store that has records queues a SCAN of its resource hashes, which open() runs (resources.ts)
if found > 0 then redis.call('SET', K.resourceBackfill(), '0') end`,
  `-- the threads holding each resource's messages (a thread moved to another resource keeps the old one's)
for _, t in ipairs(redis.call('ZRANGE', K.threadsCreated(), 0, -1)) do
  for _, r in ipairs(redis.call('SMEMBERS', K.threadResources(t))) do redis.call('SADD', K.resourceMessageThreads(r), t) end
end`,
];

/** The layout version this code reads and writes. */
export const LAYOUT_VERSION = MIGRATIONS.length;

const PLACEHOLDER = /\{([a-z]+)\}/g;
const UNRESERVED = /^[A-Za-z0-9._~-]$/;
const utf8 = new TextEncoder();

/**
 * Percent-encodes the UTF-8 bytes of an id, keeping only `A-Z a-z 0-9 . _ ~ -` as they are.
 * Injective: `%` itself is always encoded, so two ids never share an encoding.
 */
export function encodeId(id: string): string {
  let out = '';
  for (const byte of utf8.encode(id)) {
    const char = String.fromCharCode(byte);
    out += UNRESERVED.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The key `name` of the store with `prefix`, for the ids the path names, in path order. */
export function layoutKey(prefix: string, name: keyof typeof KEY_LAYOUT, ...ids: string[]): string {
  const path: string = KEY_LAYOUT[name];
  const arity = path.split('{').length - 1;
  if (ids.length !== arity) throw new TypeError(`key ${name} takes ${arity} ids, got ${ids.length}`);
  let i = 0;
  return `${prefix}:${path.replace(PLACEHOLDER, () => encodeId(ids[i++] as string))}`;
}

type Order = 'createdAt' | 'updatedAt';
const by = (order: Order) => (order === 'createdAt' ? 'Created' : 'Updated');

/** Builds the keys of one store (one prefix), from the layout. */
export class Keys {
  constructor(readonly prefix: string) {}
  readonly schema = (): string => layoutKey(this.prefix, 'schema');
  readonly thread = (id: string): string => layoutKey(this.prefix, 'thread', id);
  readonly message = (id: string): string => layoutKey(this.prefix, 'message', id);
  readonly resource = (id: string): string => layoutKey(this.prefix, 'resource', id);
  readonly threads = (order: Order): string => layoutKey(this.prefix, `threads${by(order)}`);
  readonly resourceThreads = (resourceId: string, order: Order): string =>
    layoutKey(this.prefix, `resourceThreads${by(order)}`, resourceId);
  readonly threadMessages = (threadId: string, resourceId?: string): string =>
    resourceId === undefined
      ? layoutKey(this.prefix, 'threadMessages', threadId)
      : layoutKey(this.prefix, 'threadResourceMessages', threadId, resourceId);
  readonly threadResources = (threadId: string): string =>
    layoutKey(this.prefix, 'threadResources', threadId);
  readonly resources = (): string => layoutKey(this.prefix, 'resources');
}

/**
 * The Lua of the layout: `enc` (the same encoding as `encodeId`) and a function `K.<name>(ids…)`
 * per key, building `P .. ':' .. path` with `P` the store's prefix.
 */
export function luaKeyFunctions(): string {
  const functions = Object.entries(KEY_LAYOUT).map(([name, path]) => {
    const ids = [...path.matchAll(PLACEHOLDER)].map((m) => m[1]).join(', ');
    return `function K.${name}(${ids}) return P .. ':${path.replace(PLACEHOLDER, "' .. enc($1) .. '")}' end`;
  });
  return `local function enc(id)
  return (string.gsub(id, '[^%w%.%-_~]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local K = {}
${functions.join('\n')}`;
}
