import { MemoryError } from '../errors.ts';
import type { DomainRunner } from './domains.ts';
import type { JsonObject } from './records.ts';
import { assertJsonObject, assertText, describe } from './validate.ts';

/**
 * The settings domain a store may declare (`MemoryStorage.settings`): a few named JSON objects
 * kept for the whole store, such as the memory configuration `Memory` records so that tools
 * reading the store (the inspector) render what the agent gets. Settings belong to the store, not
 * to a resource: `deleteResource`, export and import leave them alone.
 *
 * Rules every implementation keeps:
 * - `put` is one upsert: the key holds exactly the last value written, whichever store wrote it.
 * - The value is stored as the JSON text core hands over and read back as the same object.
 */
export interface SettingsStore {
  /** The object stored under `key`, or `null` when none was written. */
  get(key: string): Promise<JsonObject | null>;
  /** Stores `value` under `key`, replacing what was there. */
  put(key: string, value: JsonObject): Promise<void>;
}

/**
 * The settings domain of a driver: keys and values are validated by core, and a value arrives as
 * JSON text (an object), so the driver stores and returns text without parsing it.
 */
export interface SettingsDriver {
  /** The JSON text stored under `key`, or `null`. */
  get(key: string): Promise<string | null>;
  /** Stores `json` under `key` atomically, replacing what was there; `updatedAt`: the time of the call. */
  put(key: string, json: string, updatedAt: Date): Promise<void>;
}

/** Longest setting key (characters). */
export const MAX_SETTING_KEY = 512;
/** Longest serialised setting value (characters of JSON). */
export const MAX_SETTING_VALUE = 1_000_000;

/** A NUL inside a JSON string (an odd run of backslashes before `u0000`): jsonb refuses it. */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message, { details: { domain: 'settings' } });
}

function assertKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0)
    throw invalid(`a setting key must be a non-empty string, got ${describe(key)}`);
  if (key.length > MAX_SETTING_KEY)
    throw invalid(`a setting key is at most ${MAX_SETTING_KEY} characters, got ${key.length}`);
  assertText(key, 'the setting key', true);
}

/** The store's `settings`: validates the key and value once, then calls the driver. */
export class ValidatedSettings implements SettingsStore {
  constructor(
    private readonly driver: SettingsDriver,
    private readonly run: DomainRunner,
  ) {}

  async get(key: string): Promise<JsonObject | null> {
    assertKey(key);
    const json = await this.run('settings.get', () => this.driver.get(key));
    return json === null ? null : (JSON.parse(json) as JsonObject);
  }

  async put(key: string, value: JsonObject): Promise<void> {
    assertKey(key);
    assertJsonObject(value, 'the setting value');
    const json = JSON.stringify(value);
    if (json.length > MAX_SETTING_VALUE)
      throw invalid(`a setting value is at most ${MAX_SETTING_VALUE} characters of JSON, got ${json.length}`);
    if (NUL_ESCAPE.test(json)) throw invalid('a setting value may not hold a NUL character (U+0000)');
    await this.run('settings.put', () => this.driver.put(key, json, new Date()));
  }
}
