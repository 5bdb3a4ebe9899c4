import type { MemoryStorage } from '@engram/core';
import type { FromRacer, ToRacer } from './protocol.ts';
import { runRacer } from './tasks.ts';

/**
 * The entry point of one racing process. It imports the adapter's worker module, creates its
 * own store (its own connection), reports ready, waits for the start signal shared by every
 * racer, runs its operations and reports what it was told succeeded.
 */

function send(message: FromRacer): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

let go: () => void = () => {};
const started = new Promise<void>((resolve) => {
  go = resolve;
});

async function main(start: Extract<ToRacer, { type: 'start' }>): Promise<void> {
  const mod = (await import(start.worker)) as { create?: () => Promise<MemoryStorage> | MemoryStorage };
  if (typeof mod.create !== 'function') {
    throw new Error(`the worker module ${start.worker} does not export a create() function`);
  }
  const store = await mod.create();
  await store.init();
  await send({ type: 'ready' });
  await started;
  const report = await runRacer(store, start.task, start.racer);
  await send({ type: 'done', report });
  await store.close().catch(() => undefined);
}

process.on('message', (message: ToRacer) => {
  if (message.type === 'go') return go();
  main(message).then(
    () => process.exit(0),
    async (error: unknown) => {
      await send({
        type: 'error',
        message: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
      process.exit(1);
    },
  );
});
