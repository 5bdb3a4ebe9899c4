import { describe, it } from 'vitest';
import { ADAPTERS, type AdapterService, missing, required } from '../src/services.ts';

/**
 * One describe block per adapter: run when its service is configured, skipped with the reason in
 * its name when not (unless `ENGRAM_REQUIRE` lists it: then a missing service is a failure).
 */
export function forEachAdapter(scenario: string, body: (adapter: AdapterService) => void): void {
  for (const adapter of ADAPTERS) {
    const reason = missing(adapter);
    const name = `${scenario} · ${adapter.name}`;
    if (!reason) {
      describe(name, () => body(adapter));
    } else if (required(adapter.name)) {
      describe(name, () => {
        it(`has its service (ENGRAM_REQUIRE lists ${adapter.name})`, () => {
          throw new Error(`ENGRAM_REQUIRE lists ${adapter.name} but ${reason}`);
        });
      });
    } else {
      describe.skip(`${name} (skipped: ${reason})`, () => body(adapter));
    }
  }
}

/** Seconds from an env variable, or the default. */
export function seconds(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}
