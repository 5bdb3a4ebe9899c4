import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createErrorMapper, MemoryError, redactCredentials, redactDriverError } from '../src/driver.ts';

const SECRET = 'pw-S3cr3t';

describe('redactCredentials', () => {
  it.each([
    [`postgres://user:${SECRET}@db.example:5432/app`, 'postgres://user:***@db.example:5432/app'],
    [`mongodb+srv://app:${SECRET}@cluster0.example/db`, 'mongodb+srv://app:***@cluster0.example/db'],
    [
      `mongodb://app:${SECRET}@h1:27017,h2:27017/db?replicaSet=rs0`,
      'mongodb://app:***@h1:27017,h2:27017/db?replicaSet=rs0',
    ],
    [`https://:${SECRET}@host/pipeline`, 'https://:***@host/pipeline'],
    [`oracle://scott:${SECRET}@host:1521/FREEPDB1`, 'oracle://scott:***@host:1521/FREEPDB1'],
    [`libsql://db.example?authToken=${SECRET}&tls=1`, 'libsql://db.example?authToken=***&tls=1'],
    [`https://x.example/?token=${SECRET}#top`, 'https://x.example/?token=***#top'],
    [`host=db password=${SECRET} user=app`, 'host=db password=*** user=app'],
    [`Authorization: Bearer ${SECRET}`, 'Authorization: Bearer ***'],
    [`failed for https://u:${SECRET}@h:1/p: "url"`, 'failed for https://u:***@h:1/p: "url"'],
  ])('%s', (text, expected) => {
    expect(redactCredentials(text)).toBe(expected);
  });

  it('keeps URLs without credentials and removes every given secret', () => {
    const plain = 'connect ECONNREFUSED 127.0.0.1:5432 (postgres://app@db:5432/app, mongodb://h1:1,h2:2/db)';
    expect(redactCredentials(plain)).toBe(plain);
    expect(redactCredentials(`token ${SECRET} refused; ${SECRET}`, [SECRET])).toBe('token *** refused; ***');
  });
});

describe('credentials never reach an error', () => {
  it('MemoryError redacts its own message', () => {
    const error = new MemoryError('INVALID_ARGUMENT', `demo: cannot parse postgres://u:${SECRET}@h/db`);
    expect(error.message).toBe('demo: cannot parse postgres://u:***@h/db');
    expect(error.stack).not.toContain(SECRET);
  });

  it('the error mapper and redactDriverError redact the message and every cause, without an adapter redact', () => {
    const map = createErrorMapper({ adapter: 'demo', classify: () => undefined });
    const driver = new TypeError(
      `Request cannot be constructed from a URL that includes credentials: https://u:${SECRET}@h:1/`,
      {
        cause: new Error(`libsql://h?authToken=${SECRET}`),
      },
    );
    const error = map(driver, 'init');
    const logged = [
      error.message,
      String(error),
      error.stack,
      inspect(error, { depth: 10 }),
      JSON.stringify(error),
    ];
    for (const text of logged) expect(text).not.toContain(SECRET);
    expect(error.message).toContain('https://u:***@h:1/');
    expect(inspect(redactDriverError(driver), { depth: 10 })).not.toContain(SECRET);
  });
});
