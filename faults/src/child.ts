/**
 * Entry point of the child processes the scenarios fork (`node --import tsx --conditions=source`):
 * opens its own store on the target in `FAULTS_TARGET` and runs the job in `FAULTS_JOB`.
 */
import { isMemoryError, type MemoryStorage } from '@engram/core';
import { type Job, report } from './ipc.ts';
import { AckBeforeCommitStore } from './lossy-store.ts';
import { memorySoak } from './memory-worker.ts';
import { soak } from './soak-worker.ts';
import { openStore, targetFromEnv } from './targets.ts';
import { schemaMemory, writeStep } from './workload.ts';

/** Writes until killed, reporting each acknowledged write before starting the next. */
async function crashWriter(store: MemoryStorage, job: Extract<Job, { mode: 'crash' }>): Promise<never> {
  const memory = schemaMemory(store);
  await report({ type: 'ready' });
  for (let n = 0; ; n += 1) {
    try {
      const ack = await writeStep(memory, job.scene, job.writer, n);
      await report({ type: 'ack', ack });
    } catch (error) {
      await report({
        type: 'error',
        code: isMemoryError(error) ? error.code : 'NOT_A_MEMORY_ERROR',
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }
}

async function main(): Promise<void> {
  const raw = process.env.FAULTS_JOB;
  if (!raw) throw new Error('FAULTS_JOB is not set');
  const job = JSON.parse(raw) as Job;
  const real = await openStore(targetFromEnv());
  await real.init();
  if (job.mode === 'crash') {
    const store =
      job.ackBeforeCommitMs === undefined ? real : new AckBeforeCommitStore(real, job.ackBeforeCommitMs);
    await crashWriter(store, job);
  } else {
    await report({ type: 'ready' });
    if (job.mode === 'soak') await soak(real, job);
    else await memorySoak(real, job);
    await real.close();
    process.disconnect?.();
  }
}

main().catch((error: unknown) => {
  console.error('faults child failed:', error);
  process.exit(1);
});
