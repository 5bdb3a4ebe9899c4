import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Memory } from '@engram/core';
import { percentile } from './measure.ts';
import type { OpenTarget } from './target.ts';
import { loadTarget } from './targets.ts';

/** What one side (engram or raw) of the contended-merge run measured. */
export interface ContentionResult {
  processes: number;
  mergesPerProcess: number;
  /** Wall time of the timed part: from the start signal to the last worker's report. */
  seconds: number;
  throughput: number;
  p50: number;
  p99: number;
  /** Calls of the update function beyond one per merge: optimistic retries (0 for row locks). */
  retries: number;
  keysExpected: number;
  keysSurvived: number;
  /** Merges that threw (e.g. `CONFLICT` past the retry bound), with the first error message. */
  failed: number;
  firstError?: string;
}

export type Side = 'engram' | 'raw';

/** Parent → worker: run one timed round, or leave. */
type Command = { run: Side; resourceId: string; merges: number } | { exit: true };
/** Worker → parent: connected and waiting, or the result of one round. */
type Report =
  | { ready: true }
  | { latencies: number[]; updateCalls: number; failed: number; firstError?: string };

const workerPath = fileURLToPath(import.meta.url);

/** What one timed round of one side measured, before it is summarised. */
interface TimedRound {
  processes: number;
  merges: number;
  seconds: number;
  latencies: number[];
  updateCalls: number;
  expected: number;
  survived: number;
  failed: number;
  firstError?: string;
}

/** One side's figures over its rounds: merges per second of all of them, percentiles of all. */
function summarise(side: Side, rounds: TimedRound[]): ContentionResult {
  const sum = (pick: (r: TimedRound) => number) => rounds.reduce((total, r) => total + pick(r), 0);
  const latencies = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const expected = sum((r) => r.expected);
  const seconds = sum((r) => r.seconds);
  const firstError = rounds.find((r) => r.firstError)?.firstError;
  return {
    processes: rounds[0]!.processes,
    mergesPerProcess: rounds[0]!.merges,
    seconds,
    throughput: expected / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    retries: side === 'engram' ? Math.max(0, sum((r) => r.updateCalls) - expected) : 0,
    keysExpected: expected,
    keysSurvived: sum((r) => r.survived),
    failed: sum((r) => r.failed),
    ...(firstError ? { firstError } : {}),
  };
}

/** Merges per worker in the untimed contended round of each side that `start` runs. */
const WARM_MERGES = 5;

/**
 * `processes` forked OS processes, each with its own connection to one backend. Start-up and
 * connecting happen before any timing; the same workers then run the engram and the raw rounds.
 */
export class ContentionPool {
  private constructor(
    private readonly target: string,
    private readonly children: ChildProcess[],
  ) {}

