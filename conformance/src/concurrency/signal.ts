import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Files as signals between the suite and a racing process, for checks that must place another
 * process's write at one exact point of an operation (inside an update function, which is
 * synchronous): the racer waits for a file asynchronously, the suite blocks on one.
 */

const POLL_MS = 5;

/** Resolves once `path` exists; rejects after `timeoutMs`. */
export async function waitForFile(path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`no signal file ${path} after ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
}

/**
 * Blocks this thread (and its event loop) until `path` exists or `timeoutMs` passed; returns
 * whether it exists. Only another process can create the file meanwhile.
 */
export function waitForFileSync(path: string, timeoutMs: number): boolean {
  const deadline = Date.now() + timeoutMs;
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (!existsSync(path)) {
    if (Date.now() > deadline) return false;
    Atomics.wait(cell, 0, 0, POLL_MS);
  }
  return true;
}
