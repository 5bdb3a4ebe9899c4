import type { Executor } from './connection.ts';
import { addToMessageCount, chunks, dropEmptyMessageCounts } from './sql.ts';

/**
 * The kept message counts (`engram_message_counts`): every write that adds, moves or removes
 * messages collects its changes here and applies them in the same transaction.
 */
/** Net changes to the kept message counts within one transaction. */
export class CountChanges {
  private readonly deltas = new Map<string, { threadId: string; resourceId: string; delta: number }>();

  add(threadId: string, resourceId: string, delta: number): void {
    const key = JSON.stringify([threadId, resourceId]);
    const entry = this.deltas.get(key) ?? { threadId, resourceId, delta: 0 };
    entry.delta += delta;
    this.deltas.set(key, entry);
  }

  async apply(tx: Executor): Promise<void> {
    const changed = [...this.deltas.values()].filter((entry) => entry.delta !== 0);
    if (changed.length > 0) {
      await tx.batch(
        changed.map(({ threadId, resourceId, delta }) => addToMessageCount(threadId, resourceId, delta)),
      );
    }
    const threadIds = [...new Set(changed.filter((entry) => entry.delta < 0).map((entry) => entry.threadId))];
    for (const ids of chunks(threadIds)) await tx.execute(dropEmptyMessageCounts(ids));
  }
}
