import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isMemoryError, type MemoryStorage, type Message } from '@engram/core';

/**
 * Writers racing a `deleteResource`: each one, round after round, creates a thread of the
 * resource, saves a batch of `BATCH` messages into it, replaces the thread's working memory and
 * the resource's. The suite checks what is left once the purge returned (`areas/purge.ts`).
 */

/** Messages per batch: all of them must be stored, or none. */
export const BATCH = 3;

/** The thread writer `writer` creates in round `round`. */
export function writerThreadId(resourceId: string, writer: string, round: number): string {
  return `${resourceId}-w${writer}-${round}`;
}

/** The ids of the batch saved into `threadId`. */
export function batchIds(threadId: string): string[] {
  return Array.from({ length: BATCH }, (_, k) => `${threadId}-m${k}`);
}

/** One acknowledged write: what it wrote, when it was called and when it was acknowledged (ms since the epoch). */
export interface WriterAck {
  kind: 'thread' | 'batch';
  threadId: string;
  from: number;
  at: number;
}

/** An acknowledgement as a racer reports it: `<kind> <from> <at> <threadId>`. */
export function ackKey(ack: WriterAck): string {
  return `${ack.kind} ${ack.from} ${ack.at} ${ack.threadId}`;
}

/** The acknowledgement of `ackKey`. */
export function parseAckKey(key: string): WriterAck {
  const [kind, from, at, ...rest] = key.split(' ');
  return { kind: kind as WriterAck['kind'], from: Number(from), at: Number(at), threadId: rest.join(' ') };
}

/** What one writer did: its acknowledged writes, refusals (a `MemoryError`) and other failures. */
export interface WriterLog {
  acks: WriterAck[];
  refused: number;
  failures: string[];
  /** The last round it started. */
  rounds: number;
}

/** How long a writer pauses between rounds, so that the purge it races can catch up. */
export const PACE_MS = 2;

/** Where a writer stops: after `rounds` rounds, or once `stop(round)` says so (asked before each round). */
export interface WriterPlan {
  resourceId: string;
  writer: string;
  rounds: number;
  stop: (round: number) => boolean | Promise<boolean>;
  /** Called after the first acknowledged write. */
  onFirstWrite?: () => void;
}

/** Runs one writer until its plan says stop; never throws. */
export async function purgeWriter(store: MemoryStorage, plan: WriterPlan): Promise<WriterLog> {
  const log: WriterLog = { acks: [], refused: 0, failures: [], rounds: 0 };
  const { resourceId } = plan;
  const attempt = async (run: () => Promise<unknown>, ack?: Omit<WriterAck, 'from' | 'at'>) => {
    const from = Date.now();
    try {
      await run();
      if (ack) log.acks.push({ ...ack, from, at: Date.now() });
      if (log.acks.length === 1 && ack) plan.onFirstWrite?.();
      return true;
    } catch (error) {
      if (isMemoryError(error)) log.refused++;
      else log.failures.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      return false;
    }
  };
  for (let round = 0; round < plan.rounds && !(await plan.stop(round)); round++) {
    log.rounds = round + 1;
    const threadId = writerThreadId(resourceId, plan.writer, round);
    const now = new Date();
    const created = await attempt(
      () =>
        store.createThread({
          id: threadId,
          resourceId,
          title: 'racing writer',
          metadata: {},
          createdAt: now,
          updatedAt: now,
        }),
      { kind: 'thread', threadId },
    );
    if (!created) continue;
    const batch: Message[] = batchIds(threadId).map((id, k) => ({
      id,
      threadId,
      resourceId,
      role: 'user',
      content: `message ${k} of ${threadId}`,
      type: 'text',
      createdAt: new Date(now.getTime() + k),
    }));
    await attempt(() => store.saveMessages(batch), { kind: 'batch', threadId });
    await attempt(() => store.updateThread({ id: threadId, metadata: { workingMemory: `# ${threadId}` } }));
    await attempt(() => store.updateResource({ resourceId, workingMemory: `# by ${threadId}` }));
    await sleep(PACE_MS);
  }
  return log;
}

/** A `WriterPlan.stop` that turns true once the file `path` exists. */
export function untilFile(path: string): () => boolean {
  return () => existsSync(path);
}

/** Writes `path` (whole) once: the signal that a racer has written something. */
export function signalFile(path: string): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    writeFileSync(path, String(process.pid));
  };
}
