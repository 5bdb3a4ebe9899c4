/**
 * libSQL exact search at one resource of N messages (default 10,000 and 100,000; 256-dimension
 * unit vectors), each way a search can find the kept copy, against the limit: a brute-force scan
 * of the same vectors in a `Float32Array` in this process. Medians of `ROUNDS` searches:
 * - warm: nothing written since the last search;
 * - after an append: one message and its vector saved before each search (a chat turn);
 * - after a delete: one message deleted before each search (the resource is read again);
 * - SQL: a store with `vectors: { cache: false }` on the same file.
 *
 *   node --import tsx --conditions=source scripts/libsql-recall-cache.ts [sizes…]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message, MessageVector, VectorStore } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { bruteForce } from '../src/recall.ts';

const DIMENSIONS = 256;
const ROUNDS = 15;
const SPACE = { id: 'bench:random', dimensions: DIMENSIONS };
const sizes = process.argv.slice(2).map(Number).filter(Boolean);

let seed = 11;
function unit(): Float32Array {
  const v = Float32Array.from({ length: DIMENSIONS }, () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31 - 0.5;
  });
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

async function median(fn: () => Promise<unknown>, before?: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await before?.();
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)] as number;
}

const dir = mkdtempSync(join(tmpdir(), 'engram-recall-cache-'));
try {
  for (const size of sizes.length ? sizes : [10_000, 100_000]) {
    const url = `file:${dir}/${size}.db`;
    const store = new LibSQLStore({ url, synchronous: 'normal' });
    const sql = new LibSQLStore({ url, synchronous: 'normal', vectors: { cache: false } });
    const vectors = store.vectors as VectorStore;
    await vectors.claimSpace(SPACE);
    const resourceId = 'r';
    await store.saveThread({
      id: 't',
      resourceId,
      title: '',
      metadata: {},
      createdAt: new Date(0),
      updatedAt: new Date(0),
    });
    const rows: MessageVector[] = [];
    let n = 0;
    const append = async (count: number) => {
      const messages: Message[] = [];
      const batch: MessageVector[] = [];
      for (let i = 0; i < count; i++, n++) {
        messages.push({
          id: `m${n}`,
          threadId: 't',
          resourceId,
          role: 'user',
          content: `text ${n}`,
          type: 'text',
          createdAt: new Date(1_600_000_000_000 + n),
        });
        batch.push({ messageId: `m${n}`, hash: `h${n}`, vector: unit() });
      }
      await store.saveMessages(messages);
      await vectors.upsertVectors(SPACE, batch);
      rows.push(...batch);
    };
    const seeded = performance.now();
    while (n < size) await append(Math.min(1_000, size - n));
    const seconds = ((performance.now() - seeded) / 1000).toFixed(1);
    const query = unit();
    const search = (v: VectorStore) => () =>
      v.searchVectors({ space: SPACE, vector: query, topK: 3, resourceId });
    await search(vectors)(); // fills the copy
    const limit = bruteForce(rows);
    const brute = await median(async () => limit(query, 3));
    const warm = await median(search(vectors));
    const afterAppend = await median(search(vectors), () => append(1));
    let victim = 0;
    const afterDelete = await median(search(vectors), () => store.deleteMessages([`m${victim++}`]));
    const inSql = await median(search(sql.vectors as VectorStore));
    const ms = (x: number) => `${x.toFixed(2)} ms (${(x / brute).toFixed(1)}×)`;
    console.log(
      `${size} vectors (seeded in ${seconds} s): brute force ${brute.toFixed(2)} ms; warm ${ms(warm)}; after an append ${ms(afterAppend)}; after a delete ${ms(afterDelete)}; SQL scan ${ms(inSql)}`,
    );
    await store.close();
    await sql.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
