import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FromRacer, ToRacer } from './protocol.ts';
import type { RacerReport, RaceTask } from './tasks.ts';

/** How long a whole cross-process race may take before its racers are killed. */
const RACE_TIMEOUT_MS = 90_000;

/** The `file:` URL of a worker given as a URL, a `file:` URL string or a path. */
export function workerHref(worker: URL | string): string {
  if (worker instanceof URL) return worker.href;
  if (/^[a-z][a-z0-9+.-]*:/i.test(worker) && !/^[a-z]:[\\/]/i.test(worker)) return worker;
  return pathToFileURL(isAbsolute(worker) ? worker : resolve(worker)).href;
}

/** The racer entry point next to this file (`.ts` from sources, `.mjs`/`.js` when built). */
function runnerPath(): string {
  for (const ext of ['.ts', '.mjs', '.js']) {
    const path = fileURLToPath(new URL(`./worker-runner${ext}`, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('worker-runner not found next to the conformance harness');
}

/** Node flags for racers: the tsx loader (so workers may be TypeScript) and the `source` condition. */
export function racerExecArgv(): string[] {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return ['--import', tsx, '--conditions=source'];
}

/**
 * Forks `processes` OS processes that each import `worker`, create their own store, wait
 * until all are ready, then run their share of `task` at once. Returns one report per racer.
 */
export async function raceProcesses(
  worker: URL | string,
  task: RaceTask,
  processes: number,
): Promise<RacerReport[]> {
  const href = workerHref(worker);
  const children: ChildProcess[] = [];
  const kill = () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  };
  const timer = setTimeout(kill, RACE_TIMEOUT_MS);
  try {
    const ready: Promise<void>[] = [];
    const done: Promise<RacerReport>[] = [];
    for (let racer = 0; racer < processes; racer++) {
      const child = fork(runnerPath(), [], {
        execArgv: racerExecArgv(),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: process.env,
      });
      children.push(child);
      const failed = new Promise<never>((_, reject) => {
        child.on('message', (message: FromRacer) => {
          if (message.type === 'error') reject(new Error(`racer ${racer} failed: ${message.message}`));
        });
        child.on('exit', (code, signal) => {
          reject(new Error(`racer ${racer} exited (${signal ?? `code ${code}`}) before reporting`));
        });
        child.on('error', reject);
      });
      failed.catch(() => undefined);
      ready.push(Promise.race([waitFor(child, 'ready').then(() => undefined), failed]));
      done.push(
        Promise.race([
          waitFor(child, 'done').then((m) => (m as Extract<FromRacer, { type: 'done' }>).report),
          failed,
        ]),
      );
      const start: ToRacer = { type: 'start', worker: href, task, racer };
      child.send(start);
    }
    await Promise.all(ready);
    for (const child of children) child.send({ type: 'go' } satisfies ToRacer);
    return await Promise.all(done);
  } catch (error) {
    kill();
    throw error;
  } finally {
    clearTimeout(timer);
    await Promise.all(children.map(exited));
    kill();
  }
}

function waitFor(child: ChildProcess, type: FromRacer['type']): Promise<FromRacer> {
  return new Promise((resolve) => {
    const listener = (message: FromRacer) => {
      if (message.type !== type) return;
      child.off('message', listener);
      resolve(message);
    };
    child.on('message', listener);
  });
}

/** Resolves when the child has exited, or after a grace period (then it is killed). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve();
    }, 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
