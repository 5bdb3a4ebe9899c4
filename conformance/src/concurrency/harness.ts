import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FromRacer, ToRacer } from './protocol.ts';
import type { RacerReport, RaceTask } from './tasks.ts';

/** How long starting the racers, or one race, may take before the racers are killed. */
const TIMEOUT_MS = 90_000;
/** Racers left idle this long are shut down (the next race starts new ones). */
const IDLE_MS = 1_500;

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

/**
 * Node flags for racers: the tsx loader, so workers may be TypeScript, and — when this suite
 * itself runs from its sources, as in the engram workspace — the `source` export condition, so
 * workspace packages resolve to their sources too. Published packages do not ship sources, so
 * the condition is left out when running from the built files.
 */
export function racerExecArgv(): string[] {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return import.meta.url.endsWith('.ts') ? ['--import', tsx, '--conditions=source'] : ['--import', tsx];
}

/**
 * `processes` forked OS processes, each with its own store created by the worker module.
 * Started once and reused by consecutive races; shut down when idle.
 */
class RacerPool {
  private readonly children: ChildProcess[] = [];
  private readonly started: Promise<void>;
  private failure: Error | undefined;
  private idle: NodeJS.Timeout | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  closed = false;

  constructor(
    readonly href: string,
    readonly processes: number,
    private readonly onClose: () => void,
    options: RaceOptions = {},
  ) {
    for (let racer = 0; racer < processes; racer++) {
      const child = fork(runnerPath(), [], {
        execArgv: racerExecArgv(),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, ...options.env },
      });
      child.on('message', (message: FromRacer) => {
        if (message.type === 'error') this.fail(new Error(`racer ${racer} failed: ${message.message}`));
      });
      child.on('exit', (code, signal) => {
        if (!this.closed) this.fail(new Error(`racer ${racer} exited (${signal ?? `code ${code}`})`));
      });
      child.on('error', (error) => this.fail(error));
      this.children.push(child);
      exiting.add(exitOf(child));
    }
    this.started = this.all('ready', (_child, racer) => ({
      type: 'init',
      worker: href,
      racer,
      lazy: options.lazy,
    })).then(() => undefined);
    // A racer that fails while starting rejects `started` before a race awaits it; that race
    // still sees the failure (it awaits `started`), but the rejection must not go unhandled.
    this.started.catch(() => undefined);
  }

  /** Runs one race on every racer at once; races on one pool run one after another. */
  race(task: RaceTask): Promise<RacerReport[]> {
    const run = this.queue.then(async () => {
      clearTimeout(this.idle);
      await this.started;
      const done = await this.all('done', () => ({ type: 'task', task }));
      this.idle = setTimeout(() => this.close(), IDLE_MS);
      this.idle.unref();
      return done.map((m) => (m as Extract<FromRacer, { type: 'done' }>).report);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Asks every racer to close its store and exit; kills any that linger. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idle);
    this.onClose();
    for (const child of this.children) {
      if (child.connected) child.send({ type: 'exit' } satisfies ToRacer);
      const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
      kill.unref();
      child.once('exit', () => clearTimeout(kill));
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.closed = true;
    this.onClose();
    for (const child of this.children) if (child.exitCode === null) child.kill('SIGKILL');
  }

  /** Sends each racer a message and waits for every one to answer with `type`. */
  private all(
    type: FromRacer['type'],
    message: (child: ChildProcess, racer: number) => ToRacer,
  ): Promise<FromRacer[]> {
    return new Promise((resolvePromise, reject) => {
      if (this.failure) return reject(this.failure);
      const answers: FromRacer[] = [];
      let pending = this.children.length;
      const listeners: [ChildProcess, (m: FromRacer) => void][] = [];
      const cleanup = () => {
        clearTimeout(timer);
        clearInterval(watch);
        for (const [child, listener] of listeners) child.off('message', listener);
      };
      const timer = setTimeout(() => {
        cleanup();
        const error = new Error(`racers did not answer '${type}' within ${TIMEOUT_MS / 1000} s`);
        this.fail(error);
        reject(error);
      }, TIMEOUT_MS);
      const watch = setInterval(() => {
        if (!this.failure) return;
        cleanup();
        reject(this.failure);
      }, 50);
      this.children.forEach((child, racer) => {
        const listener = (m: FromRacer) => {
          if (m.type !== type) return;
          answers[racer] = m;
          if (--pending === 0) {
            cleanup();
            resolvePromise(answers);
          }
        };
        listeners.push([child, listener]);
        child.on('message', listener);
        child.send(message(child, racer));
      });
    });
  }
}

/** How racers are started. */
export interface RaceOptions {
  /** Added to the environment the racers inherit (e.g. to point them at a fresh store). */
  env?: Record<string, string>;
  /** Racers create their store but leave `init()` to the task. */
  lazy?: boolean;
}

const pools = new Map<string, RacerPool>();
/** The exit of every racer started and not yet gone, idle pools' included. */
const exiting = new Set<Promise<void>>();

/** Settles when `child` has exited, and then leaves `exiting`. */
function exitOf(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolveExit) => {
    if (child.exitCode !== null || child.signalCode !== null) resolveExit();
    else child.once('exit', () => resolveExit());
  });
  void exited.then(() => exiting.delete(exited));
  return exited;
}

/**
 * Shuts down every racer now, idle or not, and waits until each has exited (a lingering one is
 * killed after 5 s). For test runs that remove what the racers wrote (a store's folder) when
 * they end: a racer still closing its store may write there meanwhile.
 */
export async function closeRacers(): Promise<void> {
  for (const pool of [...pools.values()]) pool.close();
  while (exiting.size > 0) await Promise.all([...exiting]);
}

/**
 * Runs `task` on `processes` OS processes that each imported `worker` and created their own
 * store; every racer starts its share at once. Returns one report per racer.
 */
export function raceProcesses(
  worker: URL | string,
  task: RaceTask,
  processes: number,
  options: RaceOptions = {},
): Promise<RacerReport[]> {
  const href = workerHref(worker);
  // Racers inherit the environment they were started with; a changed one needs new racers.
  const env = { ...process.env, ...options.env };
  const key = `${processes}:${href}:${options.lazy === true}:${JSON.stringify(env)}`;
  const existing = pools.get(key);
  const pool =
    existing && !existing.closed
      ? existing
      : new RacerPool(
          href,
          processes,
          () => {
            if (pools.get(key) === pool) pools.delete(key);
          },
          options,
        );
  pools.set(key, pool);
  return pool.race(task);
}
