import { MessageCountChanges } from '@engram/core';
import type { Executor } from './connection.ts';
import { addToMessageCount, chunks, dropEmptyMessageCounts } from './sql.ts';

/**
 * Applies one transaction's changes to the kept message counts (`engram_message_counts`): every
 * write that adds, moves or removes messages collects them and applies them in the same
 * transaction.
 */
export class CountChanges extends MessageCountChanges {
  async apply(tx: Executor): Promise<void> {
    const changed = this.changes();
    if (changed.length > 0) {
      await tx.batch(
        changed.map(({ threadId, resourceId, delta }) => addToMessageCount(threadId, resourceId, delta)),
      );
    }
    const threadIds = [...new Set(changed.filter((entry) => entry.delta < 0).map((entry) => entry.threadId))];
    for (const ids of chunks(threadIds)) await tx.execute(dropEmptyMessageCounts(ids));
  }
}
