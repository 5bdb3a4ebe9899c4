import type { SettingsDriver } from '@engram/core/driver';
import type { Connection } from './connection.ts';
import { timestamp } from './mapping.ts';
import type { Names } from './sql.ts';

/**
 * Settings in `<prefix>settings`, one `jsonb` row per key. Each call is one statement (an upsert
 * for `put`): no transaction, no session state, so it is safe behind PgBouncer in transaction
 * mode. The value is read back as text, which core parses (jsonb may reorder an object's keys).
 */
export class PostgresSettingsDriver implements SettingsDriver {
  private readonly select: string;
  private readonly upsert: string;

  constructor(
    private readonly db: Connection,
    n: Names,
  ) {
    this.select = `SELECT value::text AS value FROM ${n.settings} WHERE key = $1`;
    this.upsert = `INSERT INTO ${n.settings} (key, value, updated_at) VALUES ($1, $2::jsonb, $3)
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`;
  }

  async get(key: string): Promise<string | null> {
    const [row] = await this.db.query<{ value: string }>(this.select, [key], true);
    return row ? row.value : null;
  }

  async put(key: string, json: string, updatedAt: Date): Promise<void> {
    await this.db.query(this.upsert, [key, json, timestamp(updatedAt)], true);
  }
}
