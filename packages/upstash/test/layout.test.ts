import { describe, expect, it } from 'vitest';
import { encodeId, Keys } from '../src/index.ts';
import { KEY_LAYOUT, layoutKey } from '../src/layout.ts';
import { PRELUDE, scriptArgument } from '../src/scripts.ts';
import { runPrefix, upstashSkip } from './env.ts';
import { testClient } from './stores.ts';

/** Ids that would collide or split wrongly under a naive key scheme. */
const HOSTILE = ['r1', 'r10', 'a:b', 'a%3Ab', '{t}', '*', 'ä✓ 🎉', 'x\ny', '.'];

describe('one key layout for TypeScript and Lua', () => {
  it('Keys builds the documented keys from the layout', () => {
    const keys = new Keys('p');
    expect(keys.schema()).toBe('p:schema');
    expect(keys.thread('a:b')).toBe('p:thread:a%3Ab');
    expect(keys.threadMessages('t', 'r')).toBe('p:thread-messages:t:r');
    expect(keys.resourceThreads('r', 'updatedAt')).toBe('p:resource-threads:updated:r');
    expect(keys.threads('createdAt')).toBe('p:threads:created');
    expect(() => layoutKey('p', 'thread')).toThrow('key thread takes 1 ids, got 0');
  });

  it.skipIf(upstashSkip)(
    `the Lua key functions generated from the layout build the same keys as Keys for hostile ids${upstashSkip ? ` (skipped: ${upstashSkip})` : ''}`,
    async () => {
      const prefix = runPrefix('layout');
      const client = testClient();
      // Every key of the layout, for every hostile id, built by the server-side functions.
      const script = client.createScript<string>(`${PRELUDE}
local out = {}
for _, c in ipairs(A.cases) do
  out[#out + 1] = K[c.name](unpack(c.ids))
end
return cjson.encode(out)`);
      const cases = Object.keys(KEY_LAYOUT).flatMap((name) => {
        const arity = (KEY_LAYOUT[name as keyof typeof KEY_LAYOUT].match(/\{/g) ?? []).length;
        return HOSTILE.map((id, i) => ({
          name: name as keyof typeof KEY_LAYOUT,
          ids: [id, HOSTILE[(i + 1) % HOSTILE.length] as string].slice(0, arity),
        }));
      });
      const reply = await script.exec([], [scriptArgument(prefix, { cases })]);
      const fromLua = typeof reply === 'string' ? JSON.parse(reply) : reply;
      expect(fromLua).toEqual(cases.map((c) => layoutKey(prefix, c.name, ...c.ids)));
      expect(new Set(fromLua).size).toBe(new Set(cases.map((c) => `${c.name}/${c.ids.join('/')}`)).size);
      expect(encodeId('a:b')).toBe('a%3Ab');
    },
  );
});
