import { fileURLToPath } from 'node:url';
import { Memory, type MemoryRecord, type Message } from '@engram/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { quoteIdent } from '../src/sql.ts';
import {
  createDatabase,
  describePg,
  randomName,
  runInProcesses,
  type TestDatabase,
  threadNow,
} from './env.ts';

const KEYWORD_WRITES = fileURLToPath(new URL('./fixtures/keyword-writes.ts', import.meta.url));

describePg('keyword index statistics, kept by the writes', (url) => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createDatabase(url);
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** The statistics kept (and in how many rows) beside those counted from the index itself. */
  async function statistics(schema: string) {
    const s = quoteIdent(schema);
    const [kept] = await db.query<{ documents: number; length: number; rows: number }>(
      `SELECT coalesce(sum(documents), 0)::int AS documents, coalesce(sum(length), 0)::int AS length,
        count(*)::int AS rows FROM ${s}.engram_message_terms_stats`,
    );
    const [counted] = await db.query<{ documents: number; length: number }>(
      `SELECT count(*)::int AS documents, coalesce(sum(length), 0)::int AS length FROM ${s}.engram_message_terms`,
    );
    return {
      kept: { documents: kept!.documents, length: kept!.length },
      rows: kept!.rows,
      counted: counted!,
    };
  }

  const at = new Date('2024-05-01T00:00:00.000Z').getTime();
  const message = (id: string, threadId: string, content: Message['content'], i = 0): Message => ({
    id,
    threadId,
    resourceId: threadId.split('/')[0]!,
    role: 'user',
    content,
    type: 'v2',
    createdAt: new Date(at + i),
  });

  it('every public write keeps them equal to the index, and a search scores with them', async () => {
    const schema = randomName('kwstats');
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    const memory = new Memory({ storage: store });
    const expectKept = async (step: string) => {
      const { kept, counted } = await statistics(schema);
      expect(kept, step).toEqual(counted);
    };
    try {
      await store.init();
      await expectKept('empty');
      for (const t of ['a/1', 'a/2', 'b/1']) await store.saveThread(threadNow(t, t.split('/')[0]!));
      await store.saveMessages([
        message('m1', 'a/1', 'the otter swims', 1),
        message('m2', 'a/1', 'otter otter kelp forest', 2),
        message('m3', 'a/2', { format: 2, parts: [{ type: 'text', text: 'ferry lantern' }] }, 3),
        message('m4', 'b/1', 'no', 4),
        message('m5', 'b/1', 'orchard basalt meadow quill', 5),
      ]);
      await expectKept('saved');
      const [top] = await store.keywords!.search({ query: 'otter', topK: 1, resourceId: 'a' });
      expect(top?.messageId).toBe('m2');
      await store.saveMessages([message('m1', 'a/1', 'the otter swims far away now', 1)]);
      await expectKept('re-saved with more words');
      await store.updateMessages([{ id: 'm2', content: 'kelp' }]);
      await store.updateMessages([{ id: 'm5', content: 'the' }]);
      await expectKept('edited, one to no terms at all');
      await store.saveMessages([message('m3', 'a/1', 'ferry', 3)]);
      await expectKept('moved to another thread');
      await store.deleteMessages(['m1']);
      await expectKept('a message deleted');
      const records: MemoryRecord[] = [];
      for await (const record of memory.exportResource({ resourceId: 'a' })) records.push(record);
      await store.deleteThread({ threadId: 'a/2' });
      await expectKept('a thread deleted');
      await memory.deleteResource({ resourceId: 'a' });
      await expectKept('a resource deleted');
      await memory.importRecords(records);
      await expectKept('a resource imported');
      await memory.importRecords(records, { onConflict: 'replace' });
      await expectKept('imported again over itself');
      await memory.cloneThread({ threadId: 'a/1' });
      await expectKept('a thread cloned');
      expect((await statistics(schema)).counted.documents).toBeGreaterThan(2);
      await db.query(`TRUNCATE ${quoteIdent(schema)}.engram_messages CASCADE`);
      await expectKept('the messages truncated by hand');
      await store.saveMessages([message('m9', 'b/1', 'otter again', 9)]);
      await expectKept('saved after the truncate');
      const [again] = await store.keywords!.search({ query: 'otter', topK: 1, resourceId: 'b' });
      expect(again?.messageId).toBe('m9');
    } finally {
      await store.close();
    }
  });

  it('a schema named with quotes, dollar quotes and a placeholder keeps them too', async () => {
    const schema = `Odd $$ "q" 'a' $1 ${randomName('kw')}`;
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await store.init();
      await store.saveThread(threadNow('t/1', 't'));
      await store.saveMessages([
        message('m1', 't/1', 'otter otter kelp', 1),
        message('m2', 't/1', 'kelp', 2),
      ]);
      await store.deleteMessages(['m2']);
      const { kept, counted } = await statistics(schema);
      expect(kept).toEqual(counted);
      expect(counted).toEqual({ documents: 1, length: 3 });
      const [hit] = await store.keywords!.search({ query: 'kelp', topK: 1, resourceId: 't' });
      expect(hit?.messageId).toBe('m1');
    } finally {
      await store.close();
    }
  });

  it('4 OS processes writing at once keep them exact, in a row per writer at once at most', async () => {
    const schema = randomName('kwrace');
    const store = new PostgresStore({ connectionString: db.url, schemaName: schema });
    try {
      await store.init();
      await store.saveThread(threadNow('shared', 'r'));
      const outputs = await runInProcesses(KEYWORD_WRITES, 4, (i) => ({
        ENGRAM_PG_TEST_URL: db.url,
        ENGRAM_PG_TEST_SCHEMA: schema,
        ENGRAM_PG_TEST_WRITER: String(i),
      }));
      expect(outputs).toEqual(['ok', 'ok', 'ok', 'ok']);
      const { kept, counted, rows } = await statistics(schema);
      expect(kept).toEqual(counted);
      expect(counted.documents).toBeGreaterThan(100);
      // Four processes of four connections: at most 16 writers at once, one row each, and the first.
      expect(rows).toBeLessThanOrEqual(17);
    } finally {
      await store.close();
    }
  });
});
