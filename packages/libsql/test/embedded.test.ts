import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedDatabase } from '../src/embedded.ts';
import { tempDir } from './helpers.ts';

describe('EmbeddedDatabase answers like @libsql/client on the same file', () => {
  const { dir, cleanup } = tempDir();
  const url = `file:${join(dir, 'same.db')}`;
  const db = new EmbeddedDatabase(join(dir, 'same.db'), 5_000);
  const client = createClient({ url, timeout: 5_000 });
  afterAll(() => {
    db.close();
    client.close();
    cleanup();
  });

  it('returns the same rows (by name and index), blobs, changed-row counts and errors', async () => {
    await db.execute('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER, data BLOB)');
    const insert = {
      sql: 'INSERT INTO t (id, name, flag, data) VALUES (?, ?, ?, ?), (?, ?, ?, ?)',
      args: [1, 'a', true, new Uint8Array([1, 2, 3]), 2, 'b', false, new Uint8Array([255])],
    };
    expect((await db.execute(insert)).rowsAffected).toBe(2);
    const select = 'SELECT id, name, flag, data, id AS again FROM t ORDER BY id';
    const ours = await db.execute(select);
    const theirs = await client.execute(select);
    expect(ours.columns).toEqual(theirs.columns);
    expect(ours.rows.map((row) => ({ ...row }))).toEqual(theirs.rows.map((row) => ({ ...row })));
    expect(ours.rows.map((row) => [row[0], row[1], row.length])).toEqual([
      [1, 'a', 5],
      [2, 'b', 5],
    ]);
    expect(new Uint8Array(ours.rows[0]!.data as ArrayBuffer)).toEqual(new Uint8Array([1, 2, 3]));
    const returning = await db.execute({
      sql: 'UPDATE t SET name = ? WHERE id = 1 RETURNING name',
      args: ['c'],
    });
    expect(returning.rows.map((row) => row.name)).toEqual(['c']);
    const duplicate = { sql: 'INSERT INTO t (id) VALUES (?)', args: [1] };
    const ourError = await db.execute(duplicate).catch((error: unknown) => error);
    const theirError = await client.execute(duplicate).catch((error: unknown) => error);
    expect((ourError as { code?: string }).code).toBe((theirError as { extendedCode?: string }).extendedCode);
  });

  it('rolls back a transaction closed without commit, and a batch whose statement fails', async () => {
    await db.execute('CREATE TABLE c (id INTEGER PRIMARY KEY, n INTEGER)');
    await db.execute('INSERT INTO c VALUES (1, 0)');
    const tx = await db.transaction('write');
    await tx.execute('UPDATE c SET n = 5 WHERE id = 1');
    tx.close();
    await expect(
      db.batch(['UPDATE c SET n = 7 WHERE id = 1', 'INSERT INTO c VALUES (1, 1)'], 'write'),
    ).rejects.toThrow();
    const committed = await db.transaction('write');
    await committed.execute('UPDATE c SET n = n + 1 WHERE id = 1');
    await committed.commit();
    committed.close();
    // Read through the other connection: only the committed write is in the file.
    expect((await client.execute('SELECT n FROM c')).rows[0]?.n).toBe(1);
  });

  it('keeps running statements once more distinct statements ran than it keeps prepared', async () => {
    for (let i = 0; i < 300; i++) {
      expect((await db.execute({ sql: `SELECT ? + ${i} AS v`, args: [1] })).rows[0]?.v).toBe(i + 1);
    }
    expect((await db.execute({ sql: 'SELECT ? + 0 AS v', args: [2] })).rows[0]?.v).toBe(2);
  });
});
