import type { Ack, Scene } from './workload.ts';

/** What a child process is asked to do, passed in `FAULTS_JOB`. */
export type Job =
  | {
      mode: 'crash';
      /** Unique per spawned process; prefixes every key and batch it writes. */
      writer: string;
      scene: Scene;
      /** Wrap the store in `AckBeforeCommitStore` with this delay (the meta-test). */
      ackBeforeCommitMs?: number;
    }
  | {
      mode: 'stopped';
      /** Unique per process; prefixes every key it writes. */
      writer: string;
      scene: Scene;
      /** Parallel write loops. */
      chains: number;
      /** Write only between the parent's `open` and `close` (else from the start). */
      gated: boolean;
    }
  | {
      mode: 'soak';
      writer: string;
      seconds: number;
      /** The resource and thread this process owns. */
      own: Scene;
      /** The resource every process merges into. */
      shared: Scene;
      /** Other processes' scenes: reads with `own.resourceId` must never see their data. */
      others: Scene[];
    }
  | {
      mode: 'observe';
      /** Unique per spawned process; prefixes every message it saves. */
      writer: string;
      scene: Scene;
    }
  | {
      mode: 'memory';
      writer: string;
      /** Operations to run in all. */
      operations: number;
      /** Operations run before the first RSS sample. */
      warmup: number;
    };

/** Messages from the parent to a `stopped` child: open or close its gate, or finish and exit. */
export type ParentMessage = 'open' | 'close' | 'stop';

/** Messages from a child process to the parent. */
export type ChildMessage =
  | { type: 'ready' }
  | { type: 'ack'; ack: Ack }
  /** A message saved and acknowledged (the observation scenario). */
  | { type: 'saved'; id: string }
  | { type: 'error'; code: string; message: string }
  | { type: 'done'; operations: number; invariants: number; violations: string[] }
  | {
      type: 'memory';
      operations: number;
      /** RSS in bytes after the warm-up operations and at the end, each after a full GC. */
      rssAfterWarmup: number;
      rssAtEnd: number;
      /** V8's heap in use plus external buffers, in bytes, sampled with the RSS. */
      heapAfterWarmup: number;
      heapAtEnd: number;
      /** How long the operations after the warm-up took. */
      seconds: number;
    };

/** Sends a message to the parent and resolves once it is handed to the IPC channel. */
export function report(message: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) {
      reject(new Error('not started with an IPC channel'));
      return;
    }
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}
