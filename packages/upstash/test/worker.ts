import type { MemoryStorage } from '@engram/core';
import { testStore } from './stores.ts';

/** Forked by the conformance suite's concurrency area; connection details come from env. */
export async function create(): Promise<MemoryStorage> {
  return testStore();
}
