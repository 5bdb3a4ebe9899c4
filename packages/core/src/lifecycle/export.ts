import type { MemoryStorage } from '../storage/contract.ts';
import { observationKey } from '../storage/observations.ts';
import { threadTurns } from '../storage/turns.ts';
import { messagePages, threadPages } from '../storage/walk.ts';
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
 *
 * The store may be written while it is read. A thread or message stored all along is exported,
 * once, even when others are deleted meanwhile (which moves everything after them to a lower
 * offset): each page starts from the last record read, found again in the page (see
 * `storage/walk.ts`). A record added meanwhile may or may not be exported.
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
  for await (const threads of threadPages(storage, resourceId, PAGE))
    for (const thread of threads) {
      yield threadRecord(thread);
      for await (const messages of messagePages(storage, thread.id, PAGE)) {
        for (const message of messages) yield messageRecord(message);
        if (!space || !read) continue;
        // In the messages' order: a store reads vectors back in any order (PostgreSQL's changes
        // as rows are written again), and two exports of the same records are the same text.
        const place = new Map(messages.map((m, i) => [m.id, i]));
        const rows = await read(
          space,
          messages.map((m) => m.id),
        );
        rows.sort((a, b) => (place.get(a.messageId) ?? 0) - (place.get(b.messageId) ?? 0));
        for (const row of rows) yield vectorRecord(space, resourceId, row);
      }
      if (storage.turns) for await (const row of threadTurns(storage.turns, thread.id)) yield turnLine(row);
      if (log)
        for (const row of await log.generations(observationKey('thread', thread.id)))
          yield observationRecord(row);
    }
  if (log)
    for (const row of await log.generations(observationKey('resource', resourceId)))
      yield observationRecord(row);
}
