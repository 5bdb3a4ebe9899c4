import type { ConformanceInit } from '../../src/index.ts';
import { BreakableMemoryStore, memoryRows, unreachableWithSecret } from './breakable.ts';

/** `breakConnection` for the breakable in-memory stores. */
export const breakMemory: ConformanceInit['breakConnection'] = (store) => {
  (store as BreakableMemoryStore).breakBackend();
};

/** The reference store, breakable, as an initializer. */
export const referenceInit: ConformanceInit = {
  name: 'memory',
  create: () => new BreakableMemoryStore(),
  breakConnection: breakMemory,
  withSecret: unreachableWithSecret,
  storedRows: memoryRows,
};
