import type * as core from '@engram/core/adapter';
import { compareHits, MemoryError, VectorStoreBase } from '@engram/core/adapter';
import type { Redis } from '@upstash/redis';
import { ADAPTER } from './errors.ts';
import { type Frame, list, text, unframe } from './mapping.ts';
import { scriptArgument } from './scripts.ts';
import { VECTOR_SCRIPTS, type VectorScriptArgs, type VectorScriptName } from './vector-scripts.ts';

/** Vectors one search scans at most, by default (see `UpstashStoreOptions.vectorScanLimit`). */
export const DEFAULT_VECTOR_SCAN_LIMIT = 5_000;

type ScriptHandle = ReturnType<Redis['createScript']>;

/** The float32 values as JSON numbers, which the script decodes back to the same values. */
function numbers(vector: Float32Array): number[] {
  return Array.from(vector);
}

/**
 * Vectors in Redis next to the messages (`<p>:vector:<message>`, float32 packed by the script),
 * deleted by the store's delete scripts with their message. Each search is one Lua script that
 * walks the scope's messages (a thread, or the resource's threads by latest activity, newest
 * message first), ranks them exactly and returns the best `topK`: at most `scanLimit` vectors are
 * read per query, so a resource with more messages than that is searched over its newest
 * `scanLimit` only, and the script (which blocks the server while it runs) stays bounded.
 */
export class UpstashVectors extends VectorStoreBase {
  readonly search = 'exact' as const;
  private readonly scripts = new Map<VectorScriptName, ScriptHandle>();

  constructor(
    private readonly client: () => Redis,
    private readonly prefix: string,
    readonly scanLimit: number,
    run: core.VectorRunner,
  ) {
    super(ADAPTER, run);
    if (!Number.isInteger(scanLimit) || scanLimit < 1) {
      throw new MemoryError('INVALID_ARGUMENT', `${ADAPTER}: vectorScanLimit must be a positive integer`, {
        adapter: ADAPTER,
      });
    }
  }

  private async call<N extends VectorScriptName>(name: N, args: VectorScriptArgs[N]): Promise<Frame> {
    let script = this.scripts.get(name);
    if (!script) {
      script = this.client().createScript<string>(VECTOR_SCRIPTS[name]);
      this.scripts.set(name, script);
    }
    return unframe(await script.exec([], [scriptArgument(this.prefix, args)]));
  }

  protected async doGetSpace(): Promise<core.EmbeddingSpace | null> {
    const reply = await this.call('getSpace', {});
    return reply === null ? null : toSpace(reply);
  }

  protected async doClaimSpace(space: core.EmbeddingSpace): Promise<core.EmbeddingSpace> {
    return toSpace(await this.call('claimSpace', { space: space.id, dimensions: space.dimensions }));
  }

  protected async doUpsertVectors(space: core.EmbeddingSpace, vectors: core.MessageVector[]): Promise<void> {
    await this.call('upsert', {
      space: space.id,
      dimensions: space.dimensions,
      vectors: vectors.map((v) => ({ id: v.messageId, hash: v.hash, values: numbers(v.vector) })),
    });
  }

  protected async doGetVectors(space: core.EmbeddingSpace, ids: string[]): Promise<core.StoredVector[]> {
    return list(await this.call('get', { space: space.id, ids })).map((pair) => {
      const [messageId, hash] = list(pair);
      return { messageId: text(messageId), hash: text(hash) };
    });
  }

  protected async doDeleteVectors(space: core.EmbeddingSpace, ids: string[]): Promise<void> {
    await this.call('delete', { space: space.id, ids });
  }

  protected async doSearchVectors(args: core.VectorSearch): Promise<core.VectorHit[]> {
    const exclude = args.excludeIds ?? [];
    const reply = list(
      await this.call('search', {
        space: args.space.id,
        dimensions: args.space.dimensions,
        resourceId: args.resourceId,
        threadId: args.threadId,
        topK: args.topK,
        scanLimit: this.scanLimit,
        exclude,
        query: numbers(args.vector),
      }),
    );
    // Re-sorted here: Lua compares ids with the server's collation, core's rule is UTF-8 bytes.
    const hits = list(reply[0] ?? []).map((frame) => {
      const [id, threadId, createdAt, hash, score] = list(frame).map(text);
      return {
        messageId: id as string,
        threadId: threadId as string,
        createdAt: new Date(Number(createdAt)),
        hash: hash as string,
        score: Number(score),
      };
    });
    return hits.sort(compareHits);
  }
}

function toSpace(frame: Frame): core.EmbeddingSpace {
  const [id, dimensions] = list(frame).map(text);
  return { id: id as string, dimensions: Number(dimensions) };
}
