/**
 * The `updatedAt` rule of threads, for every write that bumps one (`saveMessages`,
 * `updateMessages`, `deleteMessages`, `updateThread`, thread-scoped working-memory updates):
 *
 *   new updatedAt = max(stored updatedAt, the time of the write, the createdAt of every message
 *                       the write stores in the thread)
 *
 * so a thread's `updatedAt` never decreases, and is never older than the newest message it
 * holds: a message dated in the future carries it forward to that date (and it stays there
 * until the clock passes it). "The time of the write" is taken where the write holds its lock or
 * runs atomically (the database's clock where it has one), never before waiting for a lock.
 * `saveThread` and `createThread` store the record as given: they write a whole thread, as an
 * import or a restore does.
 */

/** The `updatedAt` a thread stored as `stored` gets from a write at `now` storing messages dated `dates`. */
export function bumpedUpdatedAt(stored: Date, now: Date, dates: Iterable<Date> = []): Date {
  let latest = Math.max(stored.getTime(), now.getTime());
  for (const date of dates) latest = Math.max(latest, date.getTime());
  return new Date(latest);
}

/** The newest `createdAt` per thread among `messages` (what a save stores in each thread). */
export function newestByThread(messages: Iterable<{ threadId: string; createdAt: Date }>): Map<string, Date> {
  const newest = new Map<string, Date>();
  for (const { threadId, createdAt } of messages) {
    const seen = newest.get(threadId);
    if (!seen || createdAt.getTime() > seen.getTime()) newest.set(threadId, createdAt);
  }
  return newest;
}
