import type { MemoryStorage } from '@engram/core';
import type { FromRacer, ToRacer } from './protocol.ts';
import { runRacer } from './tasks.ts';

/**
 * The entry point of one racing process. It imports the adapter's worker module and creates
 * its own store (its own connection) once, then runs its share of each task it is sent, and
 * reports the keys it was told were written.
 */

let store: MemoryStorage | undefined;
let racer = 0;

function send(message: FromRacer): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

async function exit(code: number): Promise<never> {
  await store?.close().catch(() => undefined);
  process.exit(code);
}

async function handle(message: ToRacer): Promise<void> {
  if (message.type === 'init') {
    racer = message.racer;
    const mod = (await import(message.worker)) as { create?: () => Promise<MemoryStorage> | MemoryStorage };
    if (typeof mod.create !== 'function') {
      throw new Error(`the worker module ${message.worker} does not export a create() function`);
    }
    store = await mod.create();
    // A lazy racer leaves init() to its task, so that every racer calls it at once.
    if (!message.lazy) await store.init();
    await send({ type: 'ready' });
  } else if (message.type === 'task') {
    if (!store) throw new Error('a task arrived before init');
    await send({ type: 'done', report: await runRacer(store, message.task, racer) });
  } else {
    await exit(0);
  }
}

process.on('message', (message: ToRacer) => {
  handle(message).catch(async (error: unknown) => {
    await send({ type: 'error', message: describeError(error) });
    await exit(1);
  });
});
process.on('disconnect', () => {
  void exit(0);
});
