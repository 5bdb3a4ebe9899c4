import fc from 'fast-check';
import { defineArea } from '../define.ts';
import { compare } from '../differential/executor.ts';
import { opArbitrary, SETUP_OPS, setupArbitrary } from '../differential/ops.ts';
import { assertProperty } from '../property.ts';

const check = defineArea('differential');

/** Property runs per check, and the longest operation sequence. Modest: adapters run this on real databases. */
export const DIFFERENTIAL_RUNS = 25;
export const MAX_OPS = 20;

/** Random operation sequences give the same results as the in-memory reference store. */
export const differentialChecks = [
  check(
    `random operation sequences match the in-memory reference (${DIFFERENTIAL_RUNS} runs × ≤${MAX_OPS} ops)`,
    async (ctx) => {
      const store = await ctx.store();
      const atomic =
        store.supportsAtomicWorkingMemoryMerge && typeof store.updateWorkingMemoryAtomically === 'function';
      await assertProperty(
        fc.asyncProperty(
          setupArbitrary,
          fc.array(opArbitrary, { minLength: 1, maxLength: MAX_OPS - SETUP_OPS }),
          (setup, ops) => compare(store, [...setup, ...ops], atomic),
        ),
        DIFFERENTIAL_RUNS,
      );
    },
  ),
];
