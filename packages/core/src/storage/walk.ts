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
 * A thread's messages in `(createdAt, id)` order, about `perPage` at a time (up to twice as many;
 * more when tens of thousands share one instant), for export, clone and counting a purge. Each
 * page is read from the last message read: within its `createdAt`, at an offset that keeps that
 * message in the page, so the messages before it are not read again (many may share one
 * instant), and what follows it in the page is what comes next. If it is not there (it or some
 * before it were deleted), the page is read again from the first message of that instant and
 * kept to those after it, twice as long while it holds none.
 */
export async function* messagePages(
  storage: MemoryStorage,
  threadId: string,
  perPage: number,
): AsyncGenerator<Message[]> {
  let last: Message | undefined;
  /** How many messages of `last`'s instant come before it. */
  let before = 0;
  /** From the first message of `last`'s instant, this many (when not at an offset). */
  let rescan = 0;
  for (;;) {
    const at = !last
      ? { page: 0, size: perPage }
      : rescan
        ? { page: 0, size: rescan }
        : resume(before, perPage);
    const { messages, hasMore } = await storage.listMessages({
      threadId,
      page: at.page,
      perPage: at.size,
      dateRange: last && { start: last.createdAt },
    });
    const index = last ? messages.findIndex((m) => same(m, last as Message)) : -1;
    if (last && index < 0 && at.page > 0) {
      rescan = perPage;
      continue;
    }
    const after =
      index >= 0 ? messages.slice(index + 1) : messages.filter((m) => !last || compareMessages(m, last) > 0);
    if (after.length > 0) {
      yield after;
      const next = after.at(-1) as Message;
      const time = next.createdAt.getTime();
      const first = messages.findIndex((m) => m.createdAt.getTime() === time);
      const skipped = last?.createdAt.getTime() === time && first === 0 ? at.page * at.size : 0;
      before = skipped + messages.length - 1 - first;
      last = next;
      rescan = 0;
    } else if (hasMore) {
      if (index >= 0)
        before = at.page * at.size + index; // messages written ahead of it moved it on
      else rescan = Math.max(rescan, at.size) * 2;
    }
    if (!hasMore) return;
  }
}

/**
 * Where to read on from a message with `before` messages of its instant ahead of it: an offset
 * at most `before` (so the page holds the message), as `page × size`, with `size` near the larger
 * of `perPage` and 2√`before` (so at most √`before`/2 messages are read again).
 */
function resume(before: number, perPage: number): { page: number; size: number } {
  const span = Math.max(perPage, Math.ceil(2 * Math.sqrt(before)));
  if (before < span) return { page: 0, size: before + perPage };
  const page = Math.floor(before / span);
  return { page, size: Math.floor(before / page) };
}

/** The same message at the same place in the order (not one whose `createdAt` was changed). */
function same(a: Message, b: Message): boolean {
  return a.id === b.id && a.createdAt.getTime() === b.createdAt.getTime();
}
