import { MemoryError } from '../errors.ts';
import { keysOf } from '../known-keys.ts';
import { assertArgs } from './arguments.ts';
import type { DomainRunner } from './domains.ts';
import { mergeMessageLists } from './helpers.ts';
import { assertCount, assertId, assertIds, describe, isPlainObject } from './validate.ts';
import type {
  EmbeddingSpace,
  MessageVector,
  StoredVector,
  VectorDriver,
  VectorHit,
  VectorSearch,
  VectorStore,
  WindowedHits,
  WindowedSearch,
} from './vectors.ts';

/** Largest `topK` a search accepts. */
export const MAX_TOP_K = 1000;
/** Largest vector dimension accepted. */
export const MAX_DIMENSIONS = 16_384;

/**
 * The store's `vectors`: validates every argument once (space, ids, dimensions, `topK`), checks
 * the space against the recorded one, and calls the driver's primitive through the store's
 * lifecycle and error mapping.
 */
export class ValidatedVectors implements VectorStore {
  /** The recorded space once read (it never changes once recorded). */
  private recorded: EmbeddingSpace | null = null;

  /** Present when the driver can read vectors back (see `VectorStore.readVectors`). */
  readonly readVectors?: (space: EmbeddingSpace, messageIds: string[]) => Promise<MessageVector[]>;

  /** Present when the driver searches and reads windows at once (see `VectorStore.searchWithWindows`). */
  readonly searchWithWindows?: (args: WindowedSearch) => Promise<WindowedHits>;

  constructor(
    /** The store's name, for messages. */
    private readonly adapter: string,
    private readonly driver: VectorDriver<unknown>,
    private readonly run: DomainRunner,
  ) {
    const read = driver.readVectors?.bind(driver);
    if (read) {
      this.readVectors = async (space, messageIds) => {
        assertSpace(space);
        assertIds(messageIds, 'messageIds');
        if (messageIds.length === 0 || !(await this.sameSpace(space, false))) return [];
        const rows = await this.run('readVectors', () => read(spaceOf(space), [...new Set(messageIds)]));
        return rows.map((row) => ({
          messageId: row.messageId,
          hash: row.hash,
          vector: Float32Array.from(row.vector),
        }));
      };
    }
    const windowed = driver.searchWithWindows?.bind(driver);
    if (windowed) {
      this.searchWithWindows = async (args) => {
        const search = this.searchArgs(args, 'searchWithWindows', WINDOWED_KEYS);
        const [before, after] = [windowSide(args.before, 'before'), windowSide(args.after, 'after')];
        const history = this.historyArgs(args.history);
        // No space recorded (no vector stored yet): nothing searched, no history read either.
        if (!(await this.sameSpace(search.space, false))) return { hits: [], windows: [] };
        const found = await this.run('searchWithWindows', () =>
          windowed({ ...search, before, after, ...(history && { history }) }),
        );
        const hits = { hits: found.hits, windows: mergeMessageLists([found.windows], 'ASC') };
        return history ? { ...hits, history: [...(found.history ?? [])] } : hits;
      };
    }
  }

  get search(): 'exact' | 'index' {
    return this.driver.search;
  }

  /** Whether `searchWithWindows` takes `history` (see `VectorStore.historyInSearch`). */
  get historyInSearch(): boolean {
    return this.searchWithWindows !== undefined && this.driver.historyInSearch === true;
  }

