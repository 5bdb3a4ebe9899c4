import { join } from 'node:path';
import { MemoryError } from '@engram/core';
import { type Client, createClient } from '@libsql/client';
import { afterAll, describe, expect, it } from 'vitest';
import { LibSQLStore } from '../src/index.ts';
import { tempDir } from './helpers.ts';

describe('LibSQLStore with an injected client recognised by shape', () => {
  const { dir, cleanup } = tempDir();
  const real = createClient({ url: `file:${join(dir, 'shape.db')}`, timeout: 5_000 });
  afterAll(() => {
    real.close();
    cleanup();
  });

  it('accepts a client from another copy of @libsql/client (same members, other class) and works on the file', async () => {
    // What a second copy of `@libsql/client` in the tree hands over: a different object, same methods.
    const foreign = {
      protocol: real.protocol,
      execute: (...args: Parameters<Client['execute']>) => real.execute(...args),
      batch: (...args: Parameters<Client['batch']>) => real.batch(...args),
      transaction: (...args: Parameters<Client['transaction']>) => real.transaction(...args),
      reconnect: () => real.reconnect(),
    };
    const store = new LibSQLStore({ client: foreign as unknown as Client });
    const at = new Date();
    const thread = {
      id: 't-shape',
      resourceId: 'r-shape',
      title: 'A',
      metadata: {},
      createdAt: at,
      updatedAt: at,
    };
    await store.saveThread(thread);
    await store.saveMessages([
      {
        id: 'm-shape',
        threadId: thread.id,
        resourceId: thread.resourceId,
        role: 'user',
        content: { format: 2, parts: [{ type: 'text', text: 'hi' }] },
        type: 'v2',
        createdAt: at,
      },
    ]);
    expect((await store.listMessages({ threadId: thread.id })).messages.map((m) => m.id)).toEqual([
      'm-shape',
    ]);
    await store.close();
    // close() leaves an injected client open; the rows are in the file it writes.
    const rows = await real.execute('SELECT count(*) AS n FROM engram_messages');
    expect(Number(rows.rows[0]?.n)).toBe(1);
  });

  it.each([
    ['a URL string', 'file:x.db', 'got string'],
    [
      'an object with execute only',
      { execute: () => undefined },
      'lacks batch(), transaction(), reconnect(), protocol (string)',
    ],
    ['client options instead of a client', { url: 'file:x.db' }, 'lacks execute(), batch()'],
    ['null', null, 'got null'],
  ])('refuses %s as client, naming what is missing', (_name, client, text) => {
    const create = () => new LibSQLStore({ client: client as unknown as Client });
    expect(create).toThrow(MemoryError);
    expect(create).toThrow('libsql: client must be an @libsql/client client (createClient())');
    expect(create).toThrow(text);
    expect(create).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
