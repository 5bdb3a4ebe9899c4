import { performance } from 'node:perf_hooks';
import type { Message } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { createClient } from '@libsql/client';

const url = `file:/dev/shm/perfwm-prof-${process.pid}.db`;
const store = new LibSQLStore({ url, synchronous: 'normal' });
await store.init();
const client = createClient({ url, timeout: 5000, concurrency: 1 });
await client.execute('PRAGMA synchronous = NORMAL');
const at = new Date();
await store.saveThread({ id: 't1', resourceId: 'r', title: '', metadata: {}, createdAt: at, updatedAt: at });
await store.saveThread({ id: 't2', resourceId: 'r', title: '', metadata: {}, createdAt: at, updatedAt: at });
let seq = 0;
const batch = (threadId: string): Message[] =>
  Array.from({ length: 20 }, (_, k) => ({
    id: `m${seq++}`,
    threadId,
    resourceId: 'r',
    role: k % 2 ? 'assistant' : 'user',
    content: { format: 2, parts: [{ type: 'text', text: `message ${seq} with some ordinary text` }] },
    type: 'v2',
    createdAt: new Date(1_700_000_000_000 + seq),
  }));
const ops: Record<string, () => Promise<unknown>> = {
  raw: () => {
    const b = batch('t2');
    return client.execute({
      sql: `INSERT INTO engram_messages (id, thread_id, resource_id, role, content, type, created_at) VALUES ${b.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      args: b.flatMap((m) => [
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
  store: () => store.saveMessages(batch('t1')),
  rawTx: async () => {
    const b = batch('t2');
    const tx = await client.transaction('write');
    await tx.execute({ sql: 'SELECT id, resource_id FROM engram_threads WHERE id IN (?)', args: ['t2'] });
    await tx.execute({
      sql: `SELECT id, thread_id, resource_id FROM engram_messages WHERE id IN (${b.map(() => '?').join(',')})`,
      args: b.map((m) => m.id),
    });
    await tx.execute({
      sql: `INSERT INTO engram_messages (id, thread_id, resource_id, role, content, type, created_at) VALUES ${b.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')} ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id`,
      args: b.flatMap((m) => [
        m.id,
        m.threadId,
        m.resourceId,
        m.role,
        JSON.stringify(m.content),
        m.type,
        m.createdAt.getTime(),
      ]),
    });
    await tx.execute({
      sql: 'INSERT INTO engram_message_counts (thread_id, resource_id, n) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n',
      args: ['t2', 'r', 20],
    });
    await tx.execute({
      sql: 'UPDATE engram_threads SET updated_at = ? WHERE id IN (?)',
      args: [Date.now(), 't2'],
    });
    await tx.commit();
    tx.close();
  },
  rawBatch: () => {
    const b = batch('t2');
    return client.batch(
      [
        {
          sql: `INSERT INTO engram_messages (id, thread_id, resource_id, role, content, type, created_at) VALUES ${b.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')} ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id`,
          args: b.flatMap((m) => [
            m.id,
            m.threadId,
            m.resourceId,
            m.role,
            JSON.stringify(m.content),
            m.type,
            m.createdAt.getTime(),
          ]),
        },
        {
          sql: 'INSERT INTO engram_message_counts (thread_id, resource_id, n) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n',
          args: ['t2', 'r', 20],
        },
        { sql: 'UPDATE engram_threads SET updated_at = ? WHERE id IN (?)', args: [Date.now(), 't2'] },
      ],
      'write',
    );
  },
};
const times: Record<string, number[]> = {};
for (let round = 0; round < 1500; round++) {
  for (const [name, op] of Object.entries(ops).filter(([n]) =>
    process.env.ONLY ? n === process.env.ONLY : true,
  )) {
    const t = performance.now();
    await op();
    if (round >= 50) (times[name] ??= []).push(performance.now() - t);
  }
}
for (const [name, list] of Object.entries(times)) {
  list.sort((a, b) => a - b);
  console.log(name.padEnd(10), list[list.length >> 1]!.toFixed(3));
}
client.close();
await store.close();
