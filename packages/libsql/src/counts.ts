import { MessageCountChanges } from '@engram/core/adapter';
import type { Executor } from './connection.ts';
import { addToMessageCounts, CHUNK, chunks, dropEmptyMessageCounts } from './sql.ts';

/**
 * Applies one transaction's changes to the kept message counts (`engram_message_counts`): every
 * write that adds, moves or removes messages collects them and applies them in the same
 * transaction.
 */
export class CountChanges extends MessageCountChanges {
  async apply(tx: Executor): Promise<void> {
    const changed = this.changes();
    // One statement per CHUNK / 3 changes (three parameters each).
    const size = Math.floor(CHUNK / 3);
    for (let i = 0; i < changed.length; i += size) {
      await tx.execute(addToMessageCounts(changed.slice(i, i + size)));
    }
    const threadIds = [...new Set(changed.filter((entry) => entry.delta < 0).map((entry) => entry.threadId))];
    for (const ids of chunks(threadIds)) await tx.execute(dropEmptyMessageCounts(ids));
  }
}
