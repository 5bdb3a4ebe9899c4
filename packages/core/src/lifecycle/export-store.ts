import type { MemoryStorage } from '../storage/contract.ts';
import { threadPages } from '../storage/walk.ts';
import { exportResource } from './export.ts';
import type { MemoryRecord } from './records.ts';

/** Threads read per page while the resources are gathered. */
const PAGE = 500;

/**
 * Every record of a whole store, streamed resource by resource (each as `exportResource` writes
 * it): the resources found through their threads (`listThreads` without `resourceId`), in the
 * order their first threads were created, then the stored resources that have no thread (only
 * working memory, metadata or a resource-scope observation log), in id order, when the store
 * lists resources (`listResourceIds`). Without it such resources are not exported: export them
 * with `exportResource` by id. Memory holds the set of resource ids (not their records).
 */
export async function* exportStore(storage: MemoryStorage): AsyncGenerator<MemoryRecord> {
  const withThreads = await resourceIds(storage);
  for (const resourceId of withThreads) yield* exportResource(storage, resourceId);
  const list = storage.listResourceIds?.bind(storage);
  if (!list) return;
  for (let after: string | undefined; ; ) {
    const page = await list({ after, limit: PAGE });
    for (const resourceId of page)
      if (!withThreads.has(resourceId)) yield* exportResource(storage, resourceId);
    if (page.length < PAGE) return;
    after = page[page.length - 1];
  }
}

/** The ids of the resources that own at least one thread, in the order of their first thread. */
async function resourceIds(storage: MemoryStorage): Promise<Set<string>> {
  const ids = new Set<string>();
  for await (const threads of threadPages(storage, undefined, PAGE))
    for (const thread of threads) ids.add(thread.resourceId);
  return ids;
}
