import { createRequire } from 'node:module';
import type { JsonValue } from '@engram/core';
import { describe, expect, it } from 'vitest';
import {
  decodeJsonObject,
  fromTimestampText,
  isStorableDate,
  MAX_VARCHAR_BIND_BYTES,
  type MessageRow,
  type ResourceRow,
  readWorkingMemory,
  rowToMessage,
  rowToResource,
  rowToThread,
  type ThreadRow,
  textBind,
  toTimestampText,
  workingMemoryColumns,
} from '../src/mapping.ts';
import { upsertMessage } from '../src/sql.ts';
import { dialect, message, oracledb } from './fixtures.ts';

const CLOB = oracledb.DB_TYPE_CLOB;

describe('dates', () => {
  it('round-trips milliseconds through UTC text, whatever the process time zone', () => {
    for (const iso of [
      '2024-05-01T10:20:30.123Z',
      '1970-01-01T00:00:00.000Z',
      '0001-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '2024-02-29T23:59:59.001Z',
    ]) {
      const date = new Date(iso);
      const text = toTimestampText(date);
      expect(text).toBe(iso.slice(0, 23));
      expect(fromTimestampText(text).getTime()).toBe(date.getTime());
    }
  });

  it('pads years below 1000 as TO_CHAR YYYY does', () => {
    expect(toTimestampText(new Date('0042-03-04T05:06:07.089Z'))).toBe('0042-03-04T05:06:07.089');
    expect(fromTimestampText('0042-03-04T05:06:07.089').toISOString()).toBe('0042-03-04T05:06:07.089Z');
  });

  it('rejects years outside 1-9999 with INVALID_ARGUMENT naming the field', () => {
    expect(isStorableDate(new Date('0000-12-31T23:59:59.999Z'))).toBe(false);
    expect(isStorableDate(new Date('+010000-01-01T00:00:00.000Z'))).toBe(false);
    expect(() => toTimestampText(new Date('+010000-01-01T00:00:00.000Z'), 'message.createdAt')).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('message.createdAt'),
      }),
    );
  });

  it('refuses unreadable text instead of returning an invalid Date', () => {
    expect(() => fromTimestampText('not a date')).toThrow(/unreadable timestamp/);
  });
});

describe('text binds for CLOB and JSON columns', () => {
  it("binds '' and null as NULL", () => {
    expect(textBind('', CLOB)).toBeNull();
    expect(textBind(null, CLOB)).toBeNull();
  });

  it('binds up to 4,000 UTF-8 bytes as a string and longer text as a CLOB', () => {
    const ascii = 'a'.repeat(MAX_VARCHAR_BIND_BYTES);
    expect(textBind(ascii, CLOB)).toBe(ascii);
    const over = `${ascii}b`;
    expect(textBind(over, CLOB)).toEqual({ val: over, type: CLOB });
    const emoji = '😀'.repeat(1001); // 2,002 UTF-16 units, 4,004 bytes
    expect(textBind(emoji, CLOB)).toEqual({ val: emoji, type: CLOB });
  });
});

describe("working memory: '' versus NULL", () => {
  it("stores '' as NULL plus a flag, and reads each form back", () => {
    expect(workingMemoryColumns('')).toEqual({ text: null, empty: 1 });
    expect(workingMemoryColumns(null)).toEqual({ text: null, empty: 0 });
    expect(workingMemoryColumns('x')).toEqual({ text: 'x', empty: 0 });
    for (const value of ['', null, 'x', '# User\n- Name: Ada\n']) {
      const { text, empty } = workingMemoryColumns(value);
      expect(readWorkingMemory(text, empty)).toBe(value);
    }
  });

  it('reads a NULL flag (a row written before the flag existed) as null', () => {
    expect(readWorkingMemory(null, null)).toBeNull();
  });
});