  /** `history` of a windowed search, checked, in a new object (`UNSUPPORTED` where not taken). */
  private historyArgs(history: unknown): { threadId: string; last: number } | undefined {
    if (history === undefined) return undefined;
    if (!this.historyInSearch) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${this.adapter}: searchWithWindows does not take history here (historyInSearch is false); read it with listMessages`,
      );
    }
    if (!isPlainObject(history)) throw invalid(`history must be an object, got ${describe(history)}`);
    assertId(history.threadId, 'history.threadId');
    if (history.last === undefined) throw invalid('history.last must be given: how many messages to read');
    return { threadId: history.threadId, last: assertCount(history.last, 'history.last') as number };
  }

  async getSpace(): Promise<EmbeddingSpace | null> {
    if (this.recorded) return { ...this.recorded };
    const space = await this.run('getSpace', () => this.driver.getSpace());
    if (space) this.recorded = { id: space.id, dimensions: space.dimensions };
    return space ? { id: space.id, dimensions: space.dimensions } : null;
  }

  async claimSpace(space: EmbeddingSpace): Promise<EmbeddingSpace> {
    assertSpace(space);
    const claimed = await this.run('claimSpace', () =>
      this.driver.claimSpace({ id: space.id, dimensions: space.dimensions }),
    );
    this.recorded = { id: claimed.id, dimensions: claimed.dimensions };
    return { ...this.recorded };
  }

  /**
   * `INVALID_ARGUMENT` unless `space` is the recorded one (`null` when none is recorded yet,
   * which `requireClaim` refuses: vectors are only written after `claimSpace`).
   */
  private async sameSpace(space: EmbeddingSpace, requireClaim: boolean): Promise<boolean> {
    const recorded = await this.getSpace();
    if (!recorded) {
      if (requireClaim)
        throw invalid(`${this.adapter}: no embedding space recorded yet; call claimSpace first`);
      return false;
    }
    if (recorded.id !== space.id || recorded.dimensions !== space.dimensions) {
      throw invalid(
        `${this.adapter}: vectors of this store are in space ${JSON.stringify(recorded.id)} (${recorded.dimensions} dimensions), not ${JSON.stringify(space.id)} (${space.dimensions} dimensions)`,
      );
    }
    return true;
  }

  async upsertVectors(space: EmbeddingSpace, vectors: MessageVector[]): Promise<void> {
    assertSpace(space);
    if (!Array.isArray(vectors)) throw invalid(`vectors must be an array, got ${describe(vectors)}`);
    const seen = new Set<string>();
    vectors.forEach((v, i) => {
      if (!isPlainObject(v)) throw invalid(`vectors[${i}] must be an object, got ${describe(v)}`);
      assertId(v.messageId, `vectors[${i}].messageId`);
      if (seen.has(v.messageId))
        throw invalid(`vectors: message ${JSON.stringify(v.messageId)} appears twice`);
      seen.add(v.messageId);
      if (typeof v.hash !== 'string' || v.hash === '')
        throw invalid(`vectors[${i}].hash must be a non-empty string`);
      assertVector(v.vector, space, `vectors[${i}].vector`);
    });
    if (vectors.length === 0) return;
    await this.sameSpace(space, true);
    const normalized = vectors.map((v) => ({ messageId: v.messageId, hash: v.hash, vector: v.vector }));
    return this.run('upsertVectors', () => this.driver.upsertVectors(spaceOf(space), normalized));
  }

  async getVectors(space: EmbeddingSpace, messageIds: string[]): Promise<StoredVector[]> {
    assertSpace(space);
    assertIds(messageIds, 'messageIds');
    if (messageIds.length === 0 || !(await this.sameSpace(space, false))) return [];
    return this.run('getVectors', () => this.driver.getVectors(spaceOf(space), [...new Set(messageIds)]));
  }

  async deleteVectors(space: EmbeddingSpace, messageIds: string[]): Promise<void> {
    assertSpace(space);
    assertIds(messageIds, 'messageIds');
    if (messageIds.length === 0 || !(await this.sameSpace(space, false))) return;
    return this.run('deleteVectors', () =>
      this.driver.deleteVectors(spaceOf(space), [...new Set(messageIds)]),
    );
  }

  async searchVectors(args: VectorSearch): Promise<VectorHit[]> {
    const normalized = this.searchArgs(args, 'searchVectors', SEARCH_KEYS);
    if (!(await this.sameSpace(normalized.space, false))) return [];
    return this.run('searchVectors', () => this.driver.searchVectors(normalized));
  }

  /** A search's arguments, checked, in a new object. */
  private searchArgs(
    args: VectorSearch,
    operation: string,
    known: readonly string[],
  ): VectorSearch & { excludeIds: string[] } {
    assertArgs(args, operation, known);
    assertSpace(args.space);
    assertVector(args.vector, args.space, 'vector');
    if (!Number.isInteger(args.topK) || args.topK < 1 || args.topK > MAX_TOP_K) {
      throw invalid(`topK must be an integer from 1 to ${MAX_TOP_K}, got ${describe(args.topK)}`);
    }
    assertId(args.resourceId, 'resourceId');
    if (args.threadId !== undefined) assertId(args.threadId, 'threadId');
    if (args.excludeIds !== undefined) assertIds(args.excludeIds, 'excludeIds');
    return {
      space: spaceOf(args.space),
      vector: args.vector,
      topK: args.topK,
      resourceId: args.resourceId,
      threadId: args.threadId,
      excludeIds: args.excludeIds ?? [],
    };
  }
}

const SEARCH_KEYS = keysOf<VectorSearch>({
  space: true,
  vector: true,
  topK: true,
  resourceId: true,
  threadId: true,
  excludeIds: true,
});
const WINDOWED_KEYS = [
  ...SEARCH_KEYS,
  ...keysOf<Omit<WindowedSearch, keyof VectorSearch>>({ before: true, after: true, history: true }),
];

/** `before` or `after` of a windowed search: a count, as `listMessages` takes for its windows. */
function windowSide(value: unknown, field: string): number {
  if (value === undefined) throw invalid(`${field} must be given: how many messages the window holds`);
  return assertCount(value, field) as number;
}

/** The space's two fields, in a new object. */
function spaceOf(space: EmbeddingSpace): EmbeddingSpace {
  return { id: space.id, dimensions: space.dimensions };
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}

/** `INVALID_ARGUMENT` unless `space` is `{ id: non-empty string, dimensions: 1…16384 }`. */
export function assertSpace(space: unknown): asserts space is EmbeddingSpace {
  if (!isPlainObject(space)) throw invalid(`space must be an object, got ${describe(space)}`);
  if (typeof space.id !== 'string' || space.id === '' || space.id.length > 512) {
    throw invalid(`space.id must be a non-empty string of at most 512 characters, got ${describe(space.id)}`);
  }
  const d = space.dimensions;
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > MAX_DIMENSIONS) {
    throw invalid(`space.dimensions must be an integer from 1 to ${MAX_DIMENSIONS}, got ${describe(d)}`);
  }
}

/** How far from 1 the length of a stored or query vector may be (float32 rounding). */
export const UNIT_TOLERANCE = 1e-3;

/**
 * `INVALID_ARGUMENT` unless `vector` is a `Float32Array` of `space.dimensions` finite numbers of
 * unit length (as core's `normalize` returns): a zero vector has no direction and is never
 * stored or searched, and a unit vector keeps every backend's cosine finite (no square
 * overflows, no zero norm, so no score is `NaN`).
 */
export function assertVector(
  vector: unknown,
  space: EmbeddingSpace,
  field: string,
): asserts vector is Float32Array {
  if (!(vector instanceof Float32Array))
    throw invalid(`${field} must be a Float32Array, got ${describe(vector)}`);
  if (vector.length !== space.dimensions) {
    throw invalid(
      `${field} has ${vector.length} dimensions, but space ${JSON.stringify(space.id)} has ${space.dimensions}`,
    );
  }
  let sum = 0;
  for (const x of vector) {
    if (!Number.isFinite(x)) throw invalid(`${field} holds a non-finite number`);
    sum += x * x;
  }
  if (sum === 0) throw invalid(`${field} is all zeros: a zero vector has no direction to compare`);
  const length = Math.sqrt(sum);
  if (Math.abs(length - 1) > UNIT_TOLERANCE) {
    throw invalid(`${field} must have unit length (L2-normalised, as normalize() returns), got ${length}`);
  }
}

/** Cosine similarity of two equal-length vectors (0 when either is zero). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
