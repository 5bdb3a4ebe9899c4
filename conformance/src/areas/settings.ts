import { capabilitiesOf, type MemoryStorage, type SettingsStore } from '@engram/core';
import { expectEqual, expectRejects } from '../assert.ts';
import { defineArea } from '../define.ts';
import { skipCheck } from '../skip.ts';

const check = defineArea('settings');

/** Name suffix of checks that apply only to stores declaring `settings`. */
export const NEEDS_SETTINGS = ' [needs settings]';

function settingsOf(store: MemoryStorage): SettingsStore {
  if (!store.settings) skipCheck(`${store.name} declares no settings (no recorded memory configuration)`);
  return store.settings;
}

/** A value with what JSON columns and documents handle differently: nesting, unicode, numbers. */
const VALUE = {
  mode: 'schema',
  nested: { list: [1, 2.5, -0.125, 1e21, null, true, 'x'], empty: {}, none: [] },
  text: 'Dates 📅 — “quoted” <tag/> \t\r\n é 中文 \u{10FFFF} \\u0000 $where . a.b',
  $dollar: 'a key starting with $',
  'dotted.key': 1,
  __proto__x: 'not the prototype',
};

/** The settings domain: store-level named JSON objects (`Memory`'s recorded configuration). */
export const settingsChecks = [
  check(`a value round-trips; an unknown key is null${NEEDS_SETTINGS}`, async (ctx) => {
    const settings = settingsOf(await ctx.store());
    const key = ctx.id('setting');
    expectEqual(await settings.get(key), null, 'a key never written');
    await settings.put(key, VALUE);
    expectEqual(await settings.get(key), VALUE, 'the value read back');
    expectEqual(await settings.get(`${key}-other`), null, 'another key');
  }),

  check(`put replaces the whole value${NEEDS_SETTINGS}`, async (ctx) => {
    const settings = settingsOf(await ctx.store());
    const key = ctx.id('setting');
    await settings.put(key, { a: 1, b: { c: 2 } });
    await settings.put(key, { b: { d: 3 } });
    expectEqual(await settings.get(key), { b: { d: 3 } }, 'the second value, not a merge');
  }),

  check(`a bad key or value is INVALID_ARGUMENT and stores nothing${NEEDS_SETTINGS}`, async (ctx) => {
    const settings = settingsOf(await ctx.store());
    const key = ctx.id('setting');
    const fresh = ctx.id('setting');
    await settings.put(key, { kept: true });
    const badKeys: unknown[] = ['', 'x'.repeat(513), `${key}\u0000`, `${key}\uD800`, 42, null, undefined];
    for (const bad of badKeys) {
      await expectRejects(
        () => settings.put(bad as string, { a: 1 }),
        ['INVALID_ARGUMENT'],
        `put under the key ${JSON.stringify(bad)}`,
      );
      await expectRejects(
        () => settings.get(bad as string),
        ['INVALID_ARGUMENT'],
        `get of ${JSON.stringify(bad)}`,
      );
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const badValues: unknown[] = [
      null,
      [1],
      'text',
      3,
      { a: undefined },
      { a: Number.NaN },
      { a: 'nul \u0000' },
      new Date(),
      cycle,
    ];
    for (const [i, bad] of badValues.entries()) {
      await expectRejects(() => settings.put(key, bad as never), ['INVALID_ARGUMENT'], `bad value #${i}`);
      await expectRejects(() => settings.put(fresh, bad as never), ['INVALID_ARGUMENT'], `bad value #${i}`);
    }
    expectEqual(await settings.get(key), { kept: true }, 'the value before the refusals');
    expectEqual(await settings.get(fresh), null, 'a key only refused values were put under');
  }),

  check(
    `hostile keys round-trip and stay apart; 512 characters is the longest key${NEEDS_SETTINGS}`,
    async (ctx) => {
      const settings = settingsOf(await ctx.store());
      const base = ctx.id('s');
      const keys = [
        '__proto__',
        'constructor',
        `${base}'`,
        `${base}"`,
        `${base}\\`,
        `${base}%_*`,
        `${base} with space`,
        `${base}😀 中文 é`,
        `${base}:settings`,
        `${base}.$x`,
        `${base}${'x'.repeat(500 - base.length)}`,
        `${base}${'y'.repeat(512 - base.length)}`,
      ];
      for (const [i, key] of keys.entries()) await settings.put(key, { i, key });
      for (const [i, key] of keys.entries()) expectEqual(await settings.get(key), { i, key }, `key #${i}`);
      await expectRejects(
        () => settings.put(`${base}${'z'.repeat(513 - base.length)}`, { i: -1 }),
        ['INVALID_ARGUMENT'],
        'a 513-character key',
      );
    },
  ),

  check(`two stores on one database see each other's writes${NEEDS_SETTINGS}`, async (ctx) => {
    const a = await ctx.store();
    const settingsA = settingsOf(a);
    if (capabilitiesOf(a).processLocal)
      skipCheck(`${a.name} is processLocal: each instance has its own data`);
    const settingsB = settingsOf(await ctx.store());
    const key = ctx.id('setting');
    await settingsA.put(key, { from: 'a' });
    expectEqual(await settingsB.get(key), { from: 'a' }, 'the second store reads the first one’s write');
    await settingsB.put(key, { from: 'b' });
    expectEqual(await settingsA.get(key), { from: 'b' }, 'the first store reads the second one’s upsert');
  }),
];
