import type { MemoryStorage } from './contract.ts';
import { compareMessages } from './helpers.ts';
import type { Message, Thread } from './records.ts';

/**
 * Walks of a whole listing while the store may be written: every record stored all along is
 * read once, also when others are deleted meanwhile (which moves every later one to a lower
 * offset, so a page read at an offset would begin past records never read). A record written
 * meanwhile may or may not be read.
 *
 * Each page is read from the last record read, at an offset that keeps that record in the page:
 * what follows it there is what comes next, however many records before it were deleted or
 * written. If it is not there (it was deleted, or so many before it that it moved out of the
 * page), the listing is read again from its start, twice as long while it holds nothing after
 * the last record read, and kept to the records after it.
 */

/**
 * The threads of a resource (or of the whole store), oldest first, about `perPage` at a time. A
 * page is read from the `createdAt` of the last thread read, as `messagePages` reads messages.
 */
export function threadPages(
  storage: MemoryStorage,
  resourceId: string | undefined,
  perPage: number,
): AsyncGenerator<Thread[]> {
  return walk<Thread>(
    {
      read: async (from, page, size) => {
        const listed = await storage.listThreads({
          resourceId,
          page,
          perPage: size,
          orderBy: 'createdAt',
          direction: 'ASC',
          dateRange: from && { start: from.createdAt },
        });
        return { records: listed.threads, hasMore: listed.hasMore };
      },
      holds: sameInstant,
    },
    perPage,
  );
}

/**
 * A thread's messages in `(createdAt, id)` order, about `perPage` at a time, for export, clone
 * and counting a purge. A page is read from the `createdAt` of the last message read, so its
 * offset counts only the messages of that instant before it (many may share one).
 */
export function messagePages(
  storage: MemoryStorage,
  threadId: string,
  perPage: number,
): AsyncGenerator<Message[]> {
  return walk<Message>(
    {
      read: async (from, page, size) => {
        const listed = await storage.listMessages({
          threadId,
          page,
          perPage: size,
          dateRange: from && { start: from.createdAt },
        });
        return { records: listed.messages, hasMore: listed.hasMore };
      },
      holds: sameInstant,
    },
    perPage,
  );
}

/** Whether the listing read from the `createdAt` of `from` holds `record`, which comes before it. */
function sameInstant(from: Ordered, record: Ordered): boolean {
  return from.createdAt.getTime() === record.createdAt.getTime();
}

type Ordered = { id: string; createdAt: Date };

interface Listing<T extends Ordered> {
  /**
   * `size` records from `page × size` in `(createdAt, id)` order, of the listing read from
   * `from` (the whole listing when `undefined`), which holds `from` and what comes after it.
   */
  read(from: T | undefined, page: number, size: number): Promise<{ records: T[]; hasMore: boolean }>;
  /** Whether the listing read from `from` holds `record`, which comes before it (or is it). */
  holds(from: T, record: T): boolean;
}

/**
 * Pages of about `perPage` records (up to twice as many; more when a listing from the last
 * record read holds tens of thousands before it), each record stored all along once.
 */
async function* walk<T extends Ordered>(listing: Listing<T>, perPage: number): AsyncGenerator<T[]> {
  let last: T | undefined;
  /** How many records of the listing read from `last` come before it. */
  let before = 0;
  /** Read from the listing's start, this many (when `last` was not found at an offset). */
  let rescan = 0;
  for (;;) {
    const at = !last
      ? { page: 0, size: perPage }
      : rescan
        ? { page: 0, size: rescan }
        : resume(before, perPage);
    const { records, hasMore } = await listing.read(last, at.page, at.size);
    const index = last ? records.findIndex((r) => same(r, last as T)) : -1;
    if (last && index < 0 && at.page > 0) {
      rescan = perPage;
      continue;
    }
    const after =
      index >= 0 ? records.slice(index + 1) : records.filter((r) => !last || compareMessages(r, last) > 0);
    if (after.length > 0) {
      yield after;
      const next = after.at(-1) as T;
      const first = records.findIndex((r) => listing.holds(next, r));
      const skipped = first === 0 && (!last || listing.holds(next, last)) ? at.page * at.size : 0;
      before = skipped + records.length - 1 - first;
      last = next;
      rescan = 0;
    } else if (hasMore) {
      if (index >= 0)
        before = at.page * at.size + index; // records written ahead of it moved it on
      else rescan = Math.max(rescan, at.size) * 2;
    }
    if (!hasMore) return;
  }
}

/**
 * Where to read on from a record with `before` records of its listing ahead of it: an offset at
 * most `before` (so the page holds the record), as `page × size`, with `size` near the larger of
 * `perPage` and 2√`before` (so at most √`before`/2 records are read again).
 */
function resume(before: number, perPage: number): { page: number; size: number } {
  const span = Math.max(perPage, Math.ceil(2 * Math.sqrt(before)));
  if (before < span) return { page: 0, size: before + 1 + perPage };
  const page = Math.floor(before / span);
  return { page, size: Math.floor(before / page) };
}

/** The same record at the same place in the order (not one whose `createdAt` was changed). */
function same(a: Ordered, b: Ordered): boolean {
  return a.id === b.id && a.createdAt.getTime() === b.createdAt.getTime();
}
