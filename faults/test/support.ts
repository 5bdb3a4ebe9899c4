import { describeService, service } from '@engram/conformance';
import { describe } from 'vitest';
import { ADAPTERS, type AdapterService } from '../src/services.ts';

/**
 * One describe block per adapter: run when its service is configured, skipped with the reason in
 * its name when not (unless `ENGRAM_REQUIRE` lists it: then a missing service is a failure).
 * Embedded databases (libSQL) always run.
 */
export function forEachAdapter(scenario: string, body: (adapter: AdapterService) => void): void {
  for (const adapter of ADAPTERS) {
    const name = `${scenario} · ${adapter.name}`;
    if (!adapter.envVar) {
      describe(name, () => body(adapter));
      continue;
    }
    describeService(service(adapter.name, adapter.envVar, adapter.hint ?? ''), name, () => body(adapter));
  }
}

/** Seconds from an env variable, or the default. */
export function seconds(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/** A positive integer from an env variable, or the default. */
export function count(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}
