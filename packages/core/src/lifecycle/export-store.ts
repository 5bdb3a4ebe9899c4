import type { MemoryStorage } from '../storage/contract.ts';
import { exportResource } from './export.ts';
import type { MemoryRecord } from './records.ts';

/** Threads read per page while the resources are gathered. */
const PAGE = 500;

/**
 * Every record of a whole store, streamed resource by resource (each as `exportResource` writes
 * it), in the order the resources' first threads were created.
 *
 * The resources are found through their threads (`listThreads` without `resourceId`): the storage
 * contract has no listing of resources, so a resource that has no thread — only resource-scope
 * working memory, metadata or a resource-scope observation log — is not exported; export it with
 * `exportResource` by its id. Memory holds the set of resource ids (not their records) while the
 * threads are read, then one page at a time.
 */
export async function* exportStore(storage: MemoryStorage): AsyncGenerator<MemoryRecord> {
  for (const resourceId of await resourceIds(storage)) yield* exportResource(storage, resourceId);
}

/** The ids of the resources that own at least one thread, in the order of their first thread. */
async function resourceIds(storage: MemoryStorage): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let page = 0; ; page++) {
    const { threads, hasMore } = await storage.listThreads({ page, perPage: PAGE, direction: 'ASC' });
    for (const thread of threads) ids.add(thread.resourceId);
    if (!hasMore) return ids;
  }
}
