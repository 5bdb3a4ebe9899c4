import type { MemoryStorage } from '@engram/core';
import { type Job, report } from './ipc.ts';
import { saveBatch, schemaMemory } from './workload.ts';

type MemoryJob = Extract<Job, { mode: 'memory' }>;

/** Threads kept at once: the oldest is deleted as each new one is created, so data stays bounded. */
const LIVE_THREADS = 20;

/**
 * RSS, and the memory JavaScript holds (V8's heap in use plus buffers outside it), in bytes after
 * a full garbage collection (the child runs with `--expose-gc`).
 */
function settled(): { rss: number; heap: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the memory soak needs node --expose-gc');
  gc();
  gc();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed + usage.external };
}

/**
 * The memory soak's one process: `job.operations` operations in a fixed mix (thread creation
 * and deletion, message saves and pages, working-memory reads and merges, thread and resource
 * metadata updates, thread reads) on a bounded amount of data, so what the process holds should
 * stop growing once caches are warm. Reports its RSS and JavaScript memory after `job.warmup`
 * operations and at the end, each after a garbage collection, and the time the measured part took.
 */
export async function memorySoak(store: MemoryStorage, job: MemoryJob): Promise<void> {
  const memory = schemaMemory(store);
  const resourceId = `mem-r-${job.writer}`;
  const threads: string[] = [];
  let created = 0;
  const scene = () => ({ resourceId, threadId: threads[threads.length - 1]! });
  const newThread = async () => {
    const id = `mem-t-${job.writer}-${created++}`;
    const now = new Date();
    await store.createThread({
      id,
      resourceId,
      title: `thread ${created}`,
      metadata: {},
      createdAt: now,
      updatedAt: now,
    });
    threads.push(id);
    const oldest = threads.length > LIVE_THREADS ? threads.shift() : undefined;
    if (oldest !== undefined) await store.deleteThread({ threadId: oldest });
  };
  await newThread();

  const steps: Array<(n: number) => Promise<unknown>> = [
    () => newThread(),
    (n) => saveBatch(memory, scene(), `${scene().threadId}-b${n}`, 1 + (n % 5)),
    () => store.listMessages({ threadId: scene().threadId, perPage: 10, direction: 'DESC' }),
    () => memory.getWorkingMemory({ resourceId }),
    (n) => memory.mergeWorkingMemory({ resourceId, workingMemory: { [`k${n % 50}`]: n } }),
    (n) => store.updateThread({ id: scene().threadId, metadata: { [`m${n % 10}`]: n } }),
    (n) => store.updateResource({ resourceId, metadata: { [`r${n % 10}`]: n } }),
    () => store.getThreadById({ threadId: scene().threadId }),
  ];

  let afterWarmup = { rss: 0, heap: 0 };
  let started = 0;
  for (let n = 0; n < job.operations; n += 1) {
    if (n === job.warmup) {
      afterWarmup = settled();
      started = performance.now();
    }
    await steps[n % steps.length]!(n);
  }
  const seconds = (performance.now() - started) / 1000;
  const atEnd = settled();
  await report({
    type: 'memory',
    operations: job.operations,
    rssAfterWarmup: afterWarmup.rss,
    rssAtEnd: atEnd.rss,
    heapAfterWarmup: afterWarmup.heap,
    heapAtEnd: atEnd.heap,
    seconds,
  });
}
