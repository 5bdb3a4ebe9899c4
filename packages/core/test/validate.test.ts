import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertJson, InMemoryStore, type Message } from '../src/driver.ts';

function problem(value: unknown): string | undefined {
  try {
    assertJson(value, 'content');
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('assertJson', () => {
  it('names the first part of a value that is not storable JSON', () => {
    expect(problem({ a: [1, { b: Number.NaN }] })).toBe(
      'content.a[1].b holds NaN, which JSON cannot represent',
    );
    expect(problem({ a: { 'k\uD800': 1 } })).toMatch(
      /^content\.a key "k\\ud800" holds a lone UTF-16 surrogate/,
    );
    expect(problem(['ok', 'x\uDC00'])).toMatch(
      /^content\[1\] holds a lone UTF-16 surrogate \(U\+DC00 at index 1\)/,
    );
    expect(problem({ when: new Date(0) })).toMatch(/^content\.when holds .*which is not a JSON value$/);
    expect(problem({ f: () => 1 })).toMatch(/^content\.f holds .*which is not a JSON value$/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(problem(cycle)).toMatch(/nested too deeply/);
  });

  it('accepts what JSON can hold, sparse arrays included (their holes are stored as null)', () => {
    expect(
      problem({ a: [1, 'two', null, true, { b: [] }], 'k\uD83E\uDD89': '\uD83E\uDD89', '': 0 }),
    ).toBeUndefined();
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    expect(problem([1, , 3])).toBeUndefined();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 2_000; i++) deep = [deep];
    expect(problem(deep)).toBeUndefined();
  });

  it('accepts exactly the values that survive a JSON round trip unchanged', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(problem(value)).toBeUndefined();
      }),
    );
  });
});

describe('saveMessages validation', () => {
  it('names the field of the first bad message, whatever is wrong with it', async () => {
    const store = new InMemoryStore();
    const good: Message = {
      id: 'm1',
      threadId: 't',
      resourceId: 'r',
      role: 'user',
      content: { parts: [{ text: 'hi' }] },
      type: 'v2',
      createdAt: new Date(1),
    };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ id: '' }, /^messages\[1\]\.id must not be empty/],
      [{ id: 'x'.repeat(256) }, /^messages\[1\]\.id is 256 characters long/],
      [{ threadId: 'a\u0000b' }, /^messages\[1\]\.threadId holds a NUL character/],
      [{ resourceId: 7 }, /^messages\[1\]\.resourceId must be a string id/],
      [{ role: 'robot' }, /^messages\[1\]\.role must be user, assistant, system or tool/],
      [{ content: undefined }, /^messages\[1\]\.content is missing/],
      [{ content: { a: ['\uD800'] } }, /^messages\[1\]\.content\.a\[0\] holds a lone UTF-16 surrogate/],
      [{ type: 'v\u0000' }, /^messages\[1\]\.type holds a NUL character/],
      [{ type: 2 }, /^messages\[1\]\.type must be a string/],
      [{ createdAt: new Date(Number.NaN) }, /^messages\[1\]\.createdAt must be a valid Date/],
    ];
    for (const [change, message] of cases) {
      const bad = { ...good, id: 'm2', ...change } as Message;
      await expect(store.saveMessages([good, bad])).rejects.toThrow(message);
    }
    await expect(
      store.saveMessages([good, { ...good, id: 'm2', content: 'NUL \u0000 is fine here' }]),
    ).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});
