import {
  type JsonObject,
  type JsonValue,
  MemoryError,
  type Message,
  type Resource,
  type Thread,
} from '@engram/core/adapter';
import type { OracleBindValue, OracleDbType } from './driver.ts';

/**
 * Row ⇄ record conversion. Pure functions: no driver, no connection.
 *
 * Dates travel as text in UTC (`YYYY-MM-DDTHH:MI:SS.FF3`) in both directions, so neither the
 * session time zone nor the client's `TZ` can shift them; columns are `TIMESTAMP(3)`.
 * Oracle stores `''` as NULL: `title` and `message_type` are always strings, so NULL reads back
 * as `''`; `working_memory` can be NULL or `''`, told apart by the `working_memory_empty` flag.
 */

/** The `TO_TIMESTAMP` / `TO_CHAR` format matching `Date.prototype.toISOString()` without the `Z`. */
export const TIMESTAMP_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.FF3';

/** The last instant a `TIMESTAMP(3)` column holds with a 4-digit year. */
export const MAX_TIMESTAMP = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Text longer than this many UTF-8 bytes is bound as a temporary CLOB instead of a VARCHAR2. */
export const MAX_VARCHAR_BIND_BYTES = 4000;

const ADAPTER = 'oracle';

function earliest(): number {
  const d = new Date(0);
  d.setUTCFullYear(1, 0, 1);
  return d.getTime();
}

/** Year 1, January 1st, 00:00:00.000 UTC (`Date.UTC` maps year 1 to 1901, hence the detour). */
export const MIN_TIMESTAMP = earliest();

/** True when `date` fits a `TIMESTAMP(3)` column as written by this adapter. */
export function isStorableDate(date: Date): boolean {
  const t = date.getTime();
  return t >= MIN_TIMESTAMP && t <= MAX_TIMESTAMP;
}

/**
 * The bind text for a date (`2024-05-01T10:20:30.123`, UTC). Throws `INVALID_ARGUMENT` for
 * dates outside years 1–9999, before anything reaches the database.
 */
export function toTimestampText(date: Date, field = 'date'): string {
  if (!isStorableDate(date)) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `oracle: ${field} ${date.toISOString()} is outside the years 1–9999 an Oracle TIMESTAMP holds`,
      { adapter: ADAPTER, details: { field } },
    );
  }
  return date.toISOString().slice(0, 23);
}

/** Checks every date a write will store, so a bad one fails before any connection is taken. */
export function assertStorableDates(dates: ReadonlyArray<readonly [Date | undefined, string]>): void {
  for (const [date, field] of dates) if (date !== undefined) toTimestampText(date, field);
}

/** Parses the text `TO_CHAR(col, TIMESTAMP_FORMAT)` returns as a UTC instant. */
export function fromTimestampText(text: string): Date {
  const date = new Date(`${text}Z`);
  if (Number.isNaN(date.getTime())) throw new Error(`unreadable timestamp ${JSON.stringify(text)}`);
  return date;
}

/** JSON text for a value (metadata, message content). */
export function encodeJson(value: JsonValue): string {
  return JSON.stringify(value);
}

/** Parses stored JSON text. `JSON.parse` keeps keys such as `__proto__` as own properties. */
export function decodeJson(text: string): JsonValue {
  return JSON.parse(text) as JsonValue;
}

/** Parses stored metadata; a NULL column (never written by this adapter) reads as `{}`. */
export function decodeJsonObject(text: string | null): JsonObject {
  if (text === null) return {};
  const value = decodeJson(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`stored metadata is not a JSON object: ${text.slice(0, 80)}`);
  }
  return value;
}

/**
 * A bind for text headed for a CLOB or JSON column. Up to 4,000 UTF-8 bytes it is a plain
 * string (a VARCHAR2 bind, valid anywhere in SQL); longer text is bound with the CLOB type,
 * which the driver sends as a temporary LOB, because a longer plain string would go as a LONG
 * bind, which Oracle refuses inside expressions and `USING (SELECT … FROM dual)`. `''` and
 * `null` both bind as NULL, as Oracle would store them anyway.
 */
export function textBind(text: string | null, clobType: OracleDbType): OracleBindValue {
  if (text === null || text === '') return null;
  if (Buffer.byteLength(text, 'utf8') <= MAX_VARCHAR_BIND_BYTES) return text;
  return { val: text, type: clobType };
}

/** How a working-memory value is stored: the CLOB and the flag saying NULL means `''`. */
export function workingMemoryColumns(value: string | null): { text: string | null; empty: 0 | 1 } {
  if (value === '') return { text: null, empty: 1 };
  return { text: value, empty: 0 };
}

/** Reads a working-memory value back from its CLOB and flag. */
export function readWorkingMemory(text: string | null, empty: number | null): string | null {
  if (text !== null && text !== '') return text;
  return empty === 1 ? '' : null;
}

/** A `threads` row as selected by `threadColumns` (upper-case keys, CLOBs fetched as strings). */
export interface ThreadRow {
  ID: string;
  RESOURCE_ID: string;
  TITLE: string | null;
  METADATA: string | null;
  CREATED_AT_TEXT: string;
  UPDATED_AT_TEXT: string;
}

/** A `messages` row as selected by `messageColumns`. */
export interface MessageRow {
  ID: string;
  THREAD_ID: string;
  RESOURCE_ID: string;
  MESSAGE_ROLE: string;
  MESSAGE_TYPE: string | null;
  CONTENT: string;
  CREATED_AT_TEXT: string;
}

/** A `resources` row as selected by `resourceColumns`. */
export interface ResourceRow {
  ID: string;
  WORKING_MEMORY: string | null;
  WORKING_MEMORY_EMPTY: number | null;
  METADATA: string | null;
  CREATED_AT_TEXT: string;
  UPDATED_AT_TEXT: string;
}

/** A thread from its row; a NULL title is `''`. */
export function rowToThread(row: ThreadRow): Thread {
  return {
    id: row.ID,
    resourceId: row.RESOURCE_ID,
    title: row.TITLE ?? '',
    metadata: decodeJsonObject(row.METADATA),
    createdAt: fromTimestampText(row.CREATED_AT_TEXT),
    updatedAt: fromTimestampText(row.UPDATED_AT_TEXT),
  };
}

/** A message from its row; a NULL type is `''`. */
export function rowToMessage(row: MessageRow): Message {
  return {
    id: row.ID,
    threadId: row.THREAD_ID,
    resourceId: row.RESOURCE_ID,
    role: row.MESSAGE_ROLE as Message['role'],
    content: decodeJson(row.CONTENT),
    type: row.MESSAGE_TYPE ?? '',
    createdAt: fromTimestampText(row.CREATED_AT_TEXT),
  };
}

/** A resource from its row; NULL working memory is `''` when the empty flag is set. */
export function rowToResource(row: ResourceRow): Resource {
  return {
    id: row.ID,
    workingMemory: readWorkingMemory(row.WORKING_MEMORY, row.WORKING_MEMORY_EMPTY),
    metadata: decodeJsonObject(row.METADATA),
    createdAt: fromTimestampText(row.CREATED_AT_TEXT),
    updatedAt: fromTimestampText(row.UPDATED_AT_TEXT),
  };
}
