/**
 * Entry point of the child processes the scenarios fork (`node --import tsx --conditions=source`):
 * opens its own store on the target in `FAULTS_TARGET` and runs the job in `FAULTS_JOB`.
 */

import { conformanceModel, observedContent, observingMemory } from '@engram/conformance';
import { isMemoryError, type MemoryStorage } from '@engram/core';
import { type Job, type ParentMessage, report } from './ipc.ts';
import { AckBeforeCommitStore } from './lossy-store.ts';
import { memorySoak } from './memory-worker.ts';
import { soak } from './soak-worker.ts';
import { openStore, targetFromEnv } from './targets.ts';
import { mergeStep, schemaMemory, writeStep } from './workload.ts';

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

/**
 * Merges in `chains` parallel loops (while its gate is open, when gated) until the parent says
 * `stop`, reporting each acknowledged write; then closes its store and exits.
 */
async function stoppedWriter(store: MemoryStorage, job: Extract<Job, { mode: 'stopped' }>): Promise<void> {
  const memory = schemaMemory(store);
  let open = !job.gated;
  let stop = false;
  process.on('message', (message: ParentMessage) => {
    if (message === 'stop') stop = true;
    else open = message === 'open';
  });
  await report({ type: 'ready' });
  const chain = async (c: number) => {
    for (let n = 0; !stop; n += 1) {
      if (!open) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      try {
        await report({ type: 'ack', ack: await mergeStep(store, memory, job.scene, job.writer, c, n) });
      } catch (error) {
        await report({
          type: 'error',
          code: isMemoryError(error) ? error.code : 'NOT_A_MEMORY_ERROR',
          message: error instanceof Error ? error.message : String(error),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: job.chains }, (_, c) => chain(c)));
}

/**
 * Turns of observational memory until killed: saves a message, prepares the turn (buffering and
 * activation run with a slow mock Observer, so kills land inside them), saves an answer.
 */
async function observeWriter(store: MemoryStorage, job: Extract<Job, { mode: 'observe' }>): Promise<never> {
  const memory = observingMemory(store, 'thread', 0.25, conformanceModel({ delayMs: 40 }));
  const target = job.scene;
  await report({ type: 'ready' });
  for (let n = 0; ; n += 1) {
    try {
      for (const role of ['user', 'assistant'] as const) {
        const id = `${job.writer}-${n}-${role}`;
        await memory.saveMessages({
          messages: [{ id, ...target, role, content: observedContent(id, 'word '.repeat(5 + (n % 17))) }],
        });
        await report({ type: 'saved', id });
        if (role === 'user') await memory.observations?.prepare(target);
      }
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
  } else if (job.mode === 'observe') {
    await observeWriter(real, job);
  } else if (job.mode === 'stopped') {
    await stoppedWriter(real, job);
    await real.close();
    process.disconnect?.();
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
