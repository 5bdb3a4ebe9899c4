import { describe, it } from 'vitest';
import { nameOf } from './define.ts';
import { checksOf, runCheck, suiteSkipReason } from './run.ts';
import { missingService, type Service } from './services.ts';
import { AREA_TITLES, AREAS, type AreaName, type ConformanceInit } from './types.ts';

/** Areas whose checks race processes or run property tests: they get a longer timeout. */
const SLOW_AREAS = new Set<AreaName>([
  'concurrency',
  'differential',
  'working-memory',
  'recall',
  'observations',
  'purge',
]);
/**
 * Their timeout. FerretDB (MongoDB's wire protocol on SQLite) is the slowest live backend: the
 * observations property test took 83 s alone and over 180 s next to other work on 2 cores.
 */
const SLOW_TIMEOUT_MS = 420_000;

/** Registers one area's checks as vitest tests in the current `describe`. */
function registerArea(init: ConformanceInit, area: AreaName): void {
  describe(AREA_TITLES[area], () => {
    for (const check of checksOf([area])) {
      const name = nameOf(check, init);
      const reason = check.skipReason?.(init);
      if (reason) {
        it.skip(`${name} — skipped: ${reason}`, () => {}); // a declared capability; reason in the name
        continue;
      }
      it(
        name,
        async (context) => {
          const result = await runCheck(init, check, (line) => console.log(`[${init.name}] ${line}`));
          if (result.status === 'skip') context.skip(`skipped: ${result.reason}`);
          if (result.status === 'fail') throw result.error;
        },
        SLOW_AREAS.has(area) ? SLOW_TIMEOUT_MS : undefined,
      );
    }
  });
}

/** Registers the given areas under one `describe` named after the store, or one skipped test. */
function register(init: ConformanceInit, areas: readonly AreaName[]): void {
  const skipped = suiteSkipReason(init);
  describe(`${init.name} conformance`, () => {
    if (skipped) {
      it.skip(`${init.name} conformance — skipped: ${skipped}`, () => {}); // reason in the name
      return;
    }
    for (const area of areas) registerArea(init, area);
  });
}

/**
 * Registers the whole conformance suite for a store with vitest. Call it at the top level of a
 * test file:
 *
 * ```ts
 * runConformance({ name: 'pg', create: async () => new PostgresStore({ connectionString }) });
 * ```
 */
export function runConformance(init: ConformanceInit): void {
  register(init, AREAS);
}

/** Registers only the lifecycle area (lazy open, `init()`, `close()`). */
export const lifecycleSuite = (init: ConformanceInit): void => register(init, ['lifecycle']);
/** Registers only the records area. */
export const recordsSuite = (init: ConformanceInit): void => register(init, ['records']);
/** Registers only the threads area. */
export const threadsSuite = (init: ConformanceInit): void => register(init, ['threads']);
/** Registers only the clone area (`memory.cloneThread`). */
export const cloneSuite = (init: ConformanceInit): void => register(init, ['clone']);
/** Registers only the messages area. */
export const messagesSuite = (init: ConformanceInit): void => register(init, ['messages']);
/** Registers only the resources area. */
export const resourcesSuite = (init: ConformanceInit): void => register(init, ['resources']);
/** Registers only the working-memory area (through `Memory`). */
export const workingMemorySuite = (init: ConformanceInit): void => register(init, ['working-memory']);
/** Registers only the concurrency area (cross-process races when `worker` is given). */
export const concurrencySuite = (init: ConformanceInit): void => register(init, ['concurrency']);
/** Registers only the isolation & hostile ids area. */
export const isolationSuite = (init: ConformanceInit): void => register(init, ['isolation']);
/** Registers only the errors area. */
export const errorsSuite = (init: ConformanceInit): void => register(init, ['errors']);
/** Registers only the differential property tests. */
export const differentialSuite = (init: ConformanceInit): void => register(init, ['differential']);
/** Registers only the semantic recall area (checks skip unless the store declares `vectors`). */
export const recallSuite = (init: ConformanceInit): void => register(init, ['recall']);
/** Registers only the purge area: deleting (and exporting) a resource. */
export const purgeSuite = (init: ConformanceInit): void => register(init, ['purge']);
/** Registers only the settings area (checks skip unless the store declares `settings`). */
export const settingsSuite = (init: ConformanceInit): void => register(init, ['settings']);
/** Registers a chosen set of areas. */
export const areasSuite = (init: ConformanceInit, areas: readonly AreaName[]): void => register(init, areas);

/**
 * `describe` for tests that need a database service: runs `body` with the service's URL when it
 * is set; fails with one test when `ENGRAM_REQUIRE` lists the service but it is missing; and
 * otherwise registers a skipped block whose name carries the reason.
 */
export function describeService(s: Service, name: string, body: (url: string) => void): void {
  if (s.url) {
    const url = s.url;
    describe(name, () => body(url));
  } else if (s.required) {
    describe(name, () => {
      it(`has a server (ENGRAM_REQUIRE lists ${s.name})`, () => {
        throw new Error(missingService(s));
      });
    });
  } else {
    describe.skip(`${name} (skipped: ${s.skipReason})`, () => body('')); // the reason is in the name
  }
}
