import type { SettingsDriver } from '@engram/core/driver';
import type { Connection } from './connection.ts';
import { TABLES } from './sql.ts';

const { settings } = TABLES;

/** Settings in `engram_settings`: the JSON text core hands over, one row per key, upserted. */
export class LibSQLSettings implements SettingsDriver {
  constructor(private readonly connection: Connection) {}

  async get(key: string): Promise<string | null> {
    const { rows } = await this.connection.use((client) =>
      client.execute({ sql: `SELECT value FROM ${settings} WHERE key = ?`, args: [key], one: true }),
    );
    return rows[0] ? String(rows[0].value) : null;
  }

  async put(key: string, json: string, updatedAt: Date): Promise<void> {
    await this.connection.use((client) =>
      client.execute({
        sql: `INSERT INTO ${settings} (key, value, updated_at) VALUES (?, ?, ?)
          ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
        args: [key, json, updatedAt.getTime()],
      }),
    );
  }
}