describe('JSON values', () => {
  it('round-trips any JSON value deep-equal as message content, including scalars at the top', () => {
    const values: JsonValue[] = [
      'hello',
      '',
      0,
      -1.5e-300,
      1.7976931348623157e308,
      true,
      null,
      [],
      {
        format: 2,
        parts: [
          { type: 'text', text: 'hi ☃ 😀' },
          { type: 'tool-call', args: { a: [1, null] } },
        ],
      },
      { nested: { deep: { deeper: [[], {}, ''] } } },
    ];
    const row: MessageRow = {
      ID: 'm1',
      THREAD_ID: 't1',
      RESOURCE_ID: 'r1',
      MESSAGE_ROLE: 'user',
      MESSAGE_TYPE: null,
      CONTENT: '',
      CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
    };
    for (const value of values) {
      const bound = upsertMessage(dialect(), message({ content: value })).binds.content as string;
      expect(rowToMessage({ ...row, CONTENT: bound }).content).toEqual(value);
    }
  });

  it('keeps a __proto__ key as data, never as a prototype', () => {
    const parsed = decodeJsonObject('{"__proto__":{"polluted":true},"a":1}');
    expect(Object.keys(parsed)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads NULL metadata as {} and refuses metadata that is not an object', () => {
    expect(decodeJsonObject(null)).toEqual({});
    expect(() => decodeJsonObject('[1]')).toThrow(/not a JSON object/);
    expect(() => decodeJsonObject('"x"')).toThrow(/not a JSON object/);
  });
});

describe('rows to records', () => {
  it('maps a thread row, turning a NULL title into the empty string', () => {
    const row: ThreadRow = {
      ID: 't1',
      RESOURCE_ID: 'r1',
      TITLE: null,
      METADATA: '{"workingMemory":"","tags":["a"]}',
      CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
      UPDATED_AT_TEXT: '2024-05-01T10:20:31.000',
    };
    expect(rowToThread(row)).toEqual({
      id: 't1',
      resourceId: 'r1',
      title: '',
      metadata: { workingMemory: '', tags: ['a'] },
      createdAt: new Date('2024-05-01T10:20:30.123Z'),
      updatedAt: new Date('2024-05-01T10:20:31.000Z'),
    });
    expect(rowToThread({ ...row, TITLE: 'T' }).title).toBe('T');
  });

  it('maps a message row, parsing CLOB content and turning a NULL type into the empty string', () => {
    const row: MessageRow = {
      ID: 'm1',
      THREAD_ID: 't1',
      RESOURCE_ID: 'r1',
      MESSAGE_ROLE: 'assistant',
      MESSAGE_TYPE: null,
      CONTENT: '{"format":2,"parts":[{"type":"text","text":"hi"}]}',
      CREATED_AT_TEXT: '2024-05-01T10:20:30.007',
    };
    const m = rowToMessage(row);
    expect(m).toEqual({
      id: 'm1',
      threadId: 't1',
      resourceId: 'r1',
      role: 'assistant',
      content: { format: 2, parts: [{ type: 'text', text: 'hi' }] },
      type: '',
      createdAt: new Date('2024-05-01T10:20:30.007Z'),
    });
    expect(rowToMessage({ ...row, CONTENT: '""', MESSAGE_TYPE: 'v2' })).toMatchObject({
      content: '',
      type: 'v2',
    });
  });

  it('maps a resource row through the empty flag', () => {
    const row: ResourceRow = {
      ID: 'r1',
      WORKING_MEMORY: null,
      WORKING_MEMORY_EMPTY: 1,
      METADATA: '{}',
      CREATED_AT_TEXT: '2024-05-01T10:20:30.123',
      UPDATED_AT_TEXT: '2024-05-01T10:20:30.123',
    };
    expect(rowToResource(row).workingMemory).toBe('');
    expect(rowToResource({ ...row, WORKING_MEMORY_EMPTY: 0 }).workingMemory).toBeNull();
    expect(rowToResource({ ...row, WORKING_MEMORY: 'm', WORKING_MEMORY_EMPTY: 0 })).toEqual({
      id: 'r1',
      workingMemory: 'm',
      metadata: {},
      createdAt: new Date('2024-05-01T10:20:30.123Z'),
      updatedAt: new Date('2024-05-01T10:20:30.123Z'),
    });
  });
});

describe('why JSON travels as text, not as driver-encoded OSON', () => {
  const require = createRequire(import.meta.url);
  const { OsonEncoder, OsonDecoder } = require('oracledb/lib/impl/datahandlers/oson.js') as {
    OsonEncoder: new () => { encode(value: unknown, maxFieldNameSize: number): Buffer };
    OsonDecoder: new (buf: Buffer) => { decode(): Record<string, unknown> };
  };
  const { transformJsonValue } = require('oracledb/lib/transformer.js') as {
    transformJsonValue(value: unknown): unknown;
  };

  it('the driver OSON round trip turns a __proto__ key into a prototype; text keeps it as data', () => {
    const text = '{"__proto__":{"polluted":true},"a":1}';
    const viaDriver = new OsonDecoder(
      new OsonEncoder().encode(transformJsonValue(JSON.parse(text)), 65535),
    ).decode();
    expect(Object.keys(viaDriver)).toEqual(['a']); // the key is lost…
    expect(Object.getPrototypeOf(viaDriver)).not.toBe(Object.prototype); // …and became the prototype
    const viaText = decodeJsonObject(JSON.stringify(JSON.parse(text)));
    expect(Object.keys(viaText)).toEqual(['__proto__', 'a']);
  });
});
