import type { MemoryStorage } from '@engram/core';
import { OracleStore } from '../src/index.ts';
import { workerOptions } from './env.ts';

/** A store of its own, in a process of its own, for the cross-process races. */
export async function create(): Promise<MemoryStorage> {
  return new OracleStore(workerOptions());
}
