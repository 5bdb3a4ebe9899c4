import { InMemoryStore, type MemoryStorage } from '@engram/core';
import { createStore, MemoryDriver } from '@engram/core/driver';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { nameOf } from '../src/define.ts';
import {
  type AreaName,
  type CheckResult,
  type ConformanceInit,
  checksOf,
  runCheck,
  runChecks,
} from '../src/index.ts';
import {
  BreakableMemoryStore,
  DeclaredStore,
  memoryRows,
  PlainNonAtomicStore,
  unreachableWithSecret,
} from './support/breakable.ts';
import {
  brokenAtomicStore,
  CheckThenWriteStore,
  ImmortalStore,
  InclusiveAfterStore,
  InclusiveRangeStore,
  KeylessCompareStore,
  LeakyCredentialsStore,
  LeakyErrorStore,
  LeakyIncludeStore,
  LosesEmptyStringsStore,
  MessageByMessageStore,
  OwnerBlindAtomicStore,
  OwnerBlindLookupStore,
  PrefixMatchStore,
  RacyOwnershipStore,
  ResumeSkippingStore,
  StringDatesStore,
  SwallowingStore,
  TwoStepPurgeStore,
  UnboundedPageStore,
  UnorderedTiesStore,
} from './support/broken.ts';
import { lastWriterWinsLogsStore, orphanLogsStore } from './support/broken-observations.ts';
import { orphanTurnsStore, tiesAscendingTurnsStore } from './support/broken-turns.ts';
import {
  OrphanVectorsStore,
  PostFilterVectorsStore,
  ScopeBlindVectorsStore,
  UncheckedVectorsStore,
} from './support/broken-vectors.ts';
import { FILE_LEASE_MS, JsonStore, type JsonStoreDefect } from './support/json-store.ts';
import { breakMemory } from './support/stores.ts';
import { removeTempFolders, tempStoreFile } from './support/temp.ts';

const fileWorker = new URL('./fixtures/json-store-worker.ts', import.meta.url);

/** The JSON-file store without vectors (the areas raced here do not need them), with a defect. */
const fileStore = (file: string, defect: JsonStoreDefect = 'none') =>
  new JsonStore({ file, vectors: false, defect });

// A run of the whole concurrency area includes the stopped-writer race, which waits out its
// stops (5 × 1 s here) on top of the races: on a loaded machine that passes 60 s.
vi.setConfig({ testTimeout: 180_000 });

/** A fresh JSON file for a file-backed store, exported to the racing processes. */
function sharedFile(defect: JsonStoreDefect): string {
  const file = tempStoreFile('engram-conformance-');
  process.env.ENGRAM_CONFORMANCE_FILE = file;
  process.env.ENGRAM_CONFORMANCE_DEFECT = defect;
  return file;
}

afterEach(() => {
  delete process.env.ENGRAM_CONFORMANCE_FILE;
  delete process.env.ENGRAM_CONFORMANCE_DEFECT;
});
afterAll(removeTempFolders);

async function area(init: ConformanceInit, name: AreaName): Promise<CheckResult[]> {
  return runChecks(init, { areas: [name] });
}

/**
 * Only the checks of area `name` whose names begin with one of `prefixes`, one after another:
 * the checks a defect is meant to fail, without the others of its area (races of 4 processes,
 * property tests whose shrink of an incidental failure takes minutes).
 */
async function only(init: ConformanceInit, name: AreaName, ...prefixes: string[]): Promise<CheckResult[]> {
  const chosen = checksOf([name]).filter((check) => prefixes.some((p) => nameOf(check, init).startsWith(p)));
  expect(chosen.length, `checks of ${name} named ${prefixes.join(', ')}`).toBe(prefixes.length);
  const results: CheckResult[] = [];
  for (const check of chosen) results.push(await runCheck(init, check));
  return results;
}

function failures(results: CheckResult[]): string[] {
  return results.filter((r) => r.status === 'fail').map((r) => r.name);
}

function result(results: CheckResult[], prefix: string): CheckResult {
  const found = results.find((r) => r.name.startsWith(prefix));
  if (!found) throw new Error(`no check named ${prefix}…`);
  return found;
}

/** A `fresh` hook for the JSON file store: a new file, handed to the racers through the env. */
function freshFile(defect: JsonStoreDefect = 'none'): ConformanceInit['fresh'] {
  return () => {
    const file = tempStoreFile('engram-conformance-fresh-');
    return { env: { ENGRAM_CONFORMANCE_FILE: file }, create: () => fileStore(file, defect) };
  };
}

function message(r: CheckResult): string {
  return r.error instanceof Error ? r.error.message : String(r.error);
}

