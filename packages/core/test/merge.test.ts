import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isMemoryError, type JsonObject, type JsonValue, mergeWorkingMemory } from '../src/index.ts';

type Case = [name: string, stored: string | null | JsonValue, patch: unknown, expected: JsonObject];

const cases: Case[] = [
  ['first write into null', null, { name: 'Sam' }, { name: 'Sam' }],
  ['first write into empty string', '', { name: 'Sam' }, { name: 'Sam' }],
  ['adds a key, keeps the others', '{"name":"Sam"}', { city: 'Berlin' }, { name: 'Sam', city: 'Berlin' }],
  ['replaces a scalar', '{"name":"Sam"}', { name: 'Alex' }, { name: 'Alex' }],
  ['null deletes a top-level key', '{"name":"Sam","city":"Berlin"}', { city: null }, { name: 'Sam' }],
  ['null deletes at depth', { a: { b: { c: 1, d: 2 } } }, { a: { b: { c: null } } }, { a: { b: { d: 2 } } }],
  ['null for an absent key is a no-op', '{"a":1}', { b: null }, { a: 1 }],
  ['null on the first write is not stored', null, { a: null, b: 1 }, { b: 1 }],
  [
    'null inside a newly created nested object is not stored',
    '{"a":1}',
    { p: { x: null, y: { z: null, w: 2 } } },
    { a: 1, p: { y: { w: 2 } } },
  ],
  [
    'objects merge deeply',
    { prefs: { tone: 'formal', lang: 'en' } },
    { prefs: { lang: 'de' } },
    { prefs: { tone: 'formal', lang: 'de' } },
  ],
  ['arrays replace whole', { tags: ['a', 'b', 'c'] }, { tags: ['z'] }, { tags: ['z'] }],
  ['an empty array replaces', { tags: ['a'] }, { tags: [] }, { tags: [] }],
  ['arrays of objects replace, not merge', { xs: [{ a: 1 }] }, { xs: [{ b: 2 }] }, { xs: [{ b: 2 }] }],
  ['nulls inside arrays are array elements', {}, { xs: [null, 1] }, { xs: [null, 1] }],
  ['type swap: object → string', { a: { b: 1 } }, { a: 'flat' }, { a: 'flat' }],
  ['type swap: string → object', { a: 'flat' }, { a: { b: 1 } }, { a: { b: 1 } }],
  ['type swap: array → object', { a: [1, 2] }, { a: { b: 1 } }, { a: { b: 1 } }],
  ['type swap: object → array', { a: { b: 1 } }, { a: [1] }, { a: [1] }],
  ['type swap: number → boolean', { a: 1 }, { a: false }, { a: false }],
  ['stored Markdown counts as {}', '# User\n- Name: Sam', { name: 'Sam' }, { name: 'Sam' }],
  ['stored JSON array counts as {}', '[1,2]', { a: 1 }, { a: 1 }],
  ['stored JSON number counts as {}', '42', { a: 1 }, { a: 1 }],
  ['stored JSON null string counts as {}', 'null', { a: 1 }, { a: 1 }],
  ['stored non-object JsonValue counts as {}', [1, 2, 3], { a: 1 }, { a: 1 }],
  ['a string patch holding an object', '{"a":1}', '{"b":{"c":2}}', { a: 1, b: { c: 2 } }],
  ['an empty patch changes nothing', '{"a":{"b":1}}', {}, { a: { b: 1 } }],
  ['an empty nested object creates an empty object', {}, { a: {} }, { a: {} }],
  ['an empty nested object keeps an existing object', { a: { b: 1 } }, { a: {} }, { a: { b: 1 } }],
  [
    'a null member already stored is dropped',
    '{"a":null,"b":{"c":null,"d":1}}',
    { e: 1 },
    { b: { d: 1 }, e: 1 },
  ],
  ['deleting the last key leaves an empty object', { a: { b: 1 } }, { a: { b: null } }, { a: {} }],
  ['unicode keys and values', { 名前: 'サム' }, { 'emoji🙂': '✓' }, { 名前: 'サム', 'emoji🙂': '✓' }],
  ['zero, false and empty string are kept', {}, { n: 0, f: false, s: '' }, { n: 0, f: false, s: '' }],
];

