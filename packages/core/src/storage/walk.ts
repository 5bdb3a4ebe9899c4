import type { MemoryStorage } from './contract.ts';
import { compareMessages } from './helpers.ts';
import type { Message, Thread } from './records.ts';

/**
 * Walks of a whole listing while the store may be written: every record stored all along is
 * read once, also when others are deleted meanwhile (which moves every later one to a lower
 * offset, so a page read at an offset would begin past records never read). A record written
 * meanwhile may or may not be read.
 */

/**
 * The threads of a resource (or of the whole store), oldest first, `perPage` at a time, each
 * once: listed a second time when there was more than one page, for a thread a page missed
 * (unless threads are still being deleted during that second listing; `listThreads` has no
 * bound to start a page from).
 */
export async function* threadPages(
  storage: MemoryStorage,
  resourceId: string | undefined,
  perPage: number,
): AsyncGenerator<Thread[]> {
  const seen = new Set<string>();
  let paged = false;
  for (let pass = 0; pass < (paged ? 2 : 1); pass++) {
    for (let page = 0; ; page++) {
      const { threads, hasMore } = await storage.listThreads({
        resourceId,
        page,
        perPage,
        orderBy: 'createdAt',
        direction: 'ASC',
      });
      paged ||= hasMore;
      const unseen = threads.filter((thread) => !seen.has(thread.id));
      for (const thread of unseen) seen.add(thread.id);
      if (unseen.length > 0) yield unseen;
      if (!hasMore) break;
    }
  }
}

/**
 * A thread's messages in `(createdAt, id)` order, `perPage` at a time (export, clone, counting a
 * purge). Each page is read from the newest `createdAt` read so far and kept to the messages
 * after the last one read, not at an offset. A page holding only messages read already (more
 * than a page share one `createdAt`) is read again twice as long.
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
