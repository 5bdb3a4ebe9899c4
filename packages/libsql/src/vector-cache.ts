import { type MatrixRow, type VectorHit, VectorMatrix, type VectorSearch } from '@engram/core/driver';
import type { Connection } from './connection.ts';
import type { Result } from './embedded.ts';
import { IN_LIST, type Statement, TABLES } from './sql.ts';

const { messages, vectors, vectorRemovals, vectorWrites, messageCounts } = TABLES;

/** The bytes of vectors a store keeps between searches when the option is not given (256 MiB). */
export const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

/**
 * Entries the removal log keeps: older ones are dropped by the write that adds new ones, and a
 * copy older than what is left reads its resource again.
 */
const REMOVALS_KEPT = 10_000;

/** A resource's vectors as read at `(seq, removed)`. */
interface Entry {
  matrix: VectorMatrix;
  /** The highest vector `seq` of the whole table when read: rows above it are new or written again. */
  seq: number;
  /** The highest removal-log entry when read: entries above it are removals to apply. */
  removed: number;
}

/**
 * Inside the write that deletes vectors, before they go: logs the removal of these messages'
 * vectors (or of every message of the thread that has one) for kept copies, and drops log
 * entries beyond the newest `REMOVALS_KEPT`.
 */
export function logRemoval(target: { messageIds: string[] } | { threadId: string }): (Statement | string)[] {
  const [where, arg] =
    'threadId' in target
      ? ['m.thread_id = ?', target.threadId]
      : [`m.id ${IN_LIST}`, JSON.stringify(target.messageIds)];
  return [
    {
      sql: `INSERT INTO ${vectorRemovals} (resource_id, message_id)
        SELECT m.resource_id, m.id FROM ${messages} m
        WHERE ${where} AND EXISTS (SELECT 1 FROM ${vectors} v WHERE v.message_id = m.id)`,
      args: [arg],
    },
    `DELETE FROM ${vectorRemovals} WHERE seq <= (SELECT max(seq) FROM ${vectorRemovals}) - ${REMOVALS_KEPT}`,
  ];
}

/**
 * Inside `deleteResource`'s last write, after every thread of the resource went: the log names
 * the resource and its messages no longer. When it holds entries of the resource, a blank entry
 * becomes the newest and every older entry goes (the resource's and all others), so each kept
 * copy that had not applied them all reads its resource again (see `VectorCache`), whatever
 * resource it holds; a copy that had applied them all goes on.
 */
export function eraseRemovals(resourceId: string): Statement[] {
  const named = `EXISTS (SELECT 1 FROM ${vectorRemovals} WHERE resource_id = ?)`;
  return [
    {
      sql: `INSERT INTO ${vectorRemovals} (resource_id, message_id) SELECT '', '' WHERE ${named}`,
      args: [resourceId],
    },
    {
      sql: `DELETE FROM ${vectorRemovals} WHERE seq < (SELECT max(seq) FROM ${vectorRemovals}) AND ${named}`,
      args: [resourceId],
    },
  ];
}

/**
 * The statements that give the vectors a write stores the next `seq`: first `BUMP_SEQ`, then
 * each row takes `NEXT_SEQ`, above every `seq` handed out before (writes hold the write lock). A
 * counter, not `max(seq) + 1`: that goes back when the newest vector is deleted, and a copy that
 * had read up to it would then miss the next write.
 */
export const BUMP_SEQ = `UPDATE ${vectorWrites} SET seq = seq + 1`;
export const NEXT_SEQ = `(SELECT seq FROM ${vectorWrites})`;

/** Where the table and the log stand: the newest vector `seq`, the oldest and newest log entries. */
const HEADS = `SELECT (SELECT seq FROM ${vectorWrites}) AS seq,
  (SELECT coalesce(min(seq), 0) FROM ${vectorRemovals}) AS oldest,
  (SELECT coalesce(max(seq), 0) FROM ${vectorRemovals}) AS removed`;

/** The removal-log entries of the resource after `removed`. */
const removalsOf = (resourceId: string, removed: number): Statement => ({
  sql: `SELECT message_id FROM ${vectorRemovals} WHERE seq > ? AND resource_id = ?`,
  args: [removed, resourceId],
});

/** The resource's vectors: all of them, or those written after `afterSeq`. */
const rowsOf = (space: string, resourceId: string, afterSeq?: number): Statement => ({
  // After `afterSeq`, CROSS JOIN keeps the vectors outermost: a range of the `seq` index, not
  // every message of the resource.
  sql: `SELECT m.id, m.thread_id, m.created_at, v.hash, v.embedding
        FROM ${vectors} v ${afterSeq === undefined ? 'JOIN' : 'CROSS JOIN'} ${messages} m ON m.id = v.message_id
        WHERE v.space = ? AND m.resource_id = ? ${afterSeq === undefined ? '' : 'AND v.seq > ?'}`,
  args: [space, resourceId, ...(afterSeq === undefined ? [] : [afterSeq])],
});