  static async start(target: string, processes: number): Promise<ContentionPool> {
    const children = Array.from({ length: processes }, (_, index) =>
      fork(workerPath, [target, String(index)], {
        execArgv: ['--import', 'tsx', '--conditions=source'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    const pool = new ContentionPool(target, children);
    try {
      await Promise.all(children.map((child, index) => nextReport(child, index)));
      // One short contended round of each side, untimed: the first contended round after
      // start-up runs slower whichever side it is (measured on libSQL: raw first, engram second
      // turned the order of the two).
      const warm = `contention-warm-${process.pid}-${Date.now().toString(36)}`;
      for (const side of ['engram', 'raw'] as const) await pool.run(side, `${warm}-${side}`, WARM_MERGES);
    } catch (error) {
      pool.stop();
      throw error;
    }
    return pool;
  }

  /** Every worker merges `merges` keys into `resourceId` at once; the workers' reports. */
  private run(side: Side, resourceId: string, merges: number) {
    return Promise.all(
      this.children.map((child, index) => {
        const report = nextReport(child, index);
        child.send({ run: side, resourceId, merges } satisfies Command);
        return report.then((r) => ({
          ...(r as Extract<Report, { latencies: number[] }>),
          at: performance.now(),
        }));
      }),
    );
  }

  /**
   * Both sides twice, in the order engram, raw, raw, engram, each into a fresh resource: each
   * side runs once before and once after the other, so drift on the machine during the four
   * rounds hits both alike. Each side's figures cover its two rounds together.
   */
  async alternated(
    resourceId: string,
    merges: number,
    check: OpenTarget,
  ): Promise<{ engram: ContentionResult; raw: ContentionResult }> {
    const rounds: Record<Side, TimedRound[]> = { engram: [], raw: [] };
    for (const [n, side] of (['engram', 'raw', 'raw', 'engram'] as const).entries()) {
      rounds[side].push(await this.timedRound(side, `${resourceId}-${side}-${n}`, merges, check));
    }
    return { engram: summarise('engram', rounds.engram), raw: summarise('raw', rounds.raw) };
  }

  /**
   * Every worker merges `merges` disjoint keys (`w<worker>_<n>`) into one resource's working
   * memory, all at once, through engram or the raw driver; then the surviving keys are counted
   * through `check`.
   */
  private async timedRound(
    side: Side,
    resourceId: string,
    merges: number,
    check: OpenTarget,
  ): Promise<TimedRound> {
    const start = performance.now();
    const results = await this.run(side, resourceId, merges);
    const seconds = (Math.max(...results.map((r) => r.at)) - start) / 1000;
    const latencies = results.flatMap((r) => r.latencies);
    const stored = await check.raw.getWorkingMemory(resourceId);
    const doc = stored ? (JSON.parse(stored) as Record<string, unknown>) : {};
    const processes = this.children.length;
    const expected = processes * merges;
    let survived = 0;
    for (let w = 0; w < processes; w++) for (let j = 0; j < merges; j++) if (`w${w}_${j}` in doc) survived++;
    const updateCalls = results.reduce((sum, r) => sum + r.updateCalls, 0);
    const failed = results.reduce((sum, r) => sum + r.failed, 0);
    const firstError = results.find((r) => r.firstError)?.firstError;
    return { processes, merges, seconds, latencies, updateCalls, expected, survived, failed, firstError };
  }

  /** Tells every worker to close its connection and exit, and waits for them. */
  async close(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.send({ exit: true } satisfies Command);
          }),
      ),
    );
  }

  private stop(): void {
    for (const child of this.children) if (child.exitCode === null) child.kill();
  }

  get name(): string {
    return this.target;
  }
}

/** The worker's next message; rejects when it exits first. */
function nextReport(child: ChildProcess, index: number): Promise<Report> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`contention worker ${index} exited with ${code}`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      resolve(message as Report);
    });
  });
}

async function workerMain(target: string, index: number): Promise<void> {
  const opened = await (await loadTarget(target)).open();
  const memory = new Memory({
    storage: opened.storage,
    options: { workingMemory: { enabled: true, schema: { type: 'object' } } },
  });
  let updateCalls = 0;
  const storage = opened.storage;
  const counted = storage.updateWorkingMemoryAtomically?.bind(storage);
  if (counted) {
    storage.updateWorkingMemoryAtomically = (args) =>
      counted({
        ...args,
        update: (current) => {
          updateCalls++;
          return args.update(current);
        },
      });
  }
  // Warm both sides (pools and clients connect lazily, code paths compile on first use) before
  // anything is timed: a few merges each into a resource of this worker's own.
  await storage.getResourceById({ resourceId: `warm-${index}` });
  await opened.raw.getWorkingMemory(`warm-${index}`);
  for (let j = 0; j < 5; j++) {
    await memory.mergeWorkingMemory({ resourceId: `warm-${index}`, workingMemory: { [`e${j}`]: j } });
    await opened.raw.mergeWorkingMemory(`warm-raw-${index}`, { [`r${j}`]: j });
  }
  process.on('message', (command: Command) => {
    if ('exit' in command) {
      opened.close().finally(() => process.exit(0));
      return;
    }
    runRound(command).then(
      (report) => process.send?.(report),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
  process.send?.({ ready: true } satisfies Report);

  async function runRound(command: Extract<Command, { run: Side }>): Promise<Report> {
    updateCalls = 0;
    const latencies: number[] = [];
    let failed = 0;
    let firstError: string | undefined;
    for (let j = 0; j < command.merges; j++) {
      const patch = { [`w${index}_${j}`]: j };
      const start = performance.now();
      try {
        if (command.run === 'engram') {
          await memory.mergeWorkingMemory({ resourceId: command.resourceId, workingMemory: patch });
        } else {
          await opened.raw.mergeWorkingMemory(command.resourceId, patch);
        }
      } catch (error) {
        // A merge that gives up is reported (and its key is missing), not fatal to the run.
        failed++;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
      latencies.push(performance.now() - start);
    }
    return { latencies, updateCalls, failed, ...(firstError ? { firstError } : {}) };
  }
}

if (process.send && process.argv[1] === workerPath) {
  workerMain(process.argv[2] as string, Number(process.argv[3])).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
