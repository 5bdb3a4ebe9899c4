import { createLexicalEmbedder, Memory } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.ts';

const { dir, cleanup } = tempDir('engram-libsql-vectors-');
afterAll(cleanup);

describe('libSQL vectors, read back through a separate client', () => {
  it('stores one F32 blob of dimensions × 4 bytes per message, and the delete trigger drops it', async () => {
    const url = `file:${dir}/v.db`;
    const store = new LibSQLStore({ url });
    await store.init();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder({ dimensions: 48 }),
      options: { semanticRecall: true },
    });
    await memory.createThread({ resourceId: 'u', threadId: 't' });
    const saved = await memory.saveMessages({
      messages: [
        { threadId: 't', resourceId: 'u', role: 'user', content: 'the quick brown fox' },
        { threadId: 't', resourceId: 'u', role: 'assistant', content: 'jumps over the lazy dog' },
      ],
    });
    const raw = createClient({ url });
    const rows = await raw.execute(
      'SELECT message_id, space, length(embedding) AS n FROM engram_message_vectors',
    );
    expect(rows.rows.map((r) => [r.message_id, r.space, Number(r.n)])).toEqual(
      expect.arrayContaining(saved.map((m) => [m.id, 'engram:lexical-48', 48 * 4])),
    );
    const space = await raw.execute('SELECT embedder, dimensions FROM engram_vector_space');
    expect(space.rows.map((r) => [r.embedder, Number(r.dimensions)])).toEqual([['engram:lexical-48', 48]]);
    await raw.execute({ sql: 'DELETE FROM engram_messages WHERE id = ?', args: [saved[0]?.id as string] });
    const left = await raw.execute('SELECT message_id FROM engram_message_vectors');
    expect(left.rows.map((r) => r.message_id)).toEqual([saved[1]?.id]);
    raw.close();
    await store.close();
  });
});
