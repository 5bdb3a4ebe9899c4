import { capabilitiesOf, type MemoryStorage } from '@engram/core';
import fc from 'fast-check';
import { defineArea } from '../define.ts';
import { compare, type Missing } from '../differential/executor.ts';
import {
  carriesNested,
  OBSERVATION_OPS,
  OPTIONAL_OPS,
  type Op,
  opsArbitrary,
  SETUP_OPS,
  setupArbitrary,
  TURN_OPS,
  VECTOR_OPS,
} from '../differential/ops.ts';
import { assertProperty } from '../property.ts';

const check = defineArea('differential');

/**
 * Property runs per check: 25, or `ENGRAM_DIFFERENTIAL_RUNS` for longer soak runs (the time
 * budget then grows with it, 2.4 s per run). Modest by default: adapters run this on real databases.
 */
export const DIFFERENTIAL_RUNS = runsFromEnv(process.env.ENGRAM_DIFFERENTIAL_RUNS) ?? 25;
/** The longest operation sequence. */
export const MAX_OPS = 20;
/** Time budget per run; when spent, the remaining runs are left out (the log line says how many ran). */
const MS_PER_RUN = 2_400;

function runsFromEnv(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const runs = Number(value);
  if (!Number.isInteger(runs) || runs < 1) {
    throw new Error(`ENGRAM_DIFFERENTIAL_RUNS must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return runs;
}

/** The optional operations `store` does not offer: atomic merges need the capability too. */
function missingOps(store: MemoryStorage): Missing {
  const missing = new Set<Op['op']>();
  for (const [op, method] of Object.entries(OPTIONAL_OPS) as [Op['op'], keyof MemoryStorage][]) {
    if (typeof store[method] !== 'function') missing.add(op);
  }
  if (!capabilitiesOf(store).atomicWorkingMemory) missing.add('atomic');
  if (!store.turns) for (const op of TURN_OPS) missing.add(op);
  if (!store.keywords) missing.add('keywordSearch');
  if (!store.vectors) for (const op of VECTOR_OPS) missing.add(op);
  if (!store.observations) for (const op of OBSERVATION_OPS) missing.add(op);
  if (!store.vectors?.searchWithWindows) missing.add('vectorWindows');
  if (!store.vectors?.historyInSearch) missing.add('vectorHistory');
  return missing;
}

/** Random operation sequences give the same results as the in-memory reference store. */
export const differentialChecks = [
  check(
    `random operation sequences match the in-memory reference (${DIFFERENTIAL_RUNS} runs × ≤${MAX_OPS} ops)`,
    async (ctx) => {
      const store = await ctx.store();
      const missing = missingOps(store);
      let sequences = 0;
      let operations = 0;
      let nested = 0;
      let turnOps = 0;
      let keywordOps = 0;
      let vectorOps = 0;
      let observationOps = 0;
      let reimports = 0;
      await assertProperty(
        fc.asyncProperty(setupArbitrary, opsArbitrary(MAX_OPS - SETUP_OPS), async (setup, ops) => {
          const ran = await compare(store, [...setup, ...ops], missing);
          sequences++;
          operations += ran.length;
          nested += ran.filter(carriesNested).length;
          turnOps += ran.filter((op) => (TURN_OPS as readonly string[]).includes(op.op)).length;
          keywordOps += ran.filter((op) => op.op === 'keywordSearch').length;
          vectorOps += ran.filter((op) => (VECTOR_OPS as readonly string[]).includes(op.op)).length;
          observationOps += ran.filter((op) => (OBSERVATION_OPS as readonly string[]).includes(op.op)).length;
          reimports += ran.filter((op) => op.op === 'reimport').length;
        }),
        { numRuns: DIFFERENTIAL_RUNS, timeLimitMs: DIFFERENTIAL_RUNS * MS_PER_RUN },
      );
      const left =
        missing.size === 0 ? '' : `; left out, as the store lacks them: ${[...missing].join(', ')}`;
      ctx.log(
        `differential: ${sequences} sequences, ${operations} operations agreed with the in-memory store ` +
          `(${nested} carrying nested objects with the same values under other keys, ${turnOps} on turns, ${keywordOps} keyword searches, ${vectorOps} on vectors, ${observationOps} on observation logs, ${reimports} exports imported again)${left}`,
      );
    },
  ),
];