/** A blob column as floats (the driver hands blobs over as fresh, aligned `ArrayBuffer`s). */
export const floats = (value: unknown) =>
  value instanceof ArrayBuffer
    ? new Float32Array(value)
    : new Float32Array(new Uint8Array(value as Uint8Array).buffer);

const toRow = (row: Result['rows'][number]): MatrixRow => ({
  messageId: String(row.id),
  threadId: String(row.thread_id),
  hash: String(row.hash),
  createdAt: Number(row.created_at),
  vector: floats(row.embedding),
});

/**
 * Exact search over copies of each resource's vectors kept in process (`VectorMatrix`), valid
 * across processes: every search first reads, in one snapshot, what changed since the copy was
 * made and applies it — the removal-log entries of the resource (one per message, written by
 * the write that deletes vectors), then the vectors written since (each vector write gives its
 * rows the next `seq` of a counter; so does moving their message to another thread or time).
 * A search after a chat turn therefore reads only that turn's vectors, and one after a
 * delete only the log entry. A copy older than the oldest kept log entry reads its resource
 * again. Resources are evicted least recently used beyond `maxBytes`; one larger than that is
 * not kept (`search` returns `null`, the caller scans in SQL).
 */
export class VectorCache {
  private readonly entries = new Map<string, Entry>();
  /** Per resource, the tail of the searches refreshing it, so they apply rows in order. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly connection: Connection,
    private readonly maxBytes: number,
  ) {}

  /** The scope's best `topK` exactly, or `null` when the resource is too large to keep. */
  async search(args: VectorSearch): Promise<VectorHit[] | null> {
    const key = `${args.space.id}\u0000${args.resourceId}`;
    const refreshed = (this.queues.get(key) ?? Promise.resolve()).then(() => this.refresh(key, args));
    const tail = refreshed.catch(() => undefined);
    this.queues.set(key, tail);
    void tail.then(() => this.queues.get(key) === tail && this.queues.delete(key));
    const matrix = await refreshed;
    return matrix?.search(args) ?? null;
  }

  private read(statements: (Statement | string)[]): Promise<Result[]> {
    return this.connection.use((client) => client.batch(statements, 'read'));
  }

  private async refresh(key: string, { space, resourceId }: VectorSearch): Promise<VectorMatrix | null> {
    const entry = this.entries.get(key);
    this.entries.delete(key);
    if (entry) {
      const [heads, removals, written] = await this.read([
        HEADS,
        removalsOf(resourceId, entry.removed),
        rowsOf(space.id, resourceId, entry.seq),
      ]);
      const { seq, oldest, removed } = heads!.rows[0]!;
      // Entries after the copy's were dropped from the log: removals may be missing.
      if (Number(oldest) <= entry.removed + 1 || Number(removed) === entry.removed) {
        entry.matrix.delete(removals!.rows.map((row) => String(row.message_id)));
        for (const row of written!.rows) entry.matrix.set(toRow(row));
        [entry.seq, entry.removed] = [Number(seq), Number(removed)];
        this.entries.set(key, entry);
        return entry.matrix;
      }
    }
    const [counted] = await this.read([
      {
        sql: `SELECT coalesce(sum(n), 0) AS n FROM ${messageCounts} WHERE resource_id = ?`,
        args: [resourceId],
      },
    ]);
    if (Number(counted!.rows[0]!.n) * space.dimensions * 4 > this.maxBytes) return null;
    const [heads, all] = await this.read([HEADS, rowsOf(space.id, resourceId)]);
    const matrix = new VectorMatrix(space.dimensions);
    for (const row of all!.rows) matrix.set(toRow(row));
    const { seq, removed } = heads!.rows[0]!;
    this.entries.set(key, { matrix, seq: Number(seq), removed: Number(removed) });
    this.evict();
    return matrix;
  }

  /** Drops the least recently searched resources until the rest fit in `maxBytes`. */
  private evict(): void {
    let bytes = 0;
    for (const entry of this.entries.values()) bytes += entry.matrix.bytes;
    for (const [key, entry] of this.entries) {
      if (bytes <= this.maxBytes || this.entries.size === 1) break;
      bytes -= entry.matrix.bytes;
      this.entries.delete(key);
    }
  }
}
