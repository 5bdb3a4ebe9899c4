import type { DateRange, Direction, JsonObject, NormalizedListThreads } from '@engram/core/adapter';
import type { Filter, Sort } from 'mongodb';
import type { MessageDocument, ThreadDocument } from './collections.ts';
import { assertStorableString, encodeKey, valueHash } from './encoding.ts';

/**
 * Filters and sort orders, built only from validated ids, dates and hashes: no caller value is
 * ever placed where MongoDB would read it as an operator.
 */

function order(direction: Direction): 1 | -1 {
  return direction === 'ASC' ? 1 : -1;
}

/** `listThreads`: equality on the resource and on each metadata key's hash. */
export function threadFilter(args: { resourceId?: string; metadata?: JsonObject }): Filter<ThreadDocument> {
  const filter: Record<string, unknown> = {};
  if (args.resourceId !== undefined) filter.resourceId = args.resourceId;
  for (const [key, value] of Object.entries(args.metadata ?? {})) {
    assertStorableString(key, 'a key of metadata');
    filter[`metadataHash.${encodeKey(key)}`] = valueHash(value);
  }
  return filter as Filter<ThreadDocument>;
}

/** `listThreads` order: the chosen date, ties by id, both in `direction`. */
export function threadSort(args: NormalizedListThreads): Sort {
  const dir = order(args.direction);
  return [
    [args.orderBy, dir],
    ['_id', dir],
  ];
}

/** Message order `(createdAt, _id)` in `direction`; served by the `thread_created` index. */
export function messageSort(direction: Direction): Sort {
  const dir = order(direction);
  return [
    ['createdAt', dir],
    ['_id', dir],
  ];
}

/** The page filter of `listMessages`: thread, optional resource, optional date range. */
export function messageFilter(
  threadId: string,
  resourceId: string | undefined,
  range?: DateRange,
): Filter<MessageDocument> {
  const filter: Filter<MessageDocument> = { threadId, ...scope(resourceId) };
  if (range && (range.start || range.end)) {
    const createdAt: { $gt?: Date; $gte?: Date; $lt?: Date; $lte?: Date } = {};
    if (range.start) createdAt[range.startExclusive ? '$gt' : '$gte'] = range.start;
    if (range.end) createdAt[range.endExclusive ? '$lt' : '$lte'] = range.end;
    filter.createdAt = createdAt;
  }
  return filter;
}

/** `{ resourceId }` when a resource restricts the query, else nothing. */
export function scope(resourceId: string | undefined): { resourceId?: string } {
  return resourceId === undefined ? {} : { resourceId };
}

/**
 * Messages of `target`'s thread strictly before (`'before'`) or after it in `(createdAt, _id)`
 * order, within the same resource restriction.
 */
export function besideFilter(
  target: MessageDocument,
  side: 'before' | 'after',
  resourceId: string | undefined,
): Filter<MessageDocument> {
  const op = side === 'before' ? '$lt' : '$gt';
  return {
    threadId: target.threadId,
    ...scope(resourceId),
    $or: [
      { createdAt: { [op]: target.createdAt } },
      { createdAt: target.createdAt, _id: { [op]: target._id } },
    ],
  };
}
