import type { DateRange, MessagePage, ThreadPage } from './contract.ts';
import { inDateRange, matchesMetadata, mergeMessageLists, pageInfo, pageOffset } from './helpers.ts';
import type { Direction, JsonObject, Message, Thread } from './records.ts';

/**
 * The reads an adapter supplies for `listMessages` and `listThreads`, and how core composes
 * them into pages: the merge with include windows, the order, the paging fields and, for
 * adapters that cannot filter metadata in their query, the filter and the slicing.
 */

/**
 * A row count: known, or counted on demand. A count that is a function runs only when the page
 * does not tell the total (a full page, or an empty page past the first), so most first pages
 * cost one query.
 */
export type RowCount = number | (() => Promise<number>);

/** What a driver's `messages.readPage` returns for one `listMessages` call. */
export interface MessageRead {
  /** The page of messages: `perPage` rows from `page × perPage`, in `direction` (none for `perPage: 0`). */
  page: Message[];
  /** How many messages match the thread, resource and date filters in all. */
  total: RowCount;
  /**
   * Every include window's messages, in any order, duplicates allowed: each target (in scope)
   * with up to `withPreviousMessages` before and `withNextMessages` after it in its own thread.
   */
  windows: Message[];
}

/** What a driver's `threads.readPage` returns for one `listThreads` call. */
export type ThreadRead =
  /** The page, filtered, ordered and sliced by the query, and the count of all matching threads. */
  | { kind: 'page'; threads: Thread[]; total: RowCount }
  /**
   * Every thread that may match, in the requested order, for a store whose query cannot compare
   * metadata values exactly: core keeps those whose metadata matches the filter (JSON equality,
   * key order ignored) and whose `createdAt` is in the date range, and slices the page.
   */
  | { kind: 'candidates'; threads: Thread[] };

/** The `LIMIT` and `OFFSET` of a page; `undefined` when every row is returned (`perPage: false`). */
export function pageLimit(
  page: number,
  perPage: number | false,
): { limit: number; offset: number } | undefined {
  return perPage === false ? undefined : { limit: perPage, offset: pageOffset(page, perPage) };
}

/** The rows of a page of `rows`. */
export function slicePage<T>(rows: T[], page: number, perPage: number | false): T[] {
  const paging = pageLimit(page, perPage);
  return paging ? rows.slice(paging.offset, paging.offset + paging.limit) : rows;
}

/**
 * The total behind a page of `rowsOnPage` rows: told by the page itself when it is partly
 * filled (or it is an empty first page, or every row was asked for), otherwise `count`.
 */
export async function pageTotal(
  rowsOnPage: number,
  page: number,
  perPage: number | false,
  count: RowCount,
): Promise<number> {
  if (typeof count === 'number') return count;
  const offset = pageOffset(page, perPage);
  if (
    perPage === false ||
    (rowsOnPage < perPage && rowsOnPage > 0) ||
    (rowsOnPage === 0 && offset === 0 && perPage > 0)
  ) {
    return offset + rowsOnPage;
  }
  return count();
}

/** A `listMessages` page from the adapter's read. */
export async function messagePage(
  read: MessageRead,
  args: { page: number; perPage: number | false; direction: Direction },
): Promise<MessagePage> {
  const total = await pageTotal(read.page.length, args.page, args.perPage, read.total);
  return {
    messages: mergeMessageLists([read.page, read.windows], args.direction),
    ...pageInfo(total, args.page, args.perPage),
  };
}

/** A `listThreads` page from the adapter's read. */
export async function threadPage(
  read: ThreadRead,
  args: { page: number; perPage: number | false; metadata?: JsonObject; dateRange?: DateRange },
): Promise<ThreadPage> {
  if (read.kind === 'candidates') {
    const matching = read.threads.filter(
      (t) => matchesMetadata(t.metadata, args.metadata) && inDateRange(t.createdAt, args.dateRange),
    );
    return {
      threads: slicePage(matching, args.page, args.perPage),
      ...pageInfo(matching.length, args.page, args.perPage),
    };
  }
  const total = await pageTotal(read.threads.length, args.page, args.perPage, read.total);
  return { threads: read.threads, ...pageInfo(total, args.page, args.perPage) };
}