describe('mergeWorkingMemory (table)', () => {
  it('has at least 25 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(25);
  });

  it.each(cases)('%s', (_name, stored, patch, expected) => {
    const storedCopy = structuredClone(stored);
    const patchCopy = structuredClone(patch);
    const result = mergeWorkingMemory(stored, patch);
    expect(result).toStrictEqual(expected);
    expect(JSON.stringify(result)).not.toBe(undefined);
    // inputs are never mutated
    expect(stored).toStrictEqual(storedCopy);
    expect(patch).toStrictEqual(patchCopy);
  });

  it('never shares objects with its inputs', () => {
    const stored: JsonObject = { keep: { deep: [1, { x: 1 }] } };
    const patch = { added: { list: [{ y: 2 }] } };
    const result = mergeWorkingMemory(stored, patch);
    expect(result.keep).not.toBe(stored.keep);
    expect(result.added).not.toBe(patch.added);
    (result.added as { list: JsonObject[] }).list[0]!.y = 3;
    (result.keep as { deep: JsonValue[] }).deep.push(9);
    expect(patch.added.list[0]!.y).toBe(2);
    expect(stored).toStrictEqual({ keep: { deep: [1, { x: 1 }] } });
  });

  const invalidPatches: [string, unknown][] = [
    ['null', null],
    ['a number', 42],
    ['an array', [{ a: 1 }]],
    ['a boolean', true],
    ['undefined', undefined],
    ['a string that is not JSON', 'name: Sam'],
    ['a string holding an array', '[1,2]'],
    ['a string holding null', 'null'],
    ['a Date', new Date()],
    ['a class instance', new (class Patch {})()],
    ['a Map', new Map([['a', 1]])],
    ['an object holding a function', { a: () => 1 }],
    ['an object holding undefined', { a: undefined }],
    ['an object holding NaN', { a: Number.NaN }],
    ['an object holding a Date', { a: { when: new Date() } }],
  ];

  it.each(invalidPatches)('rejects %s as a patch with INVALID_ARGUMENT', (_name, patch) => {
    let error: unknown;
    try {
      mergeWorkingMemory('{"a":1}', patch);
    } catch (e) {
      error = e;
    }
    expect(isMemoryError(error, 'INVALID_ARGUMENT')).toBe(true);
  });
});

describe('mergeWorkingMemory (prototype safety)', () => {
  const keys = ['__proto__', 'constructor', 'prototype'];

  it.each(keys)('a %s key in a JSON string patch stays an own data key', (key) => {
    const patch = `{"${key}":{"polluted":true},"nested":{"${key}":{"polluted":true}}}`;
    const result = mergeWorkingMemory(null, patch);
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(result.nested)).toBe(Object.prototype);
    expect(Object.hasOwn(result, key)).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(result)).toBe(JSON.stringify(JSON.parse(patch)));
  });

  it.each(keys)('a %s key in the stored value merges as data, never through the prototype', (key) => {
    const stored = `{"${key}":{"a":1}}`;
    const result = mergeWorkingMemory(stored, `{"${key}":{"b":2}}`);
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(JSON.stringify(result)).toBe(`{"${key}":{"a":1,"b":2}}`);
    expect(({} as Record<string, unknown>).b).toBeUndefined();
  });

  it('merging into constructor/prototype does not read inherited members', () => {
    // with no own `constructor`, the stored side counts as absent, not Object
    const result = mergeWorkingMemory({}, JSON.parse('{"constructor":{"prototype":{"x":1}}}'));
    expect(JSON.stringify(result)).toBe('{"constructor":{"prototype":{"x":1}}}');
    expect((Object as unknown as Record<string, unknown>).x).toBeUndefined();
    expect(typeof Object.prototype.constructor).toBe('function');
  });

  it('deleting __proto__ with null removes only the own key', () => {
    const result = mergeWorkingMemory('{"__proto__":{"a":1},"b":1}', '{"__proto__":null}');
    expect(JSON.stringify(result)).toBe('{"b":1}');
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
  });

  it('an object literal whose prototype was set via __proto__ is refused', () => {
    const sneaky = { __proto__: { polluted: true } };
    expect(() => mergeWorkingMemory(null, sneaky)).toThrow(/JSON object/);
  });
});

// ── properties ───────────────────────────────────────────────────────────────────────────────

