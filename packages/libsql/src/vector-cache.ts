import { type MatrixRow, type VectorHit, VectorMatrix, type VectorSearch } from '@engram/core/driver';
import type { Connection } from './connection.ts';
import type { Result } from './embedded.ts';
import { IN_LIST, type Statement, TABLES } from './sql.ts';

const { messages, threads, vectors, vectorEpochs, messageCounts } = TABLES;

/** The bytes of vectors a store keeps between searches when the option is not given (256 MiB). */
export const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

/** A resource's vectors as read at `(epoch, seq)`. */
interface Entry {
  matrix: VectorMatrix;
  /** The resource's epoch when read: any other value means rows were deleted or moved since. */
  epoch: number;
  /** The highest vector `seq` of the whole table when read: rows above it are new or re-embedded. */
  seq: number;
}

/** Bumps the epoch of the resources of these messages (inside the write that deletes their vectors). */
export const bumpByMessages = (ids: string[]): Statement => ({
  sql: `INSERT INTO ${vectorEpochs} (resource_id, epoch)
        SELECT DISTINCT resource_id, 1 FROM ${messages} WHERE id ${IN_LIST}
        ON CONFLICT (resource_id) DO UPDATE SET epoch = epoch + 1`,
  args: [JSON.stringify(ids)],
});

/** Bumps the epoch of the thread's resource (inside the write that deletes the thread's vectors). */
export const bumpByThread = (threadId: string): Statement => ({
  sql: `INSERT INTO ${vectorEpochs} (resource_id, epoch) SELECT resource_id, 1 FROM ${threads} WHERE id = ?
        ON CONFLICT (resource_id) DO UPDATE SET epoch = epoch + 1`,
  args: [threadId],
});

/** The next `seq` of a vector written now: one above every stored one (writes hold the write lock). */
export const NEXT_SEQ = `(SELECT coalesce(max(seq), 0) + 1 FROM ${vectors})`;

const epochOf = (resourceId: string): Statement => ({
  sql: `SELECT coalesce((SELECT epoch FROM ${vectorEpochs} WHERE resource_id = ?), 0) AS epoch,
          (SELECT coalesce(max(seq), 0) FROM ${vectors}) AS seq`,
  args: [resourceId],
});

/** The resource's vectors: all of them, or those written after `afterSeq`. */
const rowsOf = (space: string, resourceId: string, afterSeq?: number): Statement => ({
  sql: `SELECT m.id, m.thread_id, m.created_at, v.hash, v.embedding
        FROM ${vectors} v JOIN ${messages} m ON m.id = v.message_id
        WHERE v.space = ? AND m.resource_id = ? ${afterSeq === undefined ? '' : 'AND v.seq > ?'}`,
  args: [space, resourceId, ...(afterSeq === undefined ? [] : [afterSeq])],
});

/** A blob column as floats (the driver hands blobs over as fresh, aligned `ArrayBuffer`s). */
const floats = (value: unknown) =>
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
 * across processes: every search first reads, in one snapshot, the resource's epoch (bumped in
 * the write that deletes vectors or moves a message to another thread or time) and the vectors
 * written since the copy was made (each write gives its vector the next `seq`). Same epoch: only
 * those rows are read and merged in. Another epoch: the resource is read again. A search after a
 * chat turn saved its messages therefore reads only that turn's vectors. Resources are evicted
 * least recently used beyond `maxBytes`; one larger than that is not kept (`search` returns
 * `null`, the caller scans in SQL).
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

  private read(statements: Statement[]): Promise<Result[]> {
    return this.connection.use((client) => client.batch(statements, 'read'));
  }

  private async refresh(key: string, { space, resourceId }: VectorSearch): Promise<VectorMatrix | null> {
    const entry = this.entries.get(key);
    this.entries.delete(key);
    if (entry) {
      const [head, tail] = await this.read([epochOf(resourceId), rowsOf(space.id, resourceId, entry.seq)]);
      const { epoch, seq } = head!.rows[0]!;
      if (Number(epoch) === entry.epoch) {
        for (const row of tail!.rows) entry.matrix.set(toRow(row));
        entry.seq = Number(seq);
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
    const [head, all] = await this.read([epochOf(resourceId), rowsOf(space.id, resourceId)]);
    const matrix = new VectorMatrix(space.dimensions);
    for (const row of all!.rows) matrix.set(toRow(row));
    const { epoch, seq } = head!.rows[0]!;
    this.entries.set(key, { matrix, epoch: Number(epoch), seq: Number(seq) });
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
