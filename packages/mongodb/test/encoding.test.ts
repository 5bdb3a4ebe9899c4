import { randomInt } from 'node:crypto';
import type { JsonValue } from '@engram/core';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  decodeKey,
  decodeValue,
  encodeKey,
  encodeValue,
  NATIVE,
  valueHash,
} from '../src/encoding.ts';

const WRAPPED = { wrapNestedArrays: true };

function randomKey(): string {
  const alphabet = [
    '.',
    '$',
    '%',
    '\0',
    'a',
    'u',
    '2',
    'E',
    '4',
    '5',
    '0',
    'é',
    ' ',
    '\t',
    '\u3000',
    '\u00a0',
  ];
  return Array.from({ length: randomInt(0, 9) }, () => alphabet[randomInt(alphabet.length)]).join('');
}

describe('key escaping', () => {
  it('escapes exactly the characters MongoDB field names cannot hold', () => {
    expect(encodeKey('plain_key')).toBe('plain_key');
    expect(encodeKey('__proto__')).toBe('__proto__');
    expect(encodeKey('a.b')).toBe('a%2Eb');
    expect(encodeKey('$gt')).toBe('%24gt');
    expect(encodeKey('a$')).toBe('a$');
    expect(encodeKey('50%')).toBe('50%25');
    expect(encodeKey('')).toBe('%');
    expect(encodeKey('a\0b')).toBe('a%00b');
    expect(encodeKey(' a b ')).toBe('%20a b%20');
    expect(encodeKey('\tx\u3000')).toBe('%09x%u3000');
    expect(encodeKey('%u3000')).toBe('%25u3000');
  });

  it('is reversible and injective on random keys made of the awkward characters', () => {
    const seen = new Map<string, string>();
    for (let i = 0; i < 5_000; i++) {
      const key = randomKey();
      const stored = encodeKey(key);
      expect(stored).not.toBe('');
      expect(stored).not.toMatch(/[.\0]|^\$|^\s|\s$/);
      expect(decodeKey(stored)).toBe(key);
      const earlier = seen.get(stored);
      if (earlier !== undefined) expect(earlier).toBe(key);
      seen.set(stored, key);
    }
  });
});

describe('values', () => {
  const value: JsonValue = {
    'a.b': [1, [2, [3, { $x: [[]] }]], []],
    '': null,
    nested: { '%': true, list: [{ '.': 'dot' }] },
  };

  it('round-trips with native arrays and with wrapped inner arrays', () => {
    expect(decodeValue(encodeValue(value, 'v', NATIVE))).toEqual(value);
    expect(decodeValue(encodeValue(value, 'v', WRAPPED))).toEqual(value);
  });

  it('wraps only arrays that sit directly inside arrays', () => {
    expect(encodeValue([1, [2, [3]], { k: [4] }], 'v', WRAPPED)).toEqual([
      1,
      { '%a': [2, { '%a': [3] }] },
      { k: [4] },
    ]);
    expect(encodeValue([1, [2]], 'v', NATIVE)).toEqual([1, [2]]);
  });

  it('keeps a user key "%a" apart from the wrapper', () => {
    const tricky: JsonValue = [{ '%a': [1] }, [1]];
    const stored = encodeValue(tricky, 'v', WRAPPED);
    expect(stored).toEqual([{ '%25a': [1] }, { '%a': [1] }]);
    expect(decodeValue(stored)).toEqual(tricky);
  });

  it('keeps __proto__ an own property', () => {
    const withProto = JSON.parse('{"__proto__": {"polluted": true}}') as JsonValue;
    const back = decodeValue(encodeValue(withProto, 'v', NATIVE)) as Record<string, unknown>;
    expect(Object.hasOwn(back, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
  });

  // Unpaired surrogates are refused by core before a value gets here (see store.test.ts).
  it('rejects nesting MongoDB cannot store', () => {
    expect(encodeValue('\ud83d\ude00', 'v', NATIVE)).toBe('😀');
    let deep: JsonValue = 'leaf';
    for (let i = 0; i < 120; i++) deep = { d: deep };
    expect(() => encodeValue(deep, 'v', NATIVE)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });
});

describe('metadata hashes', () => {
  it('are equal for JSON-equal values and differ otherwise', () => {
    expect(canonicalJson({ b: 1, a: [1, { d: 2, c: 3 }] })).toBe('{"a":[1,{"c":3,"d":2}],"b":1}');
    expect(valueHash({ a: 1, b: 2 })).toBe(valueHash({ b: 2, a: 1 }));
    expect(valueHash([1, 2])).not.toBe(valueHash([2, 1]));
    expect(valueHash(null)).not.toBe(valueHash('null'));
    expect(valueHash(1)).not.toBe(valueHash('1'));
    expect(valueHash(0)).toBe(valueHash(-0));
  });
});
