import {
  compareHits,
  InMemoryStore,
  MemoryDriver,
  Store,
  type VectorHit,
  type VectorStore,
} from '@engram/core/driver';

/** The reference store with its vector domain replaced, from the validated one it had. */
abstract class VectorsReplacedStore extends InMemoryStore {
  private readonly replaced: VectorStore;

  constructor() {
    super();
    this.replaced = this.replace(super.vectors as VectorStore);
  }

  protected abstract replace(inner: VectorStore): VectorStore;

  override get vectors(): VectorStore {
    return this.replaced;
  }
}

/** A store whose vector search ignores the scope: it ranks every resource's vectors. */
export class ScopeBlindVectorsStore extends VectorsReplacedStore {
  protected replace(inner: VectorStore): VectorStore {
    const store = this;
    return {
      ...bind(inner),
      search: 'exact',
      async searchVectors(args) {
        const { threads } = await store.listThreads({ perPage: false });
        const hits: VectorHit[] = [];
        for (const resourceId of new Set(threads.map((t) => t.resourceId))) {
          hits.push(...(await inner.searchVectors({ ...args, resourceId, threadId: undefined })));
        }
        return hits.sort(compareHits).slice(0, args.topK);
      },
    };
  }
}

/** A store whose deletes leave the messages' vectors behind: its cascade hooks do nothing. */
export class OrphanVectorsStore extends Store<MemoryDriver> {
  constructor() {
    const driver = new MemoryDriver();
    const inner = driver.vectors;
    if (!inner) throw new Error('the reference driver has vectors');
    driver.vectors = { ...inner, deleteByThread: async () => {}, deleteByMessages: async () => {} };
    super(driver);
  }
}

/**
 * A store whose search ranks every vector first and filters by scope afterwards (how an ANN
 * index with a post-filter behaves): a scoped query can come back with fewer than K hits.
 */
export class PostFilterVectorsStore extends VectorsReplacedStore {
  protected replace(inner: VectorStore): VectorStore {
    const store = this;
    return {
      ...bind(inner),
      search: 'index',
      async searchVectors(args) {
        const { threads } = await store.listThreads({ perPage: false });
        const all: VectorHit[] = [];
        for (const resourceId of new Set(threads.map((t) => t.resourceId))) {
          all.push(...(await inner.searchVectors({ ...args, resourceId, threadId: undefined, topK: 1000 })));
        }
        const ranked = all.sort(compareHits).slice(0, args.topK);
        const owners = new Map(threads.map((t) => [t.id, t.resourceId]));
        return ranked.filter(
          (h) =>
            owners.get(h.threadId) === args.resourceId &&
            (args.threadId === undefined || h.threadId === args.threadId),
        );
      },
    };
  }
}

function bind(inner: VectorStore): Omit<VectorStore, 'search' | 'searchVectors'> {
  return {
    getSpace: () => inner.getSpace(),
    claimSpace: (space) => inner.claimSpace(space),
    upsertVectors: (space, vectors) => inner.upsertVectors(space, vectors),
    getVectors: (space, ids) => inner.getVectors(space, ids),
    deleteVectors: (space, ids) => inner.deleteVectors(space, ids),
  };
}

/**
 * A store whose vectors skip the direction checks: an all-zero vector is accepted on upsert
 * (and silently dropped), and a search with one returns every hit scored `NaN` (as pgvector's
 * `<=>` computes for a zero vector).
 */
export class UncheckedVectorsStore extends VectorsReplacedStore {
  protected replace(inner: VectorStore): VectorStore {
    const zero = (vector: Float32Array) => vector.every((x) => x === 0);
    return {
      ...bind(inner),
      search: 'exact',
      upsertVectors: (space, vectors) =>
        inner.upsertVectors(
          space,
          vectors.filter((v) => !zero(v.vector)),
        ),
      async searchVectors(args) {
        if (!zero(args.vector)) return inner.searchVectors(args);
        const axis = new Float32Array(args.vector.length);
        axis[0] = 1;
        const hits = await inner.searchVectors({ ...args, vector: axis });
        return hits.map((h) => ({ ...h, score: Number.NaN }));
      },
    };
  }
}
