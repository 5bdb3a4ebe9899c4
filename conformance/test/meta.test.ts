import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryStore } from '@engram/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type AreaName, type CheckResult, type ConformanceInit, runChecks } from '../src/index.ts';
import { BreakableMemoryStore } from './support/breakable.ts';
import {
  brokenAtomicStore,
  ImmortalStore,
  InclusiveRangeStore,
  LeakyErrorStore,
  LeakyIncludeStore,
  LosesEmptyStringsStore,
  PrefixMatchStore,
  StringDatesStore,
  SwallowingStore,
  UnboundedPageStore,
  UnorderedTiesStore,
} from './support/broken.ts';
import { OrphanVectorsStore, ScopeBlindVectorsStore } from './support/broken-vectors.ts';
import { type FileStoreDefect, JsonFileStore } from './support/file-store.ts';
import { breakMemory } from './support/stores.ts';

const fileWorker = new URL('./fixtures/file-store-worker.ts', import.meta.url);

/** A fresh JSON file for a file-backed store, exported to the racing processes. */
function sharedFile(defect: FileStoreDefect): string {
  const file = join(mkdtempSync(join(tmpdir(), 'engram-conformance-')), 'store.json');
  process.env.ENGRAM_CONFORMANCE_FILE = file;
  process.env.ENGRAM_CONFORMANCE_DEFECT = defect;
  return file;
}

afterEach(() => {
  delete process.env.ENGRAM_CONFORMANCE_FILE;
  delete process.env.ENGRAM_CONFORMANCE_DEFECT;
});

async function area(init: ConformanceInit, name: AreaName): Promise<CheckResult[]> {
  return runChecks(init, { areas: [name] });
}

function failures(results: CheckResult[]): string[] {
  return results.filter((r) => r.status === 'fail').map((r) => r.name);
}

function result(results: CheckResult[], prefix: string): CheckResult {
  const found = results.find((r) => r.name.startsWith(prefix));
  if (!found) throw new Error(`no check named ${prefix}…`);
  return found;
}

function message(r: CheckResult): string {
  return r.error instanceof Error ? r.error.message : String(r.error);
}

describe('the cross-process harness', () => {
  it('passes a store that is atomic across processes (a locked JSON file, 4 OS processes)', async () => {
    const file = sharedFile('none');
    const results = await area(
      { name: 'json-file', create: () => new JsonFileStore(file), worker: fileWorker },
      'concurrency',
    );
    expect(results.map((r) => [r.name, r.status, message(r)]).filter(([, s]) => s !== 'pass')).toEqual([]);
    expect(results).toHaveLength(6);
    const lines = results.flatMap((r) => r.output);
    expect(lines).toContain(
      'resource working-memory merges: 4 OS processes, 100 operations (100 succeeded, 0 CONFLICT, 0 failed); 100/100 keys survived',
    );
    expect(lines.filter((l) => l.includes('4 OS processes'))).toHaveLength(6);
  });

  it('fails a store claiming atomic merges that supplies no worker and is not process-local', async () => {
    const notLocal = () =>
      Object.defineProperty(new BreakableMemoryStore(), 'processLocal', { value: false });
    const results = await area({ name: 'no-worker', create: notLocal }, 'concurrency');
    const merge = result(results, "atomic merges into one resource's working memory");
    expect(merge.status).toBe('fail');
    expect(message(merge)).toContain('no `worker` was supplied');
    expect(message(merge)).toContain('processLocal');
    expect(result(results, 'concurrent updateThread metadata merges').status).toBe('pass');
  });
});

