/**
 * The one description of the key layout, read by `Keys` (TypeScript) and by the Lua prelude of
 * `scripts.ts` (generated `K.<name>(…)` functions), so both build every key the same way.
 *
 * Every key is `<prefix>:<path>`, where `{name}` in a path is an id percent-encoded by
 * `encodeId` (Lua: `enc`), so an encoded id never holds `:`, `*`, `{`, `}` or `%` unescaped and
 * each key splits back into its parts in exactly one way: `r1` and `r10` are different keys, and
 * no id can reach into another id's key.
 *
 * | key                        | type | holds                                                      |
 * |----------------------------|------|------------------------------------------------------------|
 * | `schema`                   | str  | layout version (migrations applied)                        |
 * | `thread`                   | hash | a thread (`.<key>` fields hold metadata)                   |
 * | `message`                  | hash | a message                                                  |
 * | `resource`                 | hash | a resource (`.<key>` fields hold metadata)                 |
 * | `threadsCreated`/`Updated` | zset | every thread id, scored by createdAt/updatedAt             |
 * | `resourceThreadsCreated`   | zset | a resource's thread ids, by createdAt                      |
 * | `resourceThreadsUpdated`   | zset | a resource's thread ids, by updatedAt                      |
 * | `threadMessages`           | zset | a thread's message ids, by createdAt                       |
 * | `threadResourceMessages`   | zset | the same, only messages of that resource                   |
 * | `threadResources`          | set  | resources with messages in the thread                      |
 * | `vector`                   | hash | a message's vector (`space`, `hash`, packed float32 `vec`) |
 * | `vectorSpace`              | hash | the one embedding space (`embedder`, `dimensions`)         |
 *
 * A working-memory lease is `<record key>:wmlock` (see `LEASE_HELPERS` in `scripts.ts`).
 * Scores are epoch milliseconds; members are raw ids, so equal scores order by the ids' bytes,
 * which is the `(createdAt, id)` order of the contract.
 */
export const KEY_LAYOUT = {
  schema: 'schema',
  thread: 'thread:{thread}',
  message: 'message:{message}',
  resource: 'resource:{resource}',
  threadsCreated: 'threads:created',
  threadsUpdated: 'threads:updated',
  resourceThreadsCreated: 'resource-threads:created:{resource}',
  resourceThreadsUpdated: 'resource-threads:updated:{resource}',
  threadMessages: 'thread-messages:{thread}',
  threadResourceMessages: 'thread-messages:{thread}:{resource}',
  threadResources: 'thread-resources:{thread}',
  vector: 'vector:{message}',
  vectorSpace: 'vector-space',
} as const;

/** The name of one key of the layout. */
export type KeyName = keyof typeof KEY_LAYOUT;

const PLACEHOLDER = /\{([a-z]+)\}/g;

/** A path's parts: literal text and the names of the ids between them. */
function parts(path: string): { literals: string[]; ids: string[] } {
  const literals = path.split(PLACEHOLDER).filter((_, i) => i % 2 === 0);
  const ids = [...path.matchAll(PLACEHOLDER)].map((m) => m[1] as string);
  return { literals, ids };
}

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
export function layoutKey(prefix: string, name: KeyName, ...ids: string[]): string {
  const { literals, ids: names } = parts(KEY_LAYOUT[name]);
  if (ids.length !== names.length) {
    throw new TypeError(`key ${name} takes ${names.length} ids, got ${ids.length}`);
  }
  let key = `${prefix}:${literals[0]}`;
  ids.forEach((id, i) => {
    key += encodeId(id) + literals[i + 1];
  });
  return key;
}

/**
 * The Lua of the layout: `enc` (the same encoding as `encodeId`) and a function `K.<name>(ids…)`
 * per key, building `P .. ':' .. path` with `P` the store's prefix.
 */
export function luaKeyFunctions(): string {
  const lines = [
    'local function enc(id)',
    "  return (string.gsub(id, '[^%w%.%-_~]', function(c) return string.format('%%%02X', string.byte(c)) end))",
    'end',
    'local K = {}',
  ];
  for (const [name, path] of Object.entries(KEY_LAYOUT)) {
    const { literals, ids } = parts(path);
    const pieces = [`P .. ':${literals[0]}'`];
    ids.forEach((id, i) => {
      pieces.push(`enc(${id})`);
      if (literals[i + 1]) pieces.push(`'${literals[i + 1]}'`);
    });
    lines.push(`function K.${name}(${ids.join(', ')}) return ${pieces.join(' .. ')} end`);
  }
  return lines.join('\n');
}