/** A whole concurrency area races 4 OS processes check after check: minutes on a loaded machine. */
const RACES = { timeout: 240_000 };

describe('the cross-process harness', RACES, () => {
  it('passes a store that is atomic across processes (a locked JSON file, 4 OS processes)', async () => {
    const file = sharedFile('none');
    const results = await area(
      { name: 'json-file', create: () => fileStore(file), worker: fileWorker, fresh: freshFile() },
      'concurrency',
    );
    expect(results.map((r) => [r.name, r.status, message(r)]).filter(([, s]) => s !== 'pass')).toEqual([]);
    expect(results).toHaveLength(14);
    const lines = results.flatMap((r) => r.output);
    expect(lines).toContain(
      `thread memory: the other process's replace written; the update ran 1× (saw "before"); stored "replaced by another process"`,
    );
    expect(lines).toContain(
      'resource working-memory merges: 4 OS processes, 100 operations (100 succeeded, 0 CONFLICT, 0 failed); 100/100 keys survived',
    );
    expect(lines).toContain('mixed message writes: 4 OS processes, 100 acknowledged, 0 CONFLICT, 0 failed');
    expect(lines).toContain(
      'resource working-memory merges beside 24 refused (0 at a call after a lost race): 4 OS processes, 76 operations (76 succeeded, 0 CONFLICT, 0 failed); 76/76 keys survived',
    );
    expect(lines.filter((l) => l.includes('4 OS processes'))).toHaveLength(11);
    expect(lines).toContain(
      'init() of a new store, then a write each: 4 OS processes, 12 operations (12 succeeded, 0 CONFLICT, 0 failed); 12/12 keys survived',
    );
  });

  it('skips the concurrent-init race, naming why, when no fresh hook is supplied', async () => {
    const file = sharedFile('none');
    const results = await only(
      { name: 'json-file', create: () => fileStore(file), worker: fileWorker },
      'concurrency',
      'init() of one new store',
    );
    const race = result(results, 'init() of one new store');
    expect([race.status, race.reason]).toEqual(['skip', expect.stringContaining('no `fresh` hook')]);
  });

  it('fails a store claiming atomic merges that supplies no worker and is not process-local', async () => {
    const notLocal = () => new DeclaredStore({ processLocal: false });
    const results = await area({ name: 'no-worker', create: notLocal }, 'concurrency');
    const merge = result(results, "atomic merges into one resource's working memory");
    expect(merge.status).toBe('fail');
    expect(message(merge)).toContain('no `worker` was supplied');
    expect(message(merge)).toContain('processLocal');
    expect(result(results, 'concurrent updateThread metadata merges').status).toBe('pass');
  });
});

