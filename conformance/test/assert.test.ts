import { describe, expect, it } from 'vitest';
import { expectEqual } from '../src/assert.ts';

describe('expectEqual', () => {
  it('names where the two sides first differ, past what the truncated dumps show', () => {
    const long = 'x'.repeat(3_000);
    const expected = [
      { id: 'a', long },
      { id: 'b', meta: { tag: 'x', at: new Date(0) } },
    ];
    const actual = [
      { id: 'a', long },
      { id: 'b', meta: { at: new Date(1), tag: 'x' } },
    ];
    expect(() => expectEqual(actual, expected, 'records')).toThrow(
      'first difference at $[1].meta.at: expected "<Date 1970-01-01T00:00:00.000Z>", actual "<Date 1970-01-01T00:00:00.001Z>"',
    );
    expect(() => expectEqual([1], [1, 2], 'list')).toThrow(
      'first difference at $: expected 2 items, actual 1',
    );
    expect(() => expectEqual({ a: 1 }, { b: 1 }, 'keys')).toThrow('first difference at $.b: missing');
    // Key order is not a difference.
    expectEqual({ a: 1, b: [1, { c: 2, d: 3 }] }, { b: [1, { d: 3, c: 2 }], a: 1 }, 'same');
  });
});
