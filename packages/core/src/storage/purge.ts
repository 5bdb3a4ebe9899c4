import { MemoryError } from '../errors.ts';
import type { MemoryStorage } from './contract.ts';
import { CASCADE_DOMAINS, DOMAINS, type DomainHooks } from './domains.ts';
import type { Driver } from './driver.ts';
import { observationKey } from './observations.ts';
import type { Resource, Thread } from './records.ts';
import type { Store } from './store.ts';
import { threadTurns } from './turns.ts';
import { messagePages } from './walk.ts';

/** What `deleteResource` removed, per record kind. */
export interface ResourceDeletion {
  /** Threads of the resource. */
  threads: number;
  /** Messages of those threads. */
  messages: number;
  /** Vectors of those messages (in the store's embedding space); 0 without `vectors`. */
  vectors: number;
  /** Observation-log rows (generations) of the threads and of the resource; 0 without `observations`. */
  observations: number;
  /** Turn records of those threads (`options.turnRecords`); 0 without `turns`. */
  turns: number;
  /** Working-memory documents: thread-scope ones set on the threads, and the resource's. */
  workingMemory: number;
  /** The resource row: 1 when it existed, else 0. */
  resources: number;
}

/** How many threads, and messages of one thread, are read per page while purging. */
const PAGE = 500;

/**
 * The cascade of `deleteResource`, composed from the driver's primitives. Order: each thread of
 * the resource is deleted with the usual one-write thread cascade (messages, vectors, the
 * thread's observation log), then the resource row and what the domains keep for the resource
 * alone go in one write. Every step removes records that the listing of the next run would still
 * find, so a purge that stops part-way (a crash, a lost connection) is completed by running it
 * again; the resource row goes last, so it still names the resource until everything else is gone.
 * Counts are read just before each record is deleted.
 */
export async function purgeResource(
  store: Store,
  driver: Driver<unknown>,
  resourceId: string,
): Promise<ResourceDeletion> {
  const deleteRow = driver.resources.delete?.bind(driver.resources);
  const hooks: DomainHooks<unknown>[] = [];
  for (const name of CASCADE_DOMAINS) {
    const domain = driver[name];
    if (!domain) continue;
    // Required where the domain keeps rows of the resource itself; any other domain's hook runs
    // too (bookkeeping of the resource's deleted records, say), in the same last write.
    if (domain.deleteByResource) hooks.push(domain);
    else if (DOMAINS[name].resourceRows)
      throw unsupported(store.name, `the ${name} domain has no deleteByResource`);
  }
  if (!deleteRow) throw unsupported(store.name, 'its driver has no resources.delete');

  const counts: ResourceDeletion = {
    threads: 0,
    messages: 0,
    vectors: 0,
    observations: 0,
    turns: 0,
    workingMemory: 0,
    resources: 0,
  };
  const space = store.vectors ? await store.vectors.getSpace() : null;
  const done = new Set<string>();
  for (;;) {
    const { threads } = await store.listThreads({
      resourceId,
      perPage: PAGE,
      orderBy: 'createdAt',
      direction: 'ASC',
    });
    const todo = threads.filter((t) => !done.has(t.id));
    if (todo.length === 0) break;
    for (const thread of todo) {
      await countThread(store, thread, space, counts);
      await store.deleteThread({ threadId: thread.id });
      done.add(thread.id);
    }
  }

  const resource: Resource | null = await store.getResourceById({ resourceId });
  if (store.observations) {
    counts.observations += (
      await store.observations.generations(observationKey('resource', resourceId))
    ).length;
  }
  await store.run('deleteResource', () =>
    driver.write(async (tx) => {
      for (const domain of hooks) await domain.deleteByResource?.(tx, resourceId);
      await deleteRow(tx, resourceId);
    }),
  );
  if (resource) {
    counts.resources = 1;
    if (resource.workingMemory !== null) counts.workingMemory += 1;
  }
  return counts;
}

/** Adds what deleting `thread` removes to `counts`. */
async function countThread(
  store: MemoryStorage,
  thread: Thread,
  space: Awaited<ReturnType<NonNullable<MemoryStorage['vectors']>['getSpace']>>,
  counts: ResourceDeletion,
): Promise<void> {
  counts.threads += 1;
  if (typeof thread.metadata.workingMemory === 'string') counts.workingMemory += 1;
  for await (const messages of messagePages(store, thread.id, PAGE)) {
    counts.messages += messages.length;
    if (space && store.vectors) {
      counts.vectors += (
        await store.vectors.getVectors(
          space,
          messages.map((m) => m.id),
        )
      ).length;
    }
  }
  if (store.observations) {
    counts.observations += (await store.observations.generations(observationKey('thread', thread.id))).length;
  }
  if (store.turns) for await (const _ of threadTurns(store.turns, thread.id)) counts.turns += 1;
}

function unsupported(adapter: string, why: string): MemoryError {
  return new MemoryError('UNSUPPORTED', `${adapter}: deleteResource is not supported: ${why}`, {
    adapter,
    details: { operation: 'deleteResource' },
  });
}
