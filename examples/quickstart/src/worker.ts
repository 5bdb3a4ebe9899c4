/**
 * One worker process: merges one fact at a time about its topic into Ada's working memory,
 * while the other workers do the same for theirs. Started by main.ts through `fork`.
 */
import { openMemory, TOPICS, type Topic, USER_ID } from './setup.ts';

interface Report {
  topic: Topic;
  pid: number;
  landed: number;
  failed: string[];
  ms: number;
}

const topic = process.argv[2] as Topic;
const { store, memory } = openMemory();
await store.init();
process.send?.({ type: 'ready' });
await new Promise<void>((resolve) => process.once('message', () => resolve()));

const started = Date.now();
const report: Report = { topic, pid: process.pid, landed: 0, failed: [], ms: 0 };
for (const [i, item] of TOPICS[topic].entries()) {
  try {
    await memory.mergeWorkingMemory({
      resourceId: USER_ID,
      workingMemory: { facts: { [topic]: { [item]: i + 1 } } },
    });
    report.landed++;
  } catch (error) {
    report.failed.push(`${item}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
report.ms = Date.now() - started;
await store.close();
process.send?.({ type: 'done', report });
