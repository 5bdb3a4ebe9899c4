import type { RacerReport, RaceTask } from './tasks.ts';

/** Parent → racer. */
export type ToRacer = { type: 'start'; worker: string; task: RaceTask; racer: number } | { type: 'go' };

/** Racer → parent. */
export type FromRacer =
  | { type: 'ready' }
  | { type: 'done'; report: RacerReport }
  | { type: 'error'; message: string };
