import { MemoryDriver, Store, type TurnDriver } from '@engram/core/driver';

/** A reference driver whose turn domain is `make` of the reference one. */
function storeWith(make: (inner: TurnDriver<never>) => TurnDriver<never>): Store {
  const driver = new MemoryDriver();
  driver.turns = make(driver.turns as TurnDriver<never>);
  return new Store(driver);
}

/** Rows at one instant come back by id ascending instead of descending. */
export function tiesAscendingTurnsStore(): Store {
  return storeWith((inner) => ({
    ...inner,
    list: async (threadId, limit, before) =>
      (await inner.list(threadId, 1_000, before))
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1))
        .slice(0, limit),
  }));
}

/** Deleting a message leaves the turn row that carries its id. */
export function orphanTurnsStore(): Store {
  return storeWith((inner) => ({ ...inner, deleteByMessages: async () => {} }));
}
