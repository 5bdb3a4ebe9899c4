import type { SettingsDriver } from '@engram/core/driver';
import { text } from './mapping.ts';
import type { Call } from './scripts.ts';

/**
 * Settings in one hash, `<prefix>:settings`: field the key, value the JSON text core hands over.
 * Each call is one script (an `HGET`, or an `HSET` that replaces the field): atomic on the server.
 * The hash is created by the first `put`, so it needs no layout migration.
 */
export function upstashSettings(call: Call): SettingsDriver {
  return {
    get: async (key) => {
      const reply = await call('settingGet', { key });
      return reply === null ? null : text(reply);
    },
    put: async (key, json) => {
      await call('settingPut', { key, json });
    },
  };
}

/** The settings scripts' bodies, by name. */
export const SETTING_BODIES = {
  settingGet: `return frame(redis.call('HGET', K.settings(), A.key))`,
  settingPut: `redis.call('HSET', K.settings(), A.key, A.json)
return frame('ok')`,
};
