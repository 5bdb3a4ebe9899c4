import { Ledger, type Verdict, verify } from './checker.ts';
import type { ParentMessage } from './ipc.ts';
import { runId } from './services.ts';
import { type Child, sleep, spawnChild } from './spawn.ts';
import { leaseMs, openScene, openStore, type Target } from './targets.ts';

/** Options of `runStopped`. */
export interface StoppedOptions {
  target: Target;
  /** How many times the writer is stopped. Default 3. */
  stops?: number;
  /** Writers that write only while the stopped one stands still. Default 2. */
  others?: number;
}

/** What a stopped-writer run did and found. */
export interface StoppedResult {
  stops: number;
  /** How long each stop lasted, in ms. */
  stopMs: number;
  /** Acknowledged writes of the stopped writer, and of the others. */
  acks: { stopped: number; others: number };
  /** Error codes the writers saw (`CONFLICT` where others gave up waiting for a lock). */
  errors: Record<string, number>;
  /** Children that exited before they were told to stop. */
  unexpectedExits: string[];
  verdict: Verdict;
}

/** Parallel write loops of the stopped writer: enough that it nearly always holds a lock. */
const CHAINS = 6;
/** How long the stopped writer writes alone before each stop, and the others after it resumed. */
const BETWEEN_MS = 250;

/**
 * Stopped writer: one process merges working-memory, thread-metadata and resource-metadata keys
 * of one resource and thread in parallel loops, so that it nearly always holds whatever the store
 * locks or leases, and is stopped with SIGSTOP `stops` times, each time for twice the target's
 * lease (at least 1 s). Only while it stands still do the other writers merge keys of their own;
 * then it gets SIGCONT. A lock that is a lease and fences nothing lets the resumed writer write
 * back what it computed before the stop, erasing what the others wrote meanwhile. At the end a
 * fresh store checks every acknowledged key of every writer.
 */
export async function runStopped(options: StoppedOptions): Promise<StoppedResult> {
  const stops = options.stops ?? 5;
  const stopMs = Math.max(1_000, 2 * (await leaseMs(options.target)));
  const id = runId();
  const scene = await openScene(options.target, 'stop', 'stopped writer', id);

  const ledger = new Ledger();
  const acks = { stopped: 0, others: 0 };
  const errors: Record<string, number> = {};
  const unexpectedExits: string[] = [];
  let stopping = false;
  const spawn = (writer: string, gated: boolean): Child => {
    const child = spawnChild(
      options.target,
      { mode: 'stopped', writer, scene, chains: gated ? 1 : CHAINS, gated },
      (message) => {
        if (message.type === 'ack') {
          ledger.add(message.ack);
          acks[gated ? 'others' : 'stopped'] += 1;
        } else if (message.type === 'error') errors[message.code] = (errors[message.code] ?? 0) + 1;
      },
    );
    void child.exited.then(({ code, signal }) => {
      if (!stopping) unexpectedExits.push(`${writer} exited with ${signal ?? code}`);
    });
    return child;
  };
  const stopped = spawn('s', false);
  const others = Array.from({ length: options.others ?? 2 }, (_, i) => spawn(`o${i}`, true));
  const all = [stopped, ...others];
  const tell = (message: ParentMessage) => {
    for (const child of others) if (child.process.connected) child.process.send(message);
  };
  // Should this process exit mid-run (a killed test run), no writer may stay stopped with its
  // locks and connections held: they are killed on the way out.
  const reap = () => {
    for (const child of all) child.process.kill('SIGKILL');
  };
  process.on('exit', reap);
  try {
    await waitFor(() => all.every((c) => c.ready) && acks.stopped > 0, 60_000, 'the writers to start');
    for (let n = 0; n < stops; n += 1) {
      await sleep(BETWEEN_MS);
      stopped.process.kill('SIGSTOP');
      tell('open');
      await sleep(stopMs);
      stopped.process.kill('SIGCONT');
      await sleep(BETWEEN_MS);
      tell('close');
    }
  } finally {
    stopped.process.kill('SIGCONT');
    stopping = true;
    for (const child of all) if (child.process.connected) child.process.send('stop' satisfies ParentMessage);
    const exits = Promise.all(all.map((c) => c.exited));
    const timeout = setTimeout(() => {
      for (const child of all) child.process.kill('SIGKILL');
    }, 30_000);
    await exits;
    clearTimeout(timeout);
    process.off('exit', reap);
  }

  const checker = await openStore(options.target);
  try {
    await checker.init();
    const verdict = await verify(checker, ledger);
    return { stops, stopMs, acks, errors, unexpectedExits, verdict };
  } finally {
    await checker.close();
  }
}

async function waitFor(ok: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}