const key = fc.oneof(
  fc.constantFrom('a', 'b', 'c', 'name', '__proto__', 'constructor', 'prototype'),
  fc.string({ maxLength: 4 }),
);
const scalar = fc.oneof(
  fc.string({ maxLength: 5 }),
  fc.integer(),
  fc.boolean(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** JSON values built with own keys only (JSON.parse of generated text keeps __proto__ as data). */
const jsonWith = (allowNull: boolean) =>
  fc.letrec<{ value: JsonValue; object: JsonObject }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      allowNull ? fc.oneof(scalar, fc.constant(null)) : scalar,
      fc.array(tie('value'), { maxLength: 3 }),
      tie('object'),
    ),
    object: fc
      .array(fc.tuple(key, tie('value')), { maxLength: 4 })
      .map((entries) =>
        JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`),
      ),
  })).object;

const storedDoc = jsonWith(false);
const storedDocWithNulls = jsonWith(true);
const patchDoc = jsonWith(true);

/** True when no object member (outside arrays) is null. */
function noNullMembers(value: JsonValue): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return true;
  return Object.values(value).every((v) => v !== null && noNullMembers(v));
}

/** An independent reference implementation: the rules written as plainly as possible. */
function referenceMerge(stored: JsonObject, patch: JsonObject): JsonObject {
  const out = JSON.parse(JSON.stringify(stored)) as JsonObject;
  const strip = (o: JsonObject) => {
    for (const k of Object.keys(o)) {
      const v = o[k];
      if (v === null) delete o[k];
      else if (v && typeof v === 'object' && !Array.isArray(v)) strip(v);
    }
  };
  strip(out);
  const apply = (target: JsonObject, p: JsonObject) => {
    for (const k of Object.keys(p)) {
      const v = p[k] as JsonValue;
      if (v === null) delete target[k];
      else if (typeof v === 'object' && !Array.isArray(v)) {
        const cur = Object.hasOwn(target, k) ? target[k] : undefined;
        const next = cur && typeof cur === 'object' && !Array.isArray(cur) ? cur : {};
        Object.defineProperty(target, k, {
          value: next,
          enumerable: true,
          writable: true,
          configurable: true,
        });
        apply(next, v);
      } else {
        Object.defineProperty(target, k, {
          value: JSON.parse(JSON.stringify(v)),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
  };
  apply(out, patch);
  return out;
}

describe('mergeWorkingMemory (properties)', () => {
  it('merging the same patch twice equals merging it once', () => {
    fc.assert(
      fc.property(storedDocWithNulls, patchDoc, (stored, patch) => {
        const once = mergeWorkingMemory(stored, patch);
        const twice = mergeWorkingMemory(once, patch);
        expect(JSON.stringify(twice)).toBe(JSON.stringify(once));
      }),
      { numRuns: 300 },
    );
  });

  it('no null member ever survives a merge', () => {
    fc.assert(
      fc.property(storedDocWithNulls, patchDoc, (stored, patch) => {
        expect(noNullMembers(mergeWorkingMemory(stored, patch))).toBe(true);
        expect(noNullMembers(mergeWorkingMemory(JSON.stringify(stored), JSON.stringify(patch)))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('keys absent from the patch are unchanged', () => {
    fc.assert(
      fc.property(storedDoc, patchDoc, (stored, patch) => {
        const merged = mergeWorkingMemory(stored, patch);
        for (const k of Object.keys(stored)) {
          if (Object.hasOwn(patch, k)) continue;
          expect(Object.hasOwn(merged, k)).toBe(true);
          expect(JSON.stringify(merged[k])).toBe(JSON.stringify(stored[k]));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with a plain reference implementation and never mutates inputs', () => {
    fc.assert(
      fc.property(storedDocWithNulls, patchDoc, (stored, patch) => {
        const before = [JSON.stringify(stored), JSON.stringify(patch)];
        const merged = mergeWorkingMemory(stored, patch);
        expect(JSON.stringify(merged)).toBe(JSON.stringify(referenceMerge(stored, patch)));
        expect([JSON.stringify(stored), JSON.stringify(patch)]).toStrictEqual(before);
      }),
      { numRuns: 300 },
    );
  });

  it('never touches Object.prototype', () => {
    fc.assert(
      fc.property(storedDocWithNulls, patchDoc, (stored, patch) => {
        mergeWorkingMemory(JSON.stringify(stored), JSON.stringify(patch));
        expect(Object.getOwnPropertyNames(Object.prototype).sort()).toStrictEqual(protoNames);
      }),
      { numRuns: 200 },
    );
  });
});

const protoNames = Object.getOwnPropertyNames(Object.prototype).sort();
