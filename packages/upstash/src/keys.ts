/**
 * The key layout. Every key starts with the store's prefix (default `engram`) and a type tag;
 * ids are percent-encoded (see `encodeId`), so an encoded id never holds `:`, `*`, `{`, `}` or
 * `%` unescaped and each key splits back into its parts in exactly one way: `r1` and `r10` are
 * different keys, and no id can reach into another id's key.
 *
 * | key                                         | type | holds                                          |
 * |---------------------------------------------|------|------------------------------------------------|
 * | `<p>:schema`                                | str  | layout version (migrations applied)            |
 * | `<p>:thread:<thread>`                       | hash | a thread (`.<key>` fields hold metadata)       |
 * | `<p>:message:<message>`                     | hash | a message                                      |
 * | `<p>:resource:<resource>`                   | hash | a resource (`.<key>` fields hold metadata)     |
 * | `<p>:threads:created` / `:updated`          | zset | every thread id, scored by createdAt/updatedAt |
 * | `<p>:resource-threads:created:<resource>`   | zset | a resource's thread ids, by createdAt          |
 * | `<p>:resource-threads:updated:<resource>`   | zset | a resource's thread ids, by updatedAt          |
 * | `<p>:thread-messages:<thread>`              | zset | a thread's message ids, by createdAt           |
 * | `<p>:thread-messages:<thread>:<resource>`   | zset | the same, only messages of that resource       |
 * | `<p>:thread-resources:<thread>`             | set  | resources with messages in the thread          |
 *
 * Scores are epoch milliseconds; members are raw ids, so equal scores order by the ids' bytes,
 * which is the `(createdAt, id)` order of the contract. The Lua scripts build the same keys
 * (see `LUA_KEYS` in `scripts.ts`).
 */

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

/** Builds the keys of one store (one prefix). */
export class Keys {
  constructor(readonly prefix: string) {}

  schema(): string {
    return `${this.prefix}:schema`;
  }

  thread(id: string): string {
    return `${this.prefix}:thread:${encodeId(id)}`;
  }

  message(id: string): string {
    return `${this.prefix}:message:${encodeId(id)}`;
  }

  resource(id: string): string {
    return `${this.prefix}:resource:${encodeId(id)}`;
  }

  threads(order: 'createdAt' | 'updatedAt'): string {
    return `${this.prefix}:threads:${order === 'createdAt' ? 'created' : 'updated'}`;
  }

  resourceThreads(resourceId: string, order: 'createdAt' | 'updatedAt'): string {
    return `${this.prefix}:resource-threads:${order === 'createdAt' ? 'created' : 'updated'}:${encodeId(resourceId)}`;
  }

  threadMessages(threadId: string, resourceId?: string): string {
    const base = `${this.prefix}:thread-messages:${encodeId(threadId)}`;
    return resourceId === undefined ? base : `${base}:${encodeId(resourceId)}`;
  }

  threadResources(threadId: string): string {
    return `${this.prefix}:thread-resources:${encodeId(threadId)}`;
  }
}

/** Hash field prefix of metadata keys; record fields never start with it. */
export const META = '.';