describe('the suite catches deliberately broken stores', () => {
  it('(a) an "atomic" merge that reads, awaits, then writes fails concurrency (4 OS processes)', async () => {
    const file = sharedFile('atomic');
    const results = await area(
      { name: 'broken-atomic', create: () => brokenAtomicStore(file), worker: fileWorker },
      'concurrency',
    );
    for (const prefix of ["atomic merges into one resource's", "atomic merges into one thread's"]) {
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

  it('the reference store passes every area with breakConnection, and names why checks skip without it', async () => {
    const full = await runChecks({
      name: 'memory',
      create: () => new BreakableMemoryStore(),
      breakConnection: breakMemory,
    });
    expect(full.filter((r) => r.status === 'fail').map((r) => [r.name, message(r)])).toEqual([]);
    const skipped = full.filter((r) => r.status === 'skip').map((r) => r.reason);
    expect(skipped).toEqual(['the store declares supportsAtomicWorkingMemoryMerge: true']);
    const bare = await runChecks(
      { name: 'memory', create: () => new BreakableMemoryStore() },
      { areas: ['errors'] },
    );
    expect(bare.filter((r) => r.status === 'skip').map((r) => r.reason)).toEqual(
      Array.from({ length: 7 }, () => 'no breakConnection hook supplied'),
    );
  });
});

describe('the suite catches further defects', () => {
  it('non-atomic updateThread/updateResource metadata merges fail concurrency (4 OS processes)', async () => {
    const file = sharedFile('metadata');
    const init = {
      name: 'stale-metadata',
      create: () => new JsonFileStore(file, 'metadata'),
      worker: fileWorker,
    };
    const results = await area(init, 'concurrency');
    expect(result(results, 'concurrent updateThread metadata merges').status).toBe('fail');
    expect(result(results, 'concurrent updateResource metadata merges').status).toBe('fail');
    expect(message(result(results, 'concurrent updateThread metadata merges'))).toMatch(
      /acknowledged writes were lost/,
    );
  });

  it('resource ids matched by prefix fail isolation (r1 sees r10)', async () => {
    const init = { name: 'prefix-match', create: () => new PrefixMatchStore() };
    const results = await area(init, 'isolation');
    expect(failures(results)).toContain('ids that are prefixes of each other (r1/r10) do not see each other');
    expect(message(result(results, 'ids that are prefixes'))).toContain('r1: listThreads({ resourceId })');
  });

  it('equal createdAt in no defined order fails messages and the differential tests', async () => {
    const init = { name: 'unordered-ties', create: () => new UnorderedTiesStore() };
    expect(failures(await area(init, 'messages'))).toContain(
      'ordered by (createdAt, id), equal createdAt broken by id, both directions',
    );
    expect(failures(await area(init, 'differential'))).toHaveLength(1);
  });

  it('exclusive date bounds treated as inclusive fail messages', async () => {
    const init = { name: 'inclusive-range', create: () => new InclusiveRangeStore() };
    expect(failures(await area(init, 'messages'))).toEqual([
      'date ranges: inclusive by default, exclusive bounds, open ends',
    ]);
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

  it('deletes that leave vectors behind fail recall', async () => {
    const results = await area({ name: 'orphan-vectors', create: () => new OrphanVectorsStore() }, 'recall');
    expect(failures(results)).toEqual([
      expect.stringMatching(/^deleting a message or a thread deletes its vectors/),
    ]);
    expect(message(result(results, 'deleting a message'))).toMatch(/vectors left after deleting/);
  });

  it('the reference store passes recall; a store without vectors skips it with the reason', async () => {
    const passing = await area({ name: 'memory', create: () => new InMemoryStore() }, 'recall');
    expect(passing.map((r) => r.status)).toEqual(passing.map(() => 'pass'));
    expect(passing.length).toBeGreaterThanOrEqual(8);
    const skipped = await area(
      { name: 'plain', create: () => new InMemoryStore({ vectors: false }) },
      'recall',
    );
    expect(skipped.every((r) => r.status === 'skip' && /declares no vectors/.test(r.reason ?? ''))).toBe(
      true,
    );
  });
});

describe('capabilities drive skips', () => {
  it('a store declaring supportsAtomicWorkingMemoryMerge: false passes, skipping only what needs it', async () => {
    const create = () =>
      Object.defineProperty(new BreakableMemoryStore(), 'supportsAtomicWorkingMemoryMerge', { value: false });
    const results = await runChecks({ name: 'non-atomic', create, breakConnection: breakMemory });
    expect(results.filter((r) => r.status === 'fail').map((r) => [r.name, message(r)])).toEqual([]);
    const skipped = results.filter((r) => r.status === 'skip');
    expect(skipped.map((r) => r.reason)).toEqual(
      Array.from({ length: skipped.length }, () =>
        expect.stringContaining('supportsAtomicWorkingMemoryMerge: false'),
      ),
    );
    expect(skipped.every((r) => r.name.endsWith('[needs supportsAtomicWorkingMemoryMerge]'))).toBe(true);
    expect(skipped).toHaveLength(6);
    expect(result(results, 'schema mode: mergeWorkingMemory is UNSUPPORTED').status).toBe('pass');
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

  it('(h) a store that accepts a page past 2^31 - 1 fails the errors area', async () => {
    const init = { name: 'unbounded', create: () => new UnboundedPageStore(), breakConnection: breakMemory };
    const results = await area(init, 'errors');
    expect(failures(results)).toEqual([expect.stringMatching(/^numbers out of 0\.\.2147483647/)]);
    expect(message(results.find((r) => r.status === 'fail')!)).toContain('page 2147483648');
  });
});