describe('the suite catches deliberately broken stores', RACES, () => {
  it('(a) an "atomic" merge that reads, awaits, then writes fails concurrency (4 OS processes)', async () => {
    const file = sharedFile('atomic');
    const results = await only(
      { name: 'broken-atomic', create: () => brokenAtomicStore(file), worker: fileWorker },
      'concurrency',
      "atomic merges into one resource's working memory survive",
      "atomic merges into one thread's",
      'concurrent updateThread metadata merges',
      'concurrent updateResource metadata merges',
    );
    for (const prefix of [
      "atomic merges into one resource's working memory survive",
      "atomic merges into one thread's",
    ]) {
      const r = result(results, prefix);
      expect(r.status, prefix).toBe('fail');
      expect(message(r)).toMatch(/acknowledged writes were lost \(\d+ keys survived; 4 OS processes\)/);
    }
    // The store's other writes hold the file lock, so only the atomic merges lose keys.
    expect(result(results, 'concurrent updateThread metadata merges').status).toBe('pass');
    expect(result(results, 'concurrent updateResource metadata merges').status).toBe('pass');
  });

  it('(b) include windows leaking across resources fail messages and isolation', async () => {
    const init = {
      name: 'leaky-include',
      create: () => new LeakyIncludeStore(),
      breakConnection: breakMemory,
    };
    expect(failures(await area(init, 'messages'))).toEqual(['include windows are restricted to resourceId']);
    expect(failures(await area(init, 'isolation'))).toEqual([
      'ids that are prefixes of each other (r1/r10) do not see each other',
      expect.stringMatching(/^every call given both ids treats a thread of another resource as absent/),
    ]);
    expect(failures(await area(init, 'records'))).toEqual([]);
  });

  it('(c) swallowed read errors fail the errors area, one check per read', async () => {
    const init = { name: 'swallowing', create: () => new SwallowingStore(), breakConnection: breakMemory };
    const results = await area(init, 'errors');
    expect(failures(results)).toEqual(
      ['getThreadById', 'listThreads', 'listMessages', 'listMessagesById', 'getResourceById'].map(
        (m) => `${m} on a broken backend throws STORAGE/CONNECTION, never an empty answer`,
      ),
    );
    expect(message(result(results, 'listMessages on a broken backend'))).toContain(
      'must throw MemoryError STORAGE/CONNECTION, but it returned {"messages":[]',
    );
  });

  it('(d) dates returned as strings fail records and the differential tests', async () => {
    const init = { name: 'string-dates', create: () => new StringDatesStore() };
    const records = await area(init, 'records');
    expect(failures(records)).toEqual(
      expect.arrayContaining([
        "thread round-trips: '' title, metadata JSON, Dates with milliseconds",
        'message createdAt keeps milliseconds and comes back as a Date',
        "resource working memory round-trips: '', null, unicode Markdown",
      ]),
    );
    expect(message(result(records, 'message createdAt'))).toContain('must be a Date object');
    const differential = await area(init, 'differential');
    expect(failures(differential)).toHaveLength(1);
    const text = message(differential[0]!);
    expect(text).toMatch(/differs from the in-memory reference store|the stored state differs after/);
    expect(text).toMatch(/\n\s+1\. \w+\(\{/);
    expect(text).toContain('<store time>');
    expect(text).toMatch(/replay with \{ seed: -?\d+, path: "[\d:]+" \}/);
  });

  it("(e) '' title and working memory lost as null fail records", async () => {
    const init = { name: 'loses-empty', create: () => new LosesEmptyStringsStore() };
    const records = await area(init, 'records');
    expect(failures(records)).toEqual(
      expect.arrayContaining([
        "thread round-trips: '' title, metadata JSON, Dates with milliseconds",
        "thread-scoped working memory '' round-trips as ''",
        "resource working memory round-trips: '', null, unicode Markdown",
      ]),
    );
    expect(message(result(records, "thread-scoped working memory ''"))).toContain('expected: ""');
  });

  it('the reference store passes every area with breakConnection and withSecret, and names why checks skip without them', async () => {
    const full = await runChecks({
      name: 'memory',
      create: () => new BreakableMemoryStore(),
      breakConnection: breakMemory,
      withSecret: unreachableWithSecret,
      storedRows: memoryRows,
    });
    expect(full.filter((r) => r.status === 'fail').map((r) => [r.name, message(r)])).toEqual([]);
    const skipped = full.filter((r) => r.status === 'skip').map((r) => r.reason);
    expect(skipped).toEqual([
      'only for stores without capabilities.atomicWorkingMemory; this store declares it',
      'the store is processLocal: no other process can write inside its updates',
      'the store is processLocal: no other process can write inside its updates',
      'the store is processLocal: no other process can write inside its updates',
      // The reference ranks with statistics over the whole index, not per resource.
      'memory ranks with "bm25": statistics over the whole index',
      // The keyword switch check: no place to open again with the index off.
      'no `fresh` hook with `createWithoutKeywords` supplied, so an index turned off and on again cannot be checked',
      // The two-store checks of turns and settings.
      'memory is processLocal: each instance has its own data',
      'memory is processLocal: each instance has its own data',
    ]);
    const bare = await runChecks(
      { name: 'memory', create: () => new BreakableMemoryStore() },
      { areas: ['errors'] },
    );
    expect(bare.filter((r) => r.status === 'skip').map((r) => r.reason)).toEqual([
      ...Array.from({ length: 6 }, () => 'no breakConnection hook supplied'),
      'no withSecret hook supplied',
      'no breakConnection hook supplied',
    ]);
  });
});

describe('the suite catches further defects', RACES, () => {
  it('a lock that is an unfenced lease fails the stopped-writer race (4 OS processes)', async () => {
    const file = sharedFile('lease');
    const init = {
      name: 'unfenced-lease',
      create: () => fileStore(file, 'lease'),
      worker: fileWorker,
      leaseMs: FILE_LEASE_MS,
    };
    const stopped = result(
      await only(init, 'concurrency', 'a writer process stopped (SIGSTOP)'),
      'a writer process stopped (SIGSTOP)',
    );
    expect(stopped.status).toBe('fail');
    // Whichever the race meets first: a merge written back over the others', or the message's patch.
    expect(message(stopped)).toMatch(
      /acknowledged writes were lost .*one stopped 5× for 1000 ms|the resumed writer wrote back the message it had read before the stop/,
    );
  });

  it('a lock left behind by a write whose update function threw fails concurrency (4 OS processes)', async () => {
    const file = sharedFile('unlock');
    const init = { name: 'stuck-lock', create: () => fileStore(file, 'unlock'), worker: fileWorker };
    const [raced] = await only(
      init,
      'concurrency',
      "atomic merges into one resource's working memory racing merges whose update function throws",
    );
    expect(raced?.status).toBe('fail');
    expect(message(raced!)).toMatch(/only \d+ of \d+ operations succeeded \(\d+ gave up with CONFLICT\)/);
  });

  it('non-atomic updateThread/updateResource metadata merges fail concurrency (4 OS processes)', async () => {
    const file = sharedFile('metadata');
    const init = {
      name: 'stale-metadata',
      create: () => fileStore(file, 'metadata'),
      worker: fileWorker,
    };
    const results = await only(
      init,
      'concurrency',
      'concurrent updateThread metadata merges',
      'concurrent updateResource metadata merges',
    );
    expect(result(results, 'concurrent updateThread metadata merges').status).toBe('fail');
    expect(result(results, 'concurrent updateResource metadata merges').status).toBe('fail');
    expect(message(result(results, 'concurrent updateThread metadata merges'))).toMatch(
      /acknowledged writes were lost/,
    );
  });

  it('a save stamping updatedAt before waiting for its lock fails the updatedAt checks (4 OS processes)', async () => {
    const file = sharedFile('stamp');
    const init = { name: 'pre-stamped', create: () => fileStore(file, 'stamp'), worker: fileWorker };
    const results = await only(
      init,
      'concurrency',
      'thread.updatedAt never goes backwards',
      'thread.updatedAt never moves back',
      'concurrent updateThread metadata merges',
    );
    const racing = result(results, 'thread.updatedAt never goes backwards');
    expect(racing.status).toBe('fail');
    expect(message(racing)).toMatch(/went backwards [1-9]\d* times|older than its newest message/);
    expect(result(results, 'thread.updatedAt never moves back').status).toBe('fail');
    expect(result(results, 'concurrent updateThread metadata merges').status).toBe('pass');
  });

  it('init() that fails beside a concurrent init() fails the concurrent-init race (4 OS processes)', async () => {
    const file = sharedFile('init');
    const init = {
      name: 'racy-init',
      create: () => fileStore(file),
      worker: fileWorker,
      fresh: freshFile('init'),
    };
    const race = result(
      await only(init, 'concurrency', 'init() of one new store'),
      'init() of one new store',
    );
    expect(race.status).toBe('fail');
    expect(message(race)).toMatch(/operations failed, e\.g\. init p\d: .*ECONNRESET/);
  });

  it('a store that keeps a nested value replaced by same values under other keys fails threads, messages, resources and differential', async () => {
    const init = { name: 'keyless-compare', create: () => new KeylessCompareStore() };
    expect(failures(await area(init, 'threads'))).toEqual([
      'metadata replaced by the same values under other keys is stored (saveThread, updateThread)',
    ]);
    expect(failures(await area(init, 'messages'))).toEqual([
      'content replaced by the same values under other keys is stored (saveMessages, updateMessages)',
    ]);
    expect(failures(await area(init, 'resources'))).toEqual([
      'resource metadata replaced by the same values under other keys is stored',
    ]);
    expect(failures(await area(init, 'differential'))).toHaveLength(1);
  });

  it('resource ids matched by prefix fail isolation (r1 sees r10)', async () => {
    const init = { name: 'prefix-match', create: () => new PrefixMatchStore() };
    const results = await area(init, 'isolation');
    expect(failures(results)).toContain('ids that are prefixes of each other (r1/r10) do not see each other');
    expect(message(result(results, 'ids that are prefixes'))).toContain('r1: listThreads({ resourceId })');
  });

  it('a lookup that ignores resourceId fails only the ownership check of calls given both ids', async () => {
    const results = await area(
      { name: 'owner-blind', create: () => new OwnerBlindLookupStore() },
      'isolation',
    );
    expect(failures(results)).toEqual([
      'ids that are prefixes of each other (r1/r10) do not see each other',
      // It drops every key but threadId, so a misspelt resourceID goes unnoticed too.
      expect.stringMatching(/^a misspelt scoping key \(resourceID, threadID\) is refused/),
      expect.stringMatching(/^every call given both ids treats a thread of another resource as absent/),
    ]);
    expect(message(result(results, 'every call given both ids'))).toContain(
      "getThreadById of the other resource's thread as resource",
    );
  });

  it('an atomic working-memory update that drops one of the two ids fails its ownership check', async () => {
    const results = await area(
      { name: 'owner-blind-atomic', create: () => new OwnerBlindAtomicStore() },
      'isolation',
    );
    expect(failures(results)).toEqual([
      expect.stringMatching(
        /^updateWorkingMemoryAtomically given both ids refuses a thread of another resource/,
      ),
    ]);
    expect(message(result(results, 'updateWorkingMemoryAtomically given both ids'))).toMatch(
      /expected a MemoryError \(INVALID_ARGUMENT\), but it resolved/,
    );
  });

  it('a check-then-write createThread fails only the createThread race', async () => {
    const init = { name: 'check-then-write', create: () => new CheckThenWriteStore() };
    const results = await area(init, 'threads');
    expect(failures(results)).toEqual([
      expect.stringMatching(/^concurrent Memory\.createThread with one new id/),
    ]);
    expect(result(results, 'createThread inserts a new thread').status).toBe('pass');
    expect(message(result(results, 'concurrent Memory.createThread'))).toMatch(/racers told that they won/);
  });

  it('a message ownership check done by a read before the write fails only the race of resources', async () => {
    const init = { name: 'racy-ownership', create: () => new RacyOwnershipStore() };
    const results = await area(init, 'isolation');
    expect(failures(results)).toEqual([
      expect.stringMatching(/^concurrent saveMessages of one new message id/),
    ]);
    expect(result(results, "saveMessages with another resource's message id").status).toBe('pass');
  });

  it('equal createdAt in no defined order fails messages and the differential tests', async () => {
    const init = { name: 'unordered-ties', create: () => new UnorderedTiesStore() };
    expect(failures(await area(init, 'messages'))).toContain(
      'ordered by (createdAt, id), equal createdAt broken by id, both directions',
    );
    expect(failures(await area(init, 'differential'))).toHaveLength(1);
  });

  it('a resource listing that repeats its `after` id fails the differential tests', async () => {
    const init = { name: 'inclusive-after', create: () => new InclusiveAfterStore() };
    const [differential] = await area(init, 'differential');
    expect(differential?.status).toBe('fail');
    expect(message(differential!)).toMatch(/resourceIds/);
  });

  it('exclusive date bounds treated as inclusive fail messages', async () => {
    const init = { name: 'inclusive-range', create: () => new InclusiveRangeStore() };
    expect(failures(await area(init, 'messages'))).toEqual([
      'date ranges: inclusive by default, exclusive bounds, open ends',
    ]);
  });
});

describe('the suite catches broken observation logs', () => {
  it('swaps that do not compare (last writer wins) fail observations, the random turns too', async () => {
    const results = await only(
      { name: 'last-writer-wins', create: lastWriterWinsLogsStore },
      'observations',
      'a swap wins only against the newest generation',
      'racing swaps across',
      'random turns never lose a message',
    );
    expect(failures(results)).toEqual([
      expect.stringMatching(/^a swap wins only against the newest generation/),
      expect.stringMatching(/^racing swaps across/),
      expect.stringMatching(/^random turns never lose a message/),
    ]);
    // A lost log update loses the message from the agent's view; the shrink is bounded (30 s).
    expect(message(result(results, 'random turns'))).toMatch(
      /neither observed nor in the raw tail[\s\S]*fast-check: failed after \d+ runs, shrunk \d+ times/,
    );
  });

  it('a thread delete that leaves its log fails observations, the swaps into deleted threads too', async () => {
    const results = await area({ name: 'orphan-logs', create: orphanLogsStore }, 'observations');
    expect(failures(results)).toEqual([
      expect.stringMatching(/^deleting a thread deletes its log/),
      // core's removal of a deleted thread's log goes through the same hook
      expect.stringMatching(/^a thread log's swap into a thread that does not exist, or was deleted/),
      expect.stringMatching(/^swaps racing deleteThread of their thread/),
    ]);
  });

  it('the reference store passes observations; a store without the domain skips it with the reason', async () => {
    const passing = await area({ name: 'memory', create: () => new InMemoryStore() }, 'observations');
    expect(passing.map((r) => r.status)).toEqual(passing.map(() => 'pass'));
    expect(passing.length).toBeGreaterThanOrEqual(8);
    const skipped = await area(
      { name: 'plain', create: () => new InMemoryStore({ observations: false }) },
      'observations',
    );
    expect(skipped.map((r) => r.status)).toEqual(skipped.map(() => 'skip'));
  });
});

describe('the suite catches broken turn records', () => {
  it('ties on createdAt listed by id ascending fail turns', async () => {
    const results = await area({ name: 'ties-ascending', create: tiesAscendingTurnsStore }, 'turns');
    expect(failures(results)).toEqual([expect.stringMatching(/^list is newest first/)]);
  });

  it('a store that logs the ids of deleted messages and never erases the log fails the erasure check', async () => {
    const keepsIds = () => {
      const driver = new MemoryDriver();
      const log = new Map<string, string>();
      Object.assign(driver, { removalLog: log });
      const remove = driver.messages.remove.bind(driver.messages);
      driver.messages.remove = async (tx, ids) => {
        for (const id of ids) log.set(id, 'removed');
        return remove(tx, ids);
      };
      return createStore(driver);
    };
    const name = 'after deleteResource no row of the backend names the resource';
    const results = await only(
      { name: 'keeps-ids', create: keepsIds, storedRows: memoryRows },
      'purge',
      name,
    );
    expect(failures(results)).toEqual([expect.stringMatching(/^after deleteResource no row/)]);
    expect(message(result(results, name))).toMatch(
      /rows naming "erased-[^"]+" after deleteResource \(\d+ in all\)/,
    );
  });

  it('a message delete that leaves its turn row fails turns', async () => {
    const results = await area({ name: 'orphan-turns', create: orphanTurnsStore }, 'turns');
    expect(failures(results)).toEqual([expect.stringMatching(/^deleting a thread removes its rows/)]);
  });

  it('the reference store passes turns; a store without the domain skips it with the reason', async () => {
    const passing = await area({ name: 'memory', create: () => new InMemoryStore() }, 'turns');
    // two stores of the reference are two databases (processLocal): that check skips
    expect(passing.map((r) => r.status)).toEqual(
      passing.map((r) => (r.name.startsWith('two stores') ? 'skip' : 'pass')),
    );
    expect(passing.length).toBe(11);
    const skipped = await area({ name: 'plain', create: () => new InMemoryStore({ turns: false }) }, 'turns');
    expect(skipped.map((r) => r.status)).toEqual(skipped.map(() => 'skip'));
    expect(skipped[0]?.reason).toMatch(/declares no turns/);
  });
});

describe('the suite catches broken vector stores', () => {
  it('a vector search that ignores the scope filter fails recall', async () => {
    const results = await area({ name: 'scope-blind', create: () => new ScopeBlindVectorsStore() }, 'recall');
    expect(failures(results)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^resource scope never returns another resource's messages/),
        expect.stringMatching(/^thread scope never returns another thread's messages/),
      ]),
    );
    expect(message(result(results, 'resource scope'))).toMatch(/expected:/);
  });

  it('a search that ranks before it filters (ANN-style post-filter) fails recall', async () => {
    const results = await area({ name: 'post-filter', create: () => new PostFilterVectorsStore() }, 'recall');
    expect(failures(results)).toContain(
      'scope is applied before ranking: K hits even when other scopes hold closer vectors [needs vectors]',
    );
    expect(message(result(results, 'scope is applied before ranking'))).toMatch(/topK 3 in a resource/);
  });

  it('deletes that leave vectors behind fail recall', async () => {
    const results = await area({ name: 'orphan-vectors', create: () => new OrphanVectorsStore() }, 'recall');
    expect(failures(results)).toEqual([
      expect.stringMatching(/^deleting a message or a thread deletes its vectors/),
      expect.stringMatching(/^upsertVectors racing deleteThread/),
    ]);
    expect(message(result(results, 'deleting a message'))).toMatch(/vectors left after deleting/);
    // The thread-delete race catches it too, from the vectors its writers upserted before it.
    const [raced] = await only(
      { name: 'orphan-vectors', create: () => new OrphanVectorsStore() },
      'threads',
      'deleteThread while other store instances keep saving',
    );
    expect(raced?.status).toBe('fail');
    expect(message(raced!)).toMatch(/^vectors of the deleted thread/);
  });

  it('vectors upserted after an existence check made before the lock fail the upsert/delete race', async () => {
    const file = sharedFile('vector-check');
    const init = { name: 'vector-check', create: () => new JsonStore({ file, defect: 'vector-check' }) };
    const [raced] = await only(init, 'recall', 'upsertVectors racing deleteThread');
    expect(raced?.status).toBe('fail');
    expect(message(raced!)).toMatch(/rounds left vectors of the messages deleteThread removed/);
  });

  it('vectors that accept a zero vector (and score it NaN) fail recall', async () => {
    const results = await area({ name: 'unchecked', create: () => new UncheckedVectorsStore() }, 'recall');
    expect(failures(results)).toEqual([expect.stringMatching(/^huge \(1e300\) and subnormal/)]);
    expect(message(result(results, 'huge (1e300)'))).toMatch(/upserting an all-zero vector/);
  });

  it('a keyword index that keeps the words of a tool message fails recall', async () => {
    const file = tempStoreFile('engram-conformance-role-');
    const results = await area({ name: 'role-blind', create: () => fileStore(file, 'role') }, 'recall');
    expect(failures(results)).toEqual([expect.stringMatching(/^the index follows each write at once/)]);
    expect(message(result(results, 'the index follows each write at once'))).toMatch(
      /gone after a patch makes it a tool message/,
    );
  });

  it('the reference store passes recall; a store without vectors or keywords skips it with the reason', async () => {
    const passing = await area({ name: 'memory', create: () => new InMemoryStore() }, 'recall');
    // Every check passes but the one for stores with per-resource statistics (the reference's are
    // over the whole index).
    const perResource = result(passing, 'statistics per resource');
    expect([perResource.status, perResource.reason]).toEqual([
      'skip',
      expect.stringContaining('whole index'),
    ]);
    // And the keyword switch check, which needs a place to open again with the index off.
    const keywordSwitch = result(passing, 'an index turned off');
    expect([keywordSwitch.status, keywordSwitch.reason]).toEqual([
      'skip',
      expect.stringContaining('createWithoutKeywords'),
    ]);
    const others = passing.filter((r) => r !== perResource && r !== keywordSwitch);
    expect(others.map((r) => r.status)).toEqual(others.map(() => 'pass'));
    expect(passing.length).toBeGreaterThanOrEqual(8);
    const skipped = await area(
      { name: 'plain', create: () => new InMemoryStore({ vectors: false, keywords: false }) },
      'recall',
    );
    expect(
      skipped.every((r) => r.status === 'skip' && /declares no (vectors|keyword index)/.test(r.reason ?? '')),
    ).toBe(true);
  });
});

describe('capabilities drive skips', () => {
  it('a store declaring atomicWorkingMemory: false passes, skipping only what needs it', async () => {
    const create = () => new DeclaredStore({ atomicWorkingMemory: false });
    const results = await runChecks({
      name: 'non-atomic',
      create,
      breakConnection: breakMemory,
      withSecret: unreachableWithSecret,
      storedRows: memoryRows,
    });
    expect(results.filter((r) => r.status === 'fail').map((r) => [r.name, message(r)])).toEqual([]);
    // The one skip a process-local store gets for that: no other process can hold its locks.
    const stopped = result(results, 'a writer process stopped (SIGSTOP)');
    expect([stopped.status, stopped.reason]).toEqual(['skip', expect.stringContaining('processLocal')]);
    // And the one for stores whose keyword statistics are per resource (the reference's are not).
    const perResource = result(results, 'statistics per resource');
    expect([perResource.status, perResource.reason]).toEqual([
      'skip',
      expect.stringContaining('whole index'),
    ]);
    // And the turns and settings checks of two stores on one database: each process-local instance has its own.
    const twoStores = results.filter((r) => r.name.startsWith('two stores on one database'));
    expect(twoStores.map((r) => [r.status, r.reason])).toEqual([
      ['skip', expect.stringContaining('processLocal')],
      ['skip', expect.stringContaining('processLocal')],
    ]);
    // And the keyword switch check, which needs `fresh` with `createWithoutKeywords`.
    const keywordSwitch = result(results, 'an index turned off');
    expect([keywordSwitch.status, keywordSwitch.reason]).toEqual([
      'skip',
      expect.stringContaining('createWithoutKeywords'),
    ]);
    const skipped = results.filter(
      (r) =>
        r.status === 'skip' && ![stopped, perResource, keywordSwitch].includes(r) && !twoStores.includes(r),
    );
    expect(skipped.map((r) => r.reason)).toEqual(
      Array.from({ length: skipped.length }, () =>
        expect.stringContaining('needs capabilities.atomicWorkingMemory, which this store does not declare'),
      ),
    );
    expect(skipped.every((r) => r.name.endsWith('[needs capabilities.atomicWorkingMemory]'))).toBe(true);
    expect(skipped).toHaveLength(10);
    expect(result(results, 'schema mode: mergeWorkingMemory is UNSUPPORTED').status).toBe('pass');
  });

  it('a third-party MemoryStorage that declares no capabilities is held to the non-atomic checks', async () => {
    const results = await area({ name: 'plain', create: () => new PlainNonAtomicStore() }, 'working-memory');
    expect(failures(results)).toEqual([]);
    expect(result(results, 'schema mode: mergeWorkingMemory is UNSUPPORTED').status).toBe('pass');
    expect(results.filter((r) => r.status === 'skip').length).toBeGreaterThan(0);
  });

  it('a store declaring transactionalBatches: true that writes half a batch before failing fails', async () => {
    const results = await area(
      { name: 'half-batch', create: () => new MessageByMessageStore(true) },
      'messages',
    );
    expect(failures(results)).toEqual([expect.stringMatching(/^saveMessages is all-or-nothing/)]);
    expect(failures(results)[0]).toContain('[capabilities.transactionalBatches: true]');
    expect(message(result(results, 'saveMessages is all-or-nothing'))).toContain('nothing was saved');
  });

  it('the same store declaring transactionalBatches: false passes: its weaker promise is checked, not skipped', async () => {
    const results = await area(
      { name: 'by-message', create: () => new MessageByMessageStore(false) },
      'messages',
    );
    expect(failures(results)).toEqual([]);
    const weaker = result(results, 'a batch that failed at a missing thread');
    expect(weaker.status).toBe('pass');
    const strict = result(results, 'saveMessages is all-or-nothing');
    expect([strict.status, strict.reason]).toEqual([
      'skip',
      expect.stringContaining('checks capabilities.transactionalBatches: true; this store declares false'),
    ]);
    expect(strict.name).toContain('[capabilities.transactionalBatches: true]');
  });

  it('a store declaring transactionalBatches: false whose batch saved again is not complete fails', async () => {
    const results = await area(
      { name: 'resume-skipping', create: () => new ResumeSkippingStore() },
      'messages',
    );
    expect(failures(results)).toContain(result(results, 'a batch that failed at a missing thread').name);
    expect(message(result(results, 'a batch that failed at a missing thread'))).toContain(
      'the first thread holds the batch',
    );
  });

  it('a purge that deletes messages, then threads, with no transaction around them fails the purge race', async () => {
    const results = await area({ name: 'two-step-purge', create: () => new TwoStepPurgeStore() }, 'purge');
    const race = result(results, 'deleteResource while writers keep writing');
    expect(race.status).toBe('fail');
    expect(message(race)).toMatch(/without their thread/);
  });

  it('(f) a store that keeps working after close() fails the lifecycle area', async () => {
    const results = await area({ name: 'immortal', create: () => new ImmortalStore() }, 'lifecycle');
    expect(failures(results)).toEqual([
      'after close() every call, init() included, rejects with CONNECTION "closed"',
      'close() during init() in flight: init settles, later calls reject, data is intact',
    ]);
    expect(message(result(results, 'after close()'))).toContain('init() after close()');
  });

  it('(g) an error carrying the payload it was given fails the errors area', async () => {
    const init = { name: 'leaky-error', create: () => new LeakyErrorStore(), breakConnection: breakMemory };
    const results = await area(init, 'errors');
    expect(failures(results)).toEqual([
      'a failed write names the operation, never the payload (message, String(error), causes)',
    ]);
    expect(message(result(results, 'a failed write'))).toContain('saveMessages on a broken backend');
  });

  it('(i) an error whose cause names the configured token fails the errors area', async () => {
    const init = {
      name: 'leaky-credentials',
      create: () => new BreakableMemoryStore(),
      withSecret: (secret: string) => ({ 'token, broken backend': () => new LeakyCredentialsStore(secret) }),
    };
    const results = await area(init, 'errors');
    expect(failures(results)).toEqual([
      'a store configured with a password or token never shows it in an error (message, String(error), stack, causes)',
    ]);
    expect(message(result(results, 'a store configured with'))).toContain(
      'token, broken backend: init(): the error shows the configured secret',
    );
  });

  it('(h) a store that accepts a page past 2^31 - 1 fails the errors area', async () => {
    const init = { name: 'unbounded', create: () => new UnboundedPageStore(), breakConnection: breakMemory };
    const results = await area(init, 'errors');
    expect(failures(results)).toEqual([expect.stringMatching(/^numbers out of 0\.\.2147483647/)]);
    expect(message(results.find((r) => r.status === 'fail')!)).toContain('page 2147483648');
  });

  it('a settings put that merges into the stored value fails the settings area; a store without settings skips it', async () => {
    const merging = (): MemoryStorage => {
      const driver = new MemoryDriver();
      const rows = new Map<string, string>();
      driver.settings = {
        get: async (key) => rows.get(key) ?? null,
        put: async (key, json) => {
          rows.set(key, JSON.stringify({ ...JSON.parse(rows.get(key) ?? '{}'), ...JSON.parse(json) }));
        },
      };
      return createStore(driver);
    };
    const results = await area({ name: 'merging-settings', create: merging }, 'settings');
    expect(failures(results)).toEqual([expect.stringMatching(/^put replaces the whole value/)]);
    const bare = await area(
      { name: 'no-settings', create: () => new InMemoryStore({ settings: false }) },
      'settings',
    );
    expect(bare.every((r) => r.status === 'skip' && /declares no settings/.test(r.reason ?? ''))).toBe(true);
  });
});
