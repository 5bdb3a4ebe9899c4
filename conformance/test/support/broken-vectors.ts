import {
  compareHits,
  type EmbeddingSpace,
  InMemoryStore,
  type MessageVector,
  type StoredVector,
  type VectorHit,
  type VectorSearch,
  type VectorStore,
  VectorStoreBase,
} from '@engram/core';

/** A store whose vector search ignores the scope: it ranks every resource's vectors. */
export class ScopeBlindVectorsStore extends InMemoryStore {
  override readonly vectors: VectorStore;

  constructor() {
    super();
    const inner = this.memoryVectors as VectorStore;
    const store = this;
    this.vectors = {
      search: 'exact',
      getSpace: () => inner.getSpace(),
      claimSpace: (space) => inner.claimSpace(space),
      upsertVectors: (space, vectors) => inner.upsertVectors(space, vectors),
      getVectors: (space, ids) => inner.getVectors(space, ids),
      deleteVectors: (space, ids) => inner.deleteVectors(space, ids),
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

/**
 * Vectors kept in a side table that the store's deletes do not touch: deleted messages keep
 * their vectors (the orphan bug). Search still checks that the message exists.
 */
class SideTableVectors extends VectorStoreBase {
  readonly search = 'exact' as const;
  private space: EmbeddingSpace | null = null;
  private readonly rows = new Map<string, { hash: string; vector: Float32Array }>();

  constructor(private readonly store: InMemoryStore) {
    super('orphan-vectors', (_operation, fn) => fn());
  }
  protected async doGetSpace() {
    return this.space;
  }
  protected async doClaimSpace(space: EmbeddingSpace) {
    this.space ??= space;
    return this.space;
  }
  protected async doUpsertVectors(_space: EmbeddingSpace, vectors: MessageVector[]) {
    const existing = await this.store.listMessagesById({ ids: vectors.map((v) => v.messageId) });
    const ids = new Set(existing.map((m) => m.id));
    for (const v of vectors)
      if (ids.has(v.messageId)) this.rows.set(v.messageId, { hash: v.hash, vector: v.vector });
  }
  protected async doGetVectors(_space: EmbeddingSpace, ids: string[]): Promise<StoredVector[]> {
    return ids.flatMap((id) => {
      const row = this.rows.get(id);
      return row ? [{ messageId: id, hash: row.hash }] : [];
    });
  }
  protected async doDeleteVectors(_space: EmbeddingSpace, ids: string[]) {
    for (const id of ids) this.rows.delete(id);
  }
  protected async doSearchVectors(args: VectorSearch): Promise<VectorHit[]> {
    const messages = await this.store.listMessagesById({ ids: [...this.rows.keys()] });
    const oracle = new InMemoryStore();
    await oracle.vectors?.claimSpace(args.space);
    for (const m of messages) {
      if (!(await oracle.getThreadById({ threadId: m.threadId }))) {
        await oracle.saveThread({
          id: m.threadId,
          resourceId: m.resourceId,
          title: '',
          metadata: {},
          createdAt: m.createdAt,
          updatedAt: m.createdAt,
        });
      }
    }
    await oracle.saveMessages(messages);
    const rows = messages.map((m) => ({
      messageId: m.id,
      ...(this.rows.get(m.id) as { hash: string; vector: Float32Array }),
    }));
    await oracle.vectors?.upsertVectors(args.space, rows);
    return (await oracle.vectors?.searchVectors(args)) ?? [];
  }
}

/** A store whose deletes leave the messages' vectors behind. */
export class OrphanVectorsStore extends InMemoryStore {
  override readonly vectors: VectorStore = new SideTableVectors(this);
}

/**
 * A store whose search ranks every vector first and filters by scope afterwards (how an ANN
 * index with a post-filter behaves): a scoped query can come back with fewer than K hits.
 */
export class PostFilterVectorsStore extends InMemoryStore {
  override readonly vectors: VectorStore;

  constructor() {
    super();
    const inner = this.memoryVectors as VectorStore;
    const store = this;
    this.vectors = {
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
export class UncheckedVectorsStore extends InMemoryStore {
  override readonly vectors: VectorStore;

  constructor() {
    super();
    const inner = this.memoryVectors as VectorStore;
    const zero = (vector: Float32Array) => vector.every((x) => x === 0);
    this.vectors = {
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
