import { isMemoryError, type MemoryStorage, type Message } from '@engram/core';
import { compareMessages } from '@engram/core/driver';
import { type Job, report } from './ipc.ts';
import { type Ack, mergeKey, messageId, saveBatch, schemaMemory } from './workload.ts';

type SoakJob = Extract<Job, { mode: 'soak' }>;

/**
 * One soak process: a random mix of writes (working-memory merges into its own and the shared
 * resource, message batches, deletions, metadata merges) and reads that check, as it goes, that
 * its own thread is ordered and counted right and that nothing of another resource shows up.
 * Every acknowledged write is reported to the parent, which checks them all at the end.
 */
export async function soak(store: MemoryStorage, job: SoakJob): Promise<void> {
  const memory = schemaMemory(store);
  const { own, shared, others, writer } = job;
  const live = new Map<string, number>();
  const ownKeys = new Map<string, number>();
  const violations: string[] = [];
  let invariants = 0;
  let operations = 0;
  let uncertain = false;
  const check = (ok: boolean, what: string) => {
    invariants += 1;
    if (!ok && violations.length < 50) violations.push(`${writer}: ${what}`);
  };
  const ack = async (value: Ack) => report({ type: 'ack', ack: value });

  const steps: Array<(n: number) => Promise<void>> = [
    async (n) => ack(await mergeKey(memory, shared.resourceId, `${writer}-s${n}`, n)),
    async (n) => {
      const size = 1 + (n % 10);
      const done = await saveBatch(memory, own, `${writer}-b${n}`, size);
      live.set(`${writer}-b${n}`, size);
      await ack(done);
    },
    async (n) => {
      const done = await mergeKey(memory, own.resourceId, `${writer}-o${n}`, n);
      ownKeys.set(`${writer}-o${n}`, n);
      await ack(done);
    },
    async (n) => {
      await store.updateThread({ id: own.threadId, metadata: { [`${writer}-t${n}`]: n } });
      await ack({ kind: 'threadMeta', threadId: own.threadId, key: `${writer}-t${n}`, value: n });
    },
    async (n) => {
      await store.updateResource({ resourceId: own.resourceId, metadata: { [`${writer}-r${n}`]: n } });
      await ack({ kind: 'resourceMeta', resourceId: own.resourceId, key: `${writer}-r${n}`, value: n });
    },
    async (n) => {
      const batches = [...live.keys()];
      const batch = batches[n % Math.max(1, batches.length)];
      if (batch === undefined || batches.length < 4) return;
      const size = live.get(batch) ?? 0;
      await store.deleteMessages(Array.from({ length: size }, (_, i) => messageId(batch, i)));
      live.delete(batch);
      await ack({ kind: 'deleted', threadId: own.threadId, batch });
    },
    async () => {
      const page = await store.listMessages({
        threadId: own.threadId,
        resourceId: own.resourceId,
        perPage: 20,
        direction: 'DESC',
      });
      const expected = [...live.values()].reduce((a, b) => a + b, 0);
      if (!uncertain) check(page.total === expected, `own thread total ${page.total}, expected ${expected}`);
      check(
        page.messages.length === Math.min(20, page.total),
        `page of ${page.messages.length} for total ${page.total}`,
      );
      page.messages.forEach((message: Message, i: number) => {
        check(
          message.resourceId === own.resourceId,
          `message ${message.id} of resource ${message.resourceId}`,
        );
        const next = page.messages[i + 1];
        if (next) check(compareMessages(message, next) > 0, `DESC order broken at ${message.id}`);
      });
    },
    async (n) => {
      const other = others[n % others.length];
      if (!other) return;
      check(
        (await store.getThreadById({ threadId: other.threadId, resourceId: own.resourceId })) === null,
        `thread ${other.threadId} readable with resource ${own.resourceId}`,
      );
      const foreign = await store.listMessages({ threadId: other.threadId, resourceId: own.resourceId });
      check(foreign.messages.length === 0 && foreign.total === 0, `messages of ${other.threadId} readable`);
      const threads = await store.listThreads({ resourceId: own.resourceId });
      check(
        threads.total === 1 && threads.threads.every((t) => t.id === own.threadId),
        `listThreads(${own.resourceId}) returned ${threads.threads.map((t) => t.id).join(',')}`,
      );
      const document = await memory.getWorkingMemory({ resourceId: own.resourceId });
      const parsed = document === null ? {} : (JSON.parse(document) as Record<string, unknown>);
      for (const [key, value] of ownKeys) check(parsed[key] === value, `own working memory lost ${key}`);
      for (const key of Object.keys(parsed))
        check(ownKeys.has(key) || uncertain, `stray key ${key} in own memory`);
    },
  ];

  const end = Date.now() + job.seconds * 1000;
  for (let n = 0; Date.now() < end; n += 1) {
    const step = steps[Math.floor(Math.random() * steps.length)] as (n: number) => Promise<void>;
    try {
      await step(n);
      operations += 1;
    } catch (error) {
      uncertain = true;
      await report({
        type: 'error',
        code: isMemoryError(error) ? error.code : 'NOT_A_MEMORY_ERROR',
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }
  await report({ type: 'done', operations, invariants, violations });
}
