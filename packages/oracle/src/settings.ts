import type * as core from '@engram/core/driver';
import type { OracleDriver } from './driver.ts';
import { textBind, toTimestampText } from './mapping.ts';
import { type Dialect, type Statement, timestampBind } from './sql.ts';

/**
 * Settings in `<prefix>settings`, one row per key: the JSON text core hands over, stored like
 * metadata (the `JSON` type on 21c+, else a CLOB checked `IS JSON`; a VARCHAR2 bind up to 4,000
 * bytes, a CLOB bind past it). `put` is one `MERGE` in its
 * own transaction, run again when a concurrent session inserted the same key first (ORA-00001).
 */
export function oracleSettings(driver: OracleDriver): core.SettingsDriver {
  return {
    get: async (key) => {
      const [row] = await driver.read((s) =>
        s.rows<{ SETTING_VALUE: string }>(selectSetting(driver.dialect, key)),
      );
      return row ? row.SETTING_VALUE : null;
    },
    put: async (key, json, updatedAt) => {
      await driver.write((s) => s.upsert(mergeSetting(driver.dialect, key, json, updatedAt)));
    },
  };
}

/**
 * The JSON text of one setting, serialised on the server whatever the column's type: the column
 * follows the storage preferred when migration 4 ran, which may differ from the metadata's (a
 * 19c schema upgraded on 21c), and `JSON_SERIALIZE` reads text and the `JSON` type alike (19c+).
 */
export function selectSetting(d: Dialect, key: string): Statement {
  return {
    sql: `SELECT JSON_SERIALIZE(setting_value RETURNING CLOB) AS setting_value FROM ${d.names.settings} WHERE setting_key = :setting_key`,
    binds: { setting_key: key },
  };
}

/** Inserts the setting or replaces its value and `updated_at`. */
export function mergeSetting(d: Dialect, key: string, json: string, updatedAt: Date): Statement {
  return {
    sql: `MERGE INTO ${d.names.settings} t
USING (SELECT :setting_key AS setting_key FROM dual) s
ON (t.setting_key = s.setting_key)
WHEN MATCHED THEN UPDATE SET t.setting_value = :setting_value, t.updated_at = ${timestampBind('updated_at')}
WHEN NOT MATCHED THEN INSERT (setting_key, setting_value, updated_at)
  VALUES (s.setting_key, :setting_value, ${timestampBind('updated_at')})`,
    binds: {
      setting_key: key,
      setting_value: textBind(json, d.clobType),
      updated_at: toTimestampText(updatedAt),
    },
  };
}
