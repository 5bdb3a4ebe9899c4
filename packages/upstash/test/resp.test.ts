import { describe, expect, it } from 'vitest';
import { encodeCommand, type Reply, ReplyParser } from '../src/bridge/resp.ts';
import { encode } from '../src/bridge/server.ts';

const wire = Buffer.from(
  [
    '+OK',
    '+QUEUED',
    '-ERR value is not an integer or out of range',
    ':42',
    ':-7',
    '$5',
    'héll', // 5 bytes in UTF-8
    '$0',
    '',
    '$-1',
    '*-1',
    '*0',
    '*3',
    '$1',
    'a',
    '*2',
    ':1',
    '$-1',
    '-WRONGTYPE nested',
    '$4',
    'a\r\nb', // a bulk string may hold CRLF
    '',
  ].join('\r\n'),
);

const expected: Reply[] = [
  { kind: 'status', value: 'OK' },
  { kind: 'status', value: 'QUEUED' },
  { kind: 'error', message: 'ERR value is not an integer or out of range' },
  42,
  -7,
  Buffer.from('héll'),
  Buffer.alloc(0),
  null,
  null,
  [],
  [Buffer.from('a'), [1, null], { kind: 'error', message: 'WRONGTYPE nested' }],
  Buffer.from('a\r\nb'),
];

describe('RESP codec of the bridge', () => {
  it('parses every reply type, whole or split at any byte', () => {
    const whole = new ReplyParser();
    whole.push(wire);
    expect(whole.drain()).toEqual(expected);
    for (let cut = 1; cut < wire.length; cut++) {
      const parser = new ReplyParser();
      parser.push(wire.subarray(0, cut));
      const first = parser.drain();
      parser.push(wire.subarray(cut));
      expect([...first, ...parser.drain()]).toEqual(expected);
    }
    const bytewise = new ReplyParser();
    const got: Reply[] = [];
    for (const byte of wire) {
      bytewise.push(Buffer.from([byte]));
      got.push(...bytewise.drain());
    }
    expect(got).toEqual(expected);
  });

  it('encodes commands as arrays of bulk strings, counting bytes not characters', () => {
    expect(encodeCommand(['SET', 'k', 'é✓']).toString()).toBe('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\né✓\r\n');
    expect(encodeCommand(['ECHO', '']).toString()).toBe('*2\r\n$4\r\nECHO\r\n$0\r\n\r\n');
  });

  it('encodes replies like Upstash: base64 except OK, numbers and nil as JSON', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect(encode({ kind: 'status', value: 'OK' }, true)).toBe('OK');
    expect(encode({ kind: 'status', value: 'PONG' }, true)).toBe(b64('PONG'));
    expect(encode(Buffer.from('ünï'), true)).toBe(b64('ünï'));
    expect(encode(Buffer.from('ünï'), false)).toBe('ünï');
    expect(encode([Buffer.from('a'), 3, null, [Buffer.from('b')]], true)).toEqual([
      b64('a'),
      3,
      null,
      [b64('b')],
    ]);
  });
});
