import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject, Message } from '@engram/core';
import { LibSQLStore, TABLES } from '@engram/libsql';
import { createClient } from '@libsql/client';
import { deepMerge } from '../deep-merge.ts';
import { runScoped } from '../env.ts';
import type { BenchTarget, RawBaseline, RecallTarget, RecallVariant } from '../target.ts';

const { resources, messages, threads, vectors } = TABLES;
/** A database file named by the caller is kept; one this run made up is removed at the end. */
const given = process.env.ENGRAM_BENCH_LIBSQL_URL;

/** The run's database file: `ENGRAM_BENCH_LIBSQL_URL`, or a fresh file in the temp directory. */
function url(): string {
  return runScoped(
    'ENGRAM_BENCH_LIBSQL_URL',
    () => `file:${join(tmpdir(), `engram-bench-${process.pid}.db`)}`,
  );
}

/** libSQL on an embedded `file:` database (WAL), the store and `@libsql/client` side by side. */
export const target: BenchTarget = {
  name: 'libsql',
  async open(options) {
    // Every side at the same durability: Mastra's libSQL store sets synchronous=NORMAL on its
    // connection, so the store and the raw client do too (no disk flush per commit).
    const storage = new LibSQLStore({ url: url(), synchronous: 'normal' });
    await storage.init();
    const client = createClient({ url: url(), timeout: 5_000, concurrency: 1 });
    await client.execute('PRAGMA synchronous = NORMAL');
    const raw: RawBaseline = {
      async getWorkingMemory(resourceId) {
        const result = await client.execute({
          sql: `SELECT working_memory FROM ${resources} WHERE id = ?`,
          args: [resourceId],
        });
        return (result.rows[0]?.working_memory as string | null | undefined) ?? null;
      },
      async replaceWorkingMemory(resourceId, document) {
        const now = Date.now();
        await client.execute({
          sql: `INSERT INTO ${resources} (id, working_memory, metadata, created_at, updated_at)
                VALUES (?, ?, '{}', ?, ?)
                ON CONFLICT (id) DO UPDATE SET working_memory = excluded.working_memory, updated_at = excluded.updated_at`,
          args: [resourceId, document, now, now],
        });
      },
      async mergeWorkingMemory(resourceId: string, patch: JsonObject) {
        // A write transaction is BEGIN IMMEDIATE: it takes the write lock first, so no other
        // writer can interleave between the read and the write.
        const tx = await client.transaction('write');
        try {
          const result = await tx.execute({
            sql: `SELECT working_memory FROM ${resources} WHERE id = ?`,
            args: [resourceId],
          });
          const next = deepMerge(
            (result.rows[0]?.working_memory as string | null | undefined) ?? null,
            patch,
          );
          const now = Date.now();
          await tx.execute({
            sql: `INSERT INTO ${resources} (id, working_memory, metadata, created_at, updated_at)
                  VALUES (?, ?, '{}', ?, ?)
                  ON CONFLICT (id) DO UPDATE SET working_memory = excluded.working_memory, updated_at = excluded.updated_at`,
            args: [resourceId, next, now, now],
          });
          await tx.commit();
        } finally {
          tx.close();
        }
      },
      async saveMessages(batch: Message[]) {
        await client.execute({
          sql: `INSERT INTO ${messages} (id, thread_id, resource_id, role, content, type, created_at)
                VALUES ${batch.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
          args: batch.flatMap((m) => [
            m.id,
            m.threadId,
            m.resourceId,
            m.role,
            JSON.stringify(m.content),
            m.type,
            m.createdAt.getTime(),
          ]),
        });
      },
      async listNewest(threadId, n) {
        const result = await client.execute({
          sql: `SELECT id, thread_id, resource_id, role, content, type, created_at FROM ${messages}
                WHERE thread_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
          args: [threadId, n],
        });
        return result.rows.map((row) => ({ ...row, content: JSON.parse(String(row.content)) }));
      },
      async listThreads(resourceId, n) {
        const result = await client.execute({
          sql: `SELECT id, resource_id, title, metadata, created_at, updated_at FROM ${threads}
                WHERE resource_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
          args: [resourceId, n],
        });
        return result.rows.map((row) => ({ ...row, metadata: JSON.parse(String(row.metadata)) }));
      },
    };
    // Mastra's tables (mastra_*) in the same database file.
    // Mastra is loaded only where it runs: the contention workers never import it.
    const peer = options?.peer
      ? await (await import('../mastra.ts')).mastraPeer(
          new (await import('@mastra/libsql')).LibSQLStore({ id: 'bench-mastra', url: url() }),
          'Mastra (@mastra/memory 1.31.0, @mastra/libsql 1.23.1)',
          "the rows in one `batch('write')`, then the thread's `updatedAt` in a separate statement; no thread check",
        )
      : undefined;
    return {
      storage,
      raw,
      peer,
      async close() {
        await peer?.close();
        client.close();
        await storage.close();
      },
    };
  },
  async openWithoutKeywords() {
    const storage = new LibSQLStore({ url: url(), synchronous: 'normal', keywords: false });
    await storage.init();
    return storage;
  },
  async openRecall(): Promise<RecallTarget> {
    const storage = new LibSQLStore({ url: url(), synchronous: 'normal' });
    await storage.init();
    const client = createClient({ url: url(), timeout: 5_000, concurrency: 1 });
    // The ANN opt-in: a store per size, since its table, index and triggers are dropped after
    // each size (or every vector written while growing to the next one would go into the index).
    let ann: LibSQLStore | undefined;
    const annVariant: RecallVariant = {
      name: 'libSQL DiskANN opt-in (vector_top_k, over-fetch 10, approximate)',
      approximate: true,
      get storage() {
        return ann as LibSQLStore;
      },
      cap: {
        messages: 10_000,
        reason:
          'building its index copies every vector into the DiskANN index, about 10 ms a vector here, so 100,000 would take over 15 minutes',
      },
      before: async () => {
        ann = new LibSQLStore({ url: url(), synchronous: 'normal', vectors: { index: true } });
        await ann.vectors.claimSpace((await storage.vectors.getSpace()) as never);
      },
      after: async () => {
        await ann?.close();
        // Its triggers by what the database lists: the store renames them when their bodies change.
        const triggers = await client.execute(
          "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'engram\\_vector\\_ann\\_%' ESCAPE '\\'",
        );
        if (triggers.rows.length === 0)
          throw new Error('libsql bench: the ANN opt-in left no triggers to drop');
        for (const what of [
          ...triggers.rows.map((row) => `TRIGGER ${String(row.name)}`),
          'INDEX engram_vector_ann_by_hash',
          'TABLE engram_vector_ann',
        ]) {
          await client.execute(`DROP ${what}`);
        }
      },
    };
    return {
      storage,
      rawKeywords: {
        describe:
          'FTS5: `engram_message_terms MATCH` the quoted terms OR-ed, joined to messages on rowid for the resource, ORDER BY bm25() LIMIT k',
        async search(resourceId, terms, topK) {
          const result = await client.execute({
            sql: `SELECT m.id FROM engram_message_terms JOIN ${messages} m ON m.rowid = engram_message_terms.rowid
                  WHERE engram_message_terms MATCH ? AND m.resource_id = ?
                  ORDER BY bm25(engram_message_terms) LIMIT ?`,
            args: [terms.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR '), resourceId, topK],
          });
          return result.rows.map((row) => ({ id: String(row.id) }));
        },
      },
      variants: [annVariant],
      // Mastra is loaded only where it runs: the contention workers never import it.
      async openPeer(settings) {
        const { LibSQLStore: MastraStore, LibSQLVector } = await import('@mastra/libsql');
        return (await import('../recall-mastra.ts')).mastraRecallPeer({
          ...settings,
          store: new MastraStore({ id: 'bench-mastra', url: url() }),
          vector: new LibSQLVector({ id: 'bench-mastra-vector', url: url() }),
          name: 'Mastra (@mastra/memory 1.31.0, @mastra/libsql 1.23.1 LibSQLVector)',
          // Measured here: 1,000 vectors in ~10 s, 9,000 more in ~100 s, each upsert also
          // inserting into the DiskANN index (one row at a time in one transaction).
          cap: {
            messages: 10_000,
            reason:
              'its vector upserts maintain a DiskANN index, about 10 ms a vector here at 10,000 and growing, so 90,000 more would take over 15 minutes',
          },
          search:
            'on libSQL an approximate search: Mastra creates a DiskANN index (libsql_vector_idx) and queries vector_top_k for topK × 10 candidates, then filters them by resource_id in its metadata JSON; only when fewer than topK survive does it fall back to an exact vector_distance_cos scan with the JSON filter',
        });
      },
      raw: {
        describe:
          'one SELECT joining messages and vectors on the resource, ORDER BY vector_distance_cos LIMIT k',
        async scan(resourceId, vector, topK) {
          const result = await client.execute({
            sql: `SELECT m.id, m.thread_id, 1 - vector_distance_cos(v.embedding, vector32(?)) AS score
                  FROM ${messages} m JOIN ${vectors} v ON v.message_id = m.id
                  WHERE m.resource_id = ?
                  ORDER BY vector_distance_cos(v.embedding, vector32(?)) LIMIT ?`,
            args: [
              new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength),
              resourceId,
              new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength),
              topK,
            ],
          });
          return result.rows.map((row) => ({ id: String(row.id) }));
        },
      },
      async close() {
        client.close();
        await storage.close();
      },
    };
  },
  async dispose() {
    if (given) return;
    const path = url().slice('file:'.length);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  },
};
