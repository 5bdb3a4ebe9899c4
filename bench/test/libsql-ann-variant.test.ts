import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Memory, normalize } from '@engram/core';
import type { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { afterAll, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'bench-ann-'));
const url = `file:${join(dir, 'bench.db')}`;
process.env.ENGRAM_BENCH_LIBSQL_URL = url;
const { target } = await import('../src/adapters/libsql.ts');

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

// The recall section builds the ANN opt-in at each size and drops it after: the drop must find
// what the store made (it names its triggers by version), or the next size runs on a broken file.
it("the libSQL ANN variant's hooks build the opt-in and drop all of it again, leaving the store writable", async () => {
  const recall = await (target.openRecall as NonNullable<typeof target.openRecall>)();
  const storage = recall.storage as LibSQLStore;
  const space = { id: 'bench:test', dimensions: 3 };
  await storage.vectors.claimSpace(space);
  const memory = new Memory({ storage });
  await memory.createThread({ resourceId: 'r', threadId: 't' });
  const [a, b] = (
    await memory.saveMessages({
      messages: ['a', 'b'].map((content) => ({
        threadId: 't',
        resourceId: 'r',
        role: 'user' as const,
        content,
      })),
    })
  ).map((m) => m.id);
  const vector = (values: number[]) => normalize(values) as Float32Array;
  await storage.vectors.upsertVectors(space, [
    { messageId: a as string, hash: 'a', vector: vector([1, 0, 0]) },
  ]);
  const [ann] = recall.variants ?? [];
  await ann?.before();
  const client = createClient({ url });
  const annObjects = async () =>
    (
      await client.execute("SELECT type, name FROM sqlite_master WHERE name LIKE 'engram_vector_ann%'")
    ).rows.map((row) => `${row.type} ${row.name}`);
  expect((await annObjects()).filter((o) => o.startsWith('trigger'))).toHaveLength(3);
  const hits = await ann?.storage.vectors?.searchVectors({
    space,
    vector: vector([1, 0, 0]),
    topK: 1,
    resourceId: 'r',
  });
  expect(hits?.map((h) => h.messageId)).toEqual([a]);
  await ann?.after();
  expect(await annObjects()).toEqual([]);
  // No trigger left behind that writes into the dropped table.
  await storage.vectors.upsertVectors(space, [
    { messageId: b as string, hash: 'b', vector: vector([0, 1, 0]) },
  ]);
  const exact = await storage.vectors.searchVectors({
    space,
    vector: vector([0, 1, 0]),
    topK: 1,
    resourceId: 'r',
  });
  expect(exact.map((h) => h.messageId)).toEqual([b]);
  client.close();
  await recall.close();
});
