import type { RacerReport, RaceTask } from './tasks.ts';

/** Parent → racer. */
export type ToRacer =
  /** Import the worker module, create and (unless `lazy`) init a store, answer `ready`. */
  | { type: 'init'; worker: string; racer: number; lazy?: boolean }
  /** Run this racer's share of a task at once, answer `done`. */
  | { type: 'task'; task: RaceTask }
  /** Close the store and exit. */
  | { type: 'exit' };

/** Racer → parent. */
export type FromRacer =
  | { type: 'ready' }
  | { type: 'done'; report: RacerReport }
  | { type: 'error'; message: string };
