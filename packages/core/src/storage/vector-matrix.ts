import { compareHits, type VectorHit } from './vectors.ts';

/** One vector of a `VectorMatrix`, with what a hit reports and the tie rule needs. */
export interface MatrixRow {
  messageId: string;
  threadId: string;
  hash: string;
  /** The message's `createdAt` in epoch ms. */
  createdAt: number;
  /** `dimensions` numbers. */
  vector: Float32Array;
}

/** What `VectorMatrix.search` ranks: the query and the scope inside the matrix's resource. */
export interface MatrixQuery {
  vector: Float32Array;
  topK: number;
  threadId?: string;
  excludeIds?: string[];
}

const INITIAL_ROWS = 64;

/**
 * The vectors of one scope (a resource) in one `Float32Array`, ranked exactly in process: for
 * a driver that keeps a copy of a resource's vectors between searches instead of ranking them in
 * the database on every query. Scores are `cosine` (same operations, same order: a hit's score
 * is the reference's to the last bit) and hits are in `compareHits` order. Rows are appended or
 * replaced by message id (a moved message is set again with its new thread and time), and
 * deleted by message id.
 */
export class VectorMatrix {
  private data: Float32Array;
  /** Each row's squared norm, in double precision (as `cosine` sums it). */
  private squares: Float64Array;
  private createdAt: Float64Array;
  private readonly messageIds: string[] = [];
  private readonly threadIds: string[] = [];
  private readonly hashes: string[] = [];
  private readonly rowOf = new Map<string, number>();

  constructor(readonly dimensions: number) {
    this.data = new Float32Array(INITIAL_ROWS * dimensions);
    this.squares = new Float64Array(INITIAL_ROWS);
    this.createdAt = new Float64Array(INITIAL_ROWS);
  }

  /** How many vectors it holds. */
  get size(): number {
    return this.messageIds.length;
  }

  /** The bytes its arrays take (vectors, norms and dates; not the id strings). */
  get bytes(): number {
    return this.data.byteLength + this.squares.byteLength + this.createdAt.byteLength;
  }

  /** Adds a message's vector, or replaces the one it holds for that message. */
  set(row: MatrixRow): void {
    if (row.vector.length !== this.dimensions) {
      throw new RangeError(`a vector of ${row.vector.length} numbers in a matrix of ${this.dimensions}`);
    }
    let i = this.rowOf.get(row.messageId);
    if (i === undefined) {
      i = this.size;
      if (i === this.squares.length) this.grow();
      this.rowOf.set(row.messageId, i);
      this.messageIds.push(row.messageId);
      this.threadIds.push(row.threadId);
      this.hashes.push(row.hash);
    } else {
      this.threadIds[i] = row.threadId;
      this.hashes[i] = row.hash;
    }
    this.data.set(row.vector, i * this.dimensions);
    let square = 0;
    for (const x of row.vector) square += x * x;
    this.squares[i] = square;
    this.createdAt[i] = row.createdAt;
  }

  /** Drops the vectors of these messages (ids it does not hold are ignored). */
  delete(messageIds: Iterable<string>): void {
    for (const id of messageIds) {
      const i = this.rowOf.get(id);
      if (i !== undefined) this.drop(i);
    }
  }

  /** The best `topK` rows of the scope by cosine similarity, in `compareHits` order. */
  search(query: MatrixQuery): VectorHit[] {
    const { vector, topK, threadId } = query;
    const excluded = new Set(query.excludeIds);
    const d = this.dimensions;
    let qSquare = 0;
    for (const x of vector) qSquare += x * x;
    const best: { row: number; score: number; createdAt: Date; messageId: string }[] = [];
    for (let row = 0; row < this.size; row++) {
      if (threadId !== undefined && this.threadIds[row] !== threadId) continue;
      const id = this.messageIds[row] as string;
      if (excluded.has(id)) continue;
      let dot = 0;
      for (let j = 0, k = row * d; j < d; j++, k++) dot += (this.data[k] as number) * (vector[j] as number);
      const square = this.squares[row] as number;
      const score = square === 0 || qSquare === 0 ? 0 : dot / Math.sqrt(square * qSquare);
      const worst = best[best.length - 1];
      if (best.length === topK && worst && score < worst.score) continue;
      const hit = { row, score, createdAt: new Date(this.createdAt[row] as number), messageId: id };
      if (best.length === topK && worst && compareHits(hit, worst) >= 0) continue;
      // Insertion into the sorted top K: K is small (a recall's topK), the scan is the cost.
      let at = best.length;
      while (at > 0 && compareHits(hit, best[at - 1]!) < 0) at--;
      best.splice(at, 0, hit);
      if (best.length > topK) best.pop();
    }
    return best.map(({ row, score, createdAt, messageId }) => ({
      messageId,
      threadId: this.threadIds[row] as string,
      hash: this.hashes[row] as string,
      score,
      createdAt,
    }));
  }

  /** Removes row `i`: the last row takes its place. */
  private drop(i: number): void {
    const last = this.size - 1;
    this.rowOf.delete(this.messageIds[i] as string);
    if (i !== last) {
      const d = this.dimensions;
      this.data.copyWithin(i * d, last * d, (last + 1) * d);
      this.squares[i] = this.squares[last] as number;
      this.createdAt[i] = this.createdAt[last] as number;
      this.messageIds[i] = this.messageIds[last] as string;
      this.threadIds[i] = this.threadIds[last] as string;
      this.hashes[i] = this.hashes[last] as string;
      this.rowOf.set(this.messageIds[i] as string, i);
    }
    this.messageIds.pop();
    this.threadIds.pop();
    this.hashes.pop();
  }

  private grow(): void {
    const rows = this.squares.length * 2;
    const data = new Float32Array(rows * this.dimensions);
    data.set(this.data);
    const squares = new Float64Array(rows);
    squares.set(this.squares);
    const createdAt = new Float64Array(rows);
    createdAt.set(this.createdAt);
    [this.data, this.squares, this.createdAt] = [data, squares, createdAt];
  }
}
