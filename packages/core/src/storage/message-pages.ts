import type { MemoryStorage } from './contract.ts';
import { compareMessages } from './helpers.ts';
import type { Message } from './records.ts';

/**
 * A thread's messages in `(createdAt, id)` order, `perPage` at a time, for reads that walk a
 * whole thread while it may be written (export, clone, counting a purge). Each page is read from
 * the newest `createdAt` read so far and kept to the messages after the last one read, not at an
 * offset: a message deleted meanwhile moves every later one to a lower offset, and the next page
 * would begin past messages never read. A page holding only messages read already (more than a
 * page share one `createdAt`) is read again twice as long. A message stored all along is read
 * once; one written meanwhile may or may not be.
 */
export async function* messagePages(
  storage: MemoryStorage,
  threadId: string,
  perPage: number,
): AsyncGenerator<Message[]> {
  let last: Message | undefined;
  for (let size = perPage; ; ) {
    const { messages, hasMore } = await storage.listMessages({
      threadId,
      perPage: size,
      dateRange: last && { start: last.createdAt },
    });
    const after = last ? messages.filter((m) => compareMessages(m, last as Message) > 0) : messages;
    if (after.length > 0) {
      yield after;
      last = after.at(-1);
      size = perPage;
    } else if (hasMore) {
      size *= 2;
    }
    if (!hasMore) return;
  }
}
