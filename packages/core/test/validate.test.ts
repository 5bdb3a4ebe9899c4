import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertJson, InMemoryStore, MAX_JSON_DEPTH, type Message, STORED_DATES } from '../src/driver.ts';

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
    for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = i % 2 ? [deep] : { k: deep };
    expect(problem(deep)).toBeUndefined();
    expect(problem([deep])).toMatch(
      /^content\[0\]\[0\]\.k\[0\].* is nested too deeply: JSON values hold at most 48 levels/,
    );
  });

  it('accepts exactly the values that survive a JSON round trip unchanged', () => {
    fc.assert(
      fc.property(fc.jsonValue({ depthSize: 'small', maxDepth: MAX_JSON_DEPTH }), (value) => {
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
      [
        { type: 'x'.repeat(256) },
        /^messages\[1\]\.type is 256 characters long; a message type is at most 255/,
      ],
      [{ createdAt: new Date(Number.NaN) }, /^messages\[1\]\.createdAt must be a valid Date/],
      [
        { createdAt: new Date(Date.parse(STORED_DATES.min) - 1) },
        /^messages\[1\]\.createdAt is 0000-12-31T23:59:59\.999Z; a stored date must be from 0001-01-01T00:00:00\.000Z to 9999-12-31T23:59:59\.999Z/,
      ],
      [
        { createdAt: new Date(8.64e15) },
        /^messages\[1\]\.createdAt is \+275760-09-13T00:00:00\.000Z; a stored date/,
      ],
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

describe('stored dates of the optional domains', () => {
  const outside = [new Date(Date.parse(STORED_DATES.min) - 1), new Date(Date.parse(STORED_DATES.max) + 1)];

  it('a turn row dated outside STORED_DATES is refused and not written; a cursor may be any date', async () => {
    const store = new InMemoryStore();
    const turns = store.turns as NonNullable<typeof store.turns>;
    const row = {
      id: 'u1',
      threadId: 't',
      resourceId: 'r',
      createdAt: new Date(STORED_DATES.max),
      body: '{}',
    };
    const thread = { id: 't', resourceId: 'r', title: '', metadata: {} };
    await store.saveThread({ ...thread, createdAt: row.createdAt, updatedAt: row.createdAt });
    await turns.put(row);
    for (const createdAt of outside) {
      await expect(turns.put({ ...row, id: 'u2', createdAt })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/^createdAt is .*; a stored date must be from/),
      });
    }
    expect(await turns.get('u2')).toBeNull();
    const cursor = { createdAt: new Date(8.64e15), id: 'z' };
    expect((await turns.list('t', 10, cursor)).map((r) => r.id)).toEqual(['u1']);
  });

  it('an observation row dated outside STORED_DATES is refused and not written', async () => {
    const store = new InMemoryStore();
    const observations = store.observations as NonNullable<typeof store.observations>;
    const row = {
      key: 'resource:r',
      resourceId: 'r',
      threadId: null,
      generation: 1,
      version: 1,
      body: '{}',
      updatedAt: new Date(STORED_DATES.min),
    };
    expect(await observations.swap(null, row)).toBe(true);
    for (const updatedAt of outside) {
      await expect(
        observations.swap({ generation: 1, version: 1 }, { ...row, version: 2, updatedAt }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^updatedAt is /) });
    }
    expect(await observations.head('resource:r')).toEqual(row);
  });
});
