import type { MemoryStorage } from '../storage/contract.ts';
import { observationKey } from '../storage/observations.ts';
import { threadTurns } from '../storage/turns.ts';
import {
  type MemoryRecord,
  messageRecord,
  observationRecord,
  resourceRecord,
  threadRecord,
  turnLine,
  vectorRecord,
} from './records.ts';

/** Threads, and messages of one thread, read per page. */
const PAGE = 500;

/**
 * Every record of one resource, streamed page by page (memory stays bounded by a page): the
 * resource row, then each thread (oldest first) followed by its messages in `(createdAt, id)`
 * order (each page of messages followed by their vectors, when the store can read vectors back:
 * `vectors.readVectors`), its turn records (newest first, as `turns.list` reads them) and its
 * observation log, then the resource's own observation log.
 */
export async function* exportResource(
  storage: MemoryStorage,
  resourceId: string,
): AsyncGenerator<MemoryRecord> {
  const resource = await storage.getResourceById({ resourceId });
  if (resource) yield resourceRecord(resource);
  const log = storage.observations;
  const read = storage.vectors?.readVectors?.bind(storage.vectors);
  const space = read ? await storage.vectors?.getSpace() : null;
  for (let page = 0; ; page++) {
    const threads = await storage.listThreads({ resourceId, page, perPage: PAGE, direction: 'ASC' });
    for (const thread of threads.threads) {
      yield threadRecord(thread);
      for (let p = 0; ; p++) {
        const { messages, hasMore } = await storage.listMessages({
          threadId: thread.id,
          page: p,
          perPage: PAGE,
        });
        for (const message of messages) yield messageRecord(message);
        if (space && read && messages.length > 0)
          for (const row of await read(
            space,
            messages.map((m) => m.id),
          ))
            yield vectorRecord(space, resourceId, row);
        if (!hasMore) break;
      }
      if (storage.turns) for await (const row of threadTurns(storage.turns, thread.id)) yield turnLine(row);
      if (log)
        for (const row of await log.generations(observationKey('thread', thread.id)))
          yield observationRecord(row);
    }
    if (!threads.hasMore) break;
  }
  if (log)
    for (const row of await log.generations(observationKey('resource', resourceId)))
      yield observationRecord(row);
}
