import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertJson } from '../src/index.ts';

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
    expect(problem({ a: { ['k\uD800']: 1 } })).toMatch(
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
