import type { CompareAndSetWorkingMemory, WorkingMemoryCell } from '@engram/core/driver';
import { beginWith, type Connection, commitWith } from './connection.ts';
import { timestamp } from './mapping.ts';
import type { Statements } from './sql.ts';

/**
 * Working-memory updates: a read, then a write only if the stored value is still the one read (a
 * compare-and-set on the value, all the update depends on: core's versions are not stored). After
 * a lost race, under a row lock (`SELECT … FOR UPDATE`), in two round trips (`beginWith`, `commitWith`).
 */
export function workingMemory(db: Connection, sql: Statements): CompareAndSetWorkingMemory<string | null> {
  const id = (cell: WorkingMemoryCell) => (cell.scope === 'resource' ? cell.resourceId : cell.threadId);
  const text = (memory: unknown) => (typeof memory === 'string' ? memory : null);
  return {
    kind: 'compareAndSet',
    read: async (cell) => {
      const read = cell.scope === 'resource' ? sql.resourceMemory : sql.threadMemory;
      const [row] = await db.query<{ memory: unknown }>(read, [id(cell)], true);
      if (!row) return null;
      return { value: text(row.memory), version: row.memory == null ? null : JSON.stringify(row.memory) };
    },
    write: async (cell, expected, value) => {
      const version = expected?.version ?? null;
      const now = timestamp(new Date());
      const [text, values] =
        cell.scope === 'resource'
          ? [sql.compareAndSetResourceMemory, [cell.resourceId, value, now, version, expected !== null]]
          : [sql.compareAndSetThreadMemory, [cell.threadId, value, version]];
      return (await db.query(text, values, true)).length === 1;
    },
    afterLostRace: {
      kind: 'locked',
      // A missing resource is created first, so that its row can be locked.
      update: (cell, apply) =>
        db.transaction(async (client) => {
          const now = timestamp(new Date());
          const lock = cell.scope === 'resource' ? sql.lockResourceMemory : sql.lockThreadMemory;
          let [found] = await beginWith<{ memory: unknown }>(client, lock, [id(cell)]);
          if (!found && cell.scope === 'resource') {
            await client.query(sql.ensureResource, [cell.resourceId, now]);
            [found] = (await client.query(lock, [cell.resourceId])).rows;
          }
          if (!found) {
            await client.query('ROLLBACK');
            return false;
          }
          const value = apply(text(found.memory));
          if (cell.scope === 'resource') {
            await commitWith(client, sql.writeResourceMemory, [cell.resourceId, value, now]);
          } else await commitWith(client, sql.writeThreadMemory, [cell.threadId, value]);
          return true;
        }, true),
    },
  };
}
