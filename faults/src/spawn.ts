import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, Job } from './ipc.ts';
import type { Target } from './targets.ts';

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

/** A forked child process running one job. */
export interface Child {
  process: ChildProcess;
  /** Resolves with the exit code (or signal) once the process is gone and its channel drained. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready: boolean;
}

/**
 * Forks `src/child.ts` in a process of its own (its own store, its own connections) with an IPC
 * channel; `onMessage` sees every message in the order the child sent it. `nodeOptions` are
 * added to the child's node flags (`--expose-gc`).
 */
export function spawnChild(
  target: Target,
  job: Job,
  onMessage: (message: ChildMessage) => void,
  nodeOptions: string[] = [],
): Child {
  const child = fork(CHILD, [], {
    cwd: PACKAGE_DIR,
    execArgv: ['--import', 'tsx', '--conditions=source', ...nodeOptions],
    env: { ...process.env, FAULTS_TARGET: JSON.stringify(target), FAULTS_JOB: JSON.stringify(job) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const handle: Child = {
    process: child,
    ready: false,
    exited: new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal }))),
  };
  child.on('message', (message: ChildMessage) => {
    if (message.type === 'ready') handle.ready = true;
    onMessage(message);
  });
  return handle;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
