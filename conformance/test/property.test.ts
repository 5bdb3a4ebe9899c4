import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConformanceError } from '../src/assert.ts';
import { assertProperty } from '../src/property.ts';

const failure = async (run: Promise<void>): Promise<ConformanceError> => {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConformanceError);
  return error as ConformanceError;
};

describe('assertProperty', () => {
  it('passes a property that holds, running it numRuns times', async () => {
    let runs = 0;
    await assertProperty(
      fc.asyncProperty(fc.nat(), async () => {
        runs++;
      }),
      { numRuns: 30 },
    );
    expect(runs).toBe(30);
  });

  it("reports the shrunk counterexample with the property's own message and how to replay it", async () => {
    const error = await failure(
      assertProperty(
        fc.asyncProperty(fc.array(fc.nat(100)), async (values) => {
          if (values.reduce((a, b) => a + b, 0) >= 10) throw new Error(`sum of ${JSON.stringify(values)}`);
        }),
        { numRuns: 100, seed: 7 },
      ),
    );
    expect(error.message).toMatch(/^sum of \[10\]\n/);
    expect(error.message).toMatch(/shrunk \d+ times; replay with \{ seed: 7, path: "[\d:]+" \}/);
    expect(error.message).not.toContain('shrink stopped');
  });

  it('stops a slow shrink after shrinkLimitMs and reports where it got, replayable', async () => {
    // Every run takes 5 ms and every one fails: shrinking 200 values to 0 takes thousands of runs.
    const property = fc.asyncProperty(
      fc.array(fc.nat(), { minLength: 200, maxLength: 200 }),
      async (values) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        throw new Error(`${values.filter((v) => v !== 0).length} values left`);
      },
    );
    const started = performance.now();
    const error = await failure(assertProperty(property, { numRuns: 10, shrinkLimitMs: 500 }));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(error.message).toMatch(
      /failed after 1 runs, shrunk \d+ times, shrink stopped after 0.5 s; replay/,
    );
    const [, seed, path] = error.message.match(/seed: (-?\d+), path: "([\d:]+)"/) ?? [];
    const replayed = await fc.check(property, { seed: Number(seed), path, endOnFailure: true });
    expect(replayed.failed).toBe(true);
    expect(String(replayed.errorInstance)).toContain(error.message.split('\n')[0]);
  });
});
