import * as core from '@engram/core/driver';
import type { OracleBindValue, OracleDbType } from './oracledb.ts';

/**
 * Row ⇄ record conversion, pure. Dates travel as UTC text both ways (no session time zone or
 * `TZ` shifts them) into `TIMESTAMP(3)` columns. Oracle stores `''` as NULL: a NULL `title` or
 * `message_type` reads back as `''`; `working_memory` is told apart by `working_memory_empty`.
 */

/** The `TO_TIMESTAMP` / `TO_CHAR` format matching `Date.prototype.toISOString()` without the `Z`. */
export const TIMESTAMP_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.FF3';

/**
 * The first and last instants a `TIMESTAMP(3)` column holds (years 1–9999), inclusive: core's
 * `STORED_DATES`, which it checks on every record before the driver runs.
 */
export const MIN_TIMESTAMP = Date.parse(core.STORED_DATES.min);
export const MAX_TIMESTAMP = Date.parse(core.STORED_DATES.max);

/** Text longer than this many UTF-8 bytes is bound as a temporary CLOB instead of a VARCHAR2. */
export const MAX_VARCHAR_BIND_BYTES = 4000;

/** True when `date` fits a `TIMESTAMP(3)` column as written by this adapter. */
export const isStorableDate = (date: Date) =>
  date.getTime() >= MIN_TIMESTAMP && date.getTime() <= MAX_TIMESTAMP;

/** The bind text for a date (`2024-05-01T10:20:30.123`, UTC); `INVALID_ARGUMENT` outside years 1–9999. */
export function toTimestampText(date: Date, field = 'date'): string {
  if (!isStorableDate(date)) {
    throw new core.MemoryError(
      'INVALID_ARGUMENT',
      `oracle: ${field} ${date.toISOString()} is outside the years 1–9999 an Oracle TIMESTAMP holds`,
      { adapter: 'oracle', details: { field } },
    );
  }
  return date.toISOString().slice(0, 23);
}

/** Parses the text `TO_CHAR(col, TIMESTAMP_FORMAT)` returns as a UTC instant. */
export function fromTimestampText(text: string): Date {
  const date = new Date(`${text}Z`);
  if (Number.isNaN(date.getTime())) throw new Error(`unreadable timestamp ${JSON.stringify(text)}`);
  return date;
}

/** Parses stored metadata (`__proto__` stays an own key); a NULL column (never written) is `{}`. */
export function decodeJsonObject(text: string | null): core.JsonObject {
  const value: core.JsonValue = text === null ? {} : JSON.parse(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`stored metadata is not a JSON object: ${text?.slice(0, 80)}`);
  }
  return value;
}

/**
 * A bind for text headed for a CLOB or JSON column: up to 4,000 UTF-8 bytes a VARCHAR2 bind (valid
 * anywhere in SQL); longer, a temporary CLOB, since a longer string would go as a LONG bind, which
 * Oracle refuses in expressions and `USING (SELECT … FROM dual)`. `''` and `null` bind as NULL.
 */
export function textBind(text: string | null, clobType: OracleDbType): OracleBindValue {
  if (text === null || text === '') return null;
  if (Buffer.byteLength(text, 'utf8') <= MAX_VARCHAR_BIND_BYTES) return text;
  return { val: text, type: clobType };
}

/** How a working-memory value is stored: the CLOB and the flag saying NULL means `''`. */
export function workingMemoryColumns(value: string | null): { text: string | null; empty: 0 | 1 } {
  return value === '' ? { text: null, empty: 1 } : { text: value, empty: 0 };
}

/** Reads a working-memory value back from its CLOB and flag. */
export function readWorkingMemory(text: string | null, empty: number | null): string | null {
  if (text !== null && text !== '') return text;
  return empty === 1 ? '' : null;
}

/** Rows as selected: upper-case keys, CLOBs fetched as strings, dates as UTC text. */
type Columns<Text extends string, Nullable extends string = never> = Record<Text, string> &
  Record<Nullable, string | null>;
export type ThreadRow = Columns<
  'ID' | 'RESOURCE_ID' | 'CREATED_AT_TEXT' | 'UPDATED_AT_TEXT',
  'TITLE' | 'METADATA'
>;
export type MessageRow = Columns<
  'ID' | 'THREAD_ID' | 'RESOURCE_ID' | 'MESSAGE_ROLE' | 'CONTENT' | 'CREATED_AT_TEXT',
  'MESSAGE_TYPE'
>;
export type ResourceRow = Columns<
  'ID' | 'CREATED_AT_TEXT' | 'UPDATED_AT_TEXT',
  'WORKING_MEMORY' | 'METADATA'
> & {
  WORKING_MEMORY_EMPTY: number | null;
};

/** A thread from its row; a NULL title is `''`. */
export function rowToThread(row: ThreadRow): core.Thread {
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
export function rowToMessage(row: MessageRow): core.Message {
  return {
    id: row.ID,
    threadId: row.THREAD_ID,
    resourceId: row.RESOURCE_ID,
    role: row.MESSAGE_ROLE as core.Message['role'],
    content: JSON.parse(row.CONTENT),
    type: row.MESSAGE_TYPE ?? '',
    createdAt: fromTimestampText(row.CREATED_AT_TEXT),
  };
}

/** A resource from its row; NULL working memory is `''` when the empty flag is set. */
export function rowToResource(row: ResourceRow): core.Resource {
  return {
    id: row.ID,
    workingMemory: readWorkingMemory(row.WORKING_MEMORY, row.WORKING_MEMORY_EMPTY),
    metadata: decodeJsonObject(row.METADATA),
    createdAt: fromTimestampText(row.CREATED_AT_TEXT),
    updatedAt: fromTimestampText(row.UPDATED_AT_TEXT),
  };
}
