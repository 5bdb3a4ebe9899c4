import type { SettingsDriver } from '@engram/core/driver';
import type { Connection } from './driver.ts';
import { isDuplicateKey } from './errors.ts';

/**
 * Settings in `<prefix>settings`, one document per key: `_id` the key, `value` the JSON text core
 * hands over (a string, so keys such as `$ref` or `a.b` inside the value need no encoding),
 * `updatedAt`. `put` is one replace by `_id` with upsert; two first puts of one key racing may
 * both try the insert, and the loser replaces the winner's document instead (last write wins).
 */
export function settingsDriver(c: Connection): SettingsDriver {
  const docs = () => c.collections.settings;
  return {
    get: async (key) => (await docs().findOne({ _id: key }))?.value ?? null,
    put: async (key, json, updatedAt) => {
      const doc = { value: json, updatedAt };
      try {
        await docs().replaceOne({ _id: key }, doc, { upsert: true });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        await docs().replaceOne({ _id: key }, doc);
      }
    },
  };
}
