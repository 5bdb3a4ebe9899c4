import { MemoryDriver, type ObservationDriver, type ObservationRow, Store } from '@engram/core/driver';

/** A reference driver whose observation logs are kept by `observations` below instead. */
function storeWith(make: (inner: ObservationDriver<never>) => ObservationDriver<never>): Store {
  const driver = new MemoryDriver();
  driver.observations = make(driver.observations as ObservationDriver<never>);
  return new Store(driver);
}

/** Swaps that never compare: the last writer wins, whatever it read. */
export function lastWriterWinsLogsStore(): Store {
  const logs = new Map<string, ObservationRow[]>();
  return storeWith((inner) => ({
    ...inner,
    head: async (key) => logs.get(key)?.at(-1) ?? null,
    generations: async (key) => logs.get(key) ?? [],
    swap: async (_expected, next) => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      const rows = (logs.get(next.key) ?? []).filter((r) => r.generation !== next.generation);
      logs.set(
        next.key,
        [...rows, next].sort((a, b) => a.generation - b.generation),
      );
      return true;
    },
    deleteByThread: async (_tx, threadId) => {
      logs.delete(`thread:${threadId}`);
    },
  }));
}

/** Deleting a thread leaves its observation log behind. */
export function orphanLogsStore(): Store {
  return storeWith((inner) => ({ ...inner, deleteByThread: async () => {} }));
}
