import { Memory, type MemoryStorage, type Message } from '@engram/core';

/** One resource and one of its threads that the writers of a run share. */
export interface Scene {
  resourceId: string;
  threadId: string;
}

/** A write the store acknowledged: a working-memory key, a message batch, or a deletion. */
export type Ack =
  | { kind: 'key'; resourceId: string; key: string; value: number }
  | { kind: 'batch'; threadId: string; batch: string; size: number }
  | { kind: 'deleted'; threadId: string; batch: string }
  | { kind: 'threadMeta'; threadId: string; key: string; value: number }
  | { kind: 'resourceMeta'; resourceId: string; key: string; value: number };

/** Messages of one batch are saved together; a batch is written by one call only. */
export const BATCH_SIZE = 10;

/** A `Memory` in schema mode (any JSON object), so `mergeWorkingMemory` merges disjoint keys. */
export function schemaMemory(storage: MemoryStorage): Memory {
  return new Memory({ storage, options: { workingMemory: { enabled: true, schema: { type: 'object' } } } });
}

/** The id of message `i` of a batch; `batchOf` reverses it. */
export function messageId(batch: string, i: number): string {
  return `${batch}.${String(i).padStart(4, '0')}`;
}

/** The batch a message id belongs to. */
export function batchOf(id: string): string {
  return id.slice(0, id.lastIndexOf('.'));
}

/** What message `i` of a batch of `size` holds: enough to tell a batch's size from any one message. */
export function messageContent(batch: string, i: number, size: number): string {
  return `${batch}:${i}/${size}`;
}

/** The size a message says its batch has, or `undefined` for a message no writer of ours made. */
export function statedSize(message: Message): number | undefined {
  if (typeof message.content !== 'string') return undefined;
  const match = /\/(\d+)$/.exec(message.content);
  return match ? Number(match[1]) : undefined;
}

/** Saves one batch of `size` messages into the scene's thread. */
export async function saveBatch(
  memory: Memory,
  scene: Scene,
  batch: string,
  size = BATCH_SIZE,
): Promise<Ack> {
  await memory.saveMessages({
    messages: Array.from({ length: size }, (_, i) => ({
      id: messageId(batch, i),
      threadId: scene.threadId,
      resourceId: scene.resourceId,
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: messageContent(batch, i, size),
    })),
  });
  return { kind: 'batch', threadId: scene.threadId, batch, size };
}

/** Merges one key of its own into the resource's working memory. */
export async function mergeKey(memory: Memory, resourceId: string, key: string, value: number): Promise<Ack> {
  await memory.mergeWorkingMemory({ resourceId, workingMemory: { [key]: value } });
  return { kind: 'key', resourceId, key, value };
}

/**
 * The writer's `n`-th write: even numbers merge a working-memory key, odd ones save a batch of
 * messages. Keys and batch ids start with the writer's name, so no two writers ever collide.
 */
export function writeStep(memory: Memory, scene: Scene, writer: string, n: number): Promise<Ack> {
  return n % 2 === 0
    ? mergeKey(memory, scene.resourceId, `${writer}-k${n}`, n)
    : saveBatch(memory, scene, `${writer}-b${n}`);
}

/**
 * Saves half-saved batches again (the documented recovery where batches are not atomic) and
 * returns how many were completed.
 */
export async function completeBatches(
  memory: Memory,
  scene: Scene,
  batches: Array<{ batch: string }>,
): Promise<number> {
  for (const { batch } of batches) await saveBatch(memory, scene, batch);
  return batches.length;
}

/** Merges one key of its own into the thread's metadata (`updateThread`). */
export async function mergeThreadMeta(
  store: MemoryStorage,
  threadId: string,
  key: string,
  value: number,
): Promise<Ack> {
  await store.updateThread({ id: threadId, metadata: { [key]: value } });
  return { kind: 'threadMeta', threadId, key, value };
}

/** Merges one key of its own into the resource's metadata (`updateResource`). */
export async function mergeResourceMeta(
  store: MemoryStorage,
  resourceId: string,
  key: string,
  value: number,
): Promise<Ack> {
  await store.updateResource({ resourceId, metadata: { [key]: value } });
  return { kind: 'resourceMeta', resourceId, key, value };
}

/**
 * The `n`-th write of loop `chain`: a working-memory key, a thread metadata key or a resource
 * metadata key, in turn, so parallel loops write all three at once.
 */
export function mergeStep(
  store: MemoryStorage,
  memory: Memory,
  scene: Scene,
  writer: string,
  chain: number,
  n: number,
): Promise<Ack> {
  const key = `${writer}-c${chain}-${n}`;
  switch ((chain + n) % 3) {
    case 0:
      return mergeKey(memory, scene.resourceId, key, n);
    case 1:
      return mergeThreadMeta(store, scene.threadId, key, n);
    default:
      return mergeResourceMeta(store, scene.resourceId, key, n);
  }
}
