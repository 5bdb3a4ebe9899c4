// Writes a libSQL file for measuring `engram export | import | copy`: N messages (default
// 100,000) in threads of 1,000 over resources of 10 threads, each with working memory.
//   node --import tsx --conditions=source scripts/seed-transfer-bench.ts file:/tmp/bench.db 100000
import { LibSQLStore } from '@engram/libsql';

const [url = 'file:/tmp/engram-transfer-bench.db', count = '100000'] = process.argv.slice(2);
const total = Number(count);
const PER_THREAD = 1_000;
const THREADS_PER_RESOURCE = 10;
const BATCH = 500;

const store = new LibSQLStore({ url });
const start = Date.now();
const base = Date.UTC(2026, 0, 1);
for (let t = 0; t * PER_THREAD < total; t++) {
  const resourceId = `bench-r${Math.floor(t / THREADS_PER_RESOURCE)}`;
  const threadId = `bench-t${t}`;
  const createdAt = new Date(base + t * 3_600_000);
  await store.saveThread({
    id: threadId,
    resourceId,
    title: `Thread ${t}`,
    metadata: {},
    createdAt,
    updatedAt: createdAt,
  });
  const n = Math.min(PER_THREAD, total - t * PER_THREAD);
  for (let from = 0; from < n; from += BATCH) {
    const messages = Array.from({ length: Math.min(BATCH, n - from) }, (_, i) => {
      const j = from + i;
      return {
        id: `${threadId}-m${j}`,
        threadId,
        resourceId,
        role: j % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: `Message ${j} of ${threadId}: the quick brown fox jumps over the lazy dog, twice over.`,
        type: 'v2',
        createdAt: new Date(createdAt.getTime() + j * 1_000),
      };
    });
    await store.saveMessages(messages);
  }
  if (t % THREADS_PER_RESOURCE === 0)
    await store.updateResource({ resourceId, workingMemory: `# ${resourceId}\n- seeded for the bench` });
}
await store.close();
console.log(`${url}: ${total} messages in ${((Date.now() - start) / 1000).toFixed(1)}s`);
