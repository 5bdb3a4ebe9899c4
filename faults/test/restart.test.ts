import { describe, expect, it } from 'vitest';
import { type Outage, type RestartResult, runRestart } from '../src/restart.ts';
import { DEDICATED_SERVERS, type NamedServer } from '../src/servers.ts';
import { type AdapterService, runId } from '../src/services.ts';
import type { Target } from '../src/targets.ts';
import { forEachAdapter } from './support.ts';

/** The stores' connect timeout (`connectTimeoutMs`). */
const CONNECT_TIMEOUT_MS = 3_000;
/** Longest any call may take while the backend is down. */
const BOUND_MS = 15_000;
/**
 * How long the backend stays down: over two connect timeouts. A call in flight at the kill may
 * take one to fail (the MongoDB driver retries a read on a new server selection), so only the
 * call after it surely finds the backend still down for a whole connect timeout and fails.
 */
const DOWN_MS = 2 * CONNECT_TIMEOUT_MS + 1_000;
const TOKEN = 'engram-faults-token';

/**
 * Dedicated servers for the adapter (adapters.json's `dedicatedServers`, started in order), the
 * target pointing at the last one, and the outages to inflict: each server killed in turn.
 */
async function setUp(
  adapter: AdapterService,
): Promise<{ target: Target; outages: Outage[]; servers: NamedServer[] }> {
  const servers: NamedServer[] = [];
  for (const name of adapter.dedicatedServers ?? []) {
    const start = DEDICATED_SERVERS[name];
    if (!start) throw new Error(`adapters.json names an unknown dedicated server ${name}`);
    servers.push(await start(servers.at(-1)?.url, TOKEN));
  }
  const last = servers.at(-1);
  if (!last) throw new Error(`${adapter.name} lists no dedicated servers`);
  const target: Target = {
    adapter: adapter.name,
    url: last.url,
    options: {
      prefix: `faults_${runId()}_`, // a table prefix (pg), key prefix (Upstash) or collection prefix (MongoDB)
      schema: 'faults',
      database: 'faults',
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    },
    env: { ENGRAM_UPSTASH_TOKEN: TOKEN },
  };
  const outages = [...servers].reverse().map((s) => ({ name: s.outage, stop: s.stop, start: s.start }));
  return { target, outages, servers };
}

function summary(adapter: string, result: RestartResult): string {
  const parts = result.outages.map((o) => {
    const failed = o.calls.filter((c) => c.code !== undefined);
    const slowest = Math.max(0, ...o.calls.map((c) => c.end - c.start));
    const codes = [...new Set(failed.map((c) => c.code))].join('/');
    return `${o.name}: down ${((o.to - o.from) / 1000).toFixed(1)} s, ${failed.length} of ${o.calls.length} calls failed (${codes}), slowest ${slowest} ms, recovered after ${o.recoveredAfterMs.join('/')} ms`;
  });
  const v = result.verdict;
  const partial =
    result.partial > 0
      ? `; ${result.partial} batch(es) of failed calls found half-saved (no transactions on this server, as documented) and completed by saving them again`
      : '';
  return `restart ${adapter}: ${result.outages.length} restart(s) [${parts.join('; ')}]; ${result.acks} acks, verified ${v.verifiedKeys} keys + ${v.verifiedBatches} batches through the same instances and again through a fresh one${partial}`;
}

forEachAdapter('server restart', (adapter) => {
  if (!adapter.dedicatedServers) {
    describe(adapter.name, () => {
      it.skip(`does not apply: ${adapter.noDedicatedServer ?? 'adapters.json lists no dedicated server for it'}`, () =>
        undefined);
    });
    return;
  }
  it('fails calls during the outage with CONNECTION/STORAGE within the bound, recovers with the same store instances, loses nothing acknowledged', async () => {
    const { target, outages, servers } = await setUp(adapter);
    try {
      const result = await runRestart({ target, outages, downMs: DOWN_MS });
      console.log(summary(adapter.name, result));
      for (const call of result.calls) {
        expect([undefined, 'CONNECTION', 'STORAGE'], call.message).toContain(call.code);
        expect(call.end - call.start, `a call took ${call.end - call.start} ms`).toBeLessThanOrEqual(
          BOUND_MS,
        );
      }
      for (const outage of result.outages) {
        expect(
          outage.calls.filter((c) => c.code !== undefined).length,
          `no call failed while ${outage.name}`,
        ).toBeGreaterThan(0);
      }
      expect(result.verdict.problems).toEqual([]);
      expect(result.freshVerdict.problems).toEqual([]);
      expect(result.verdict.verifiedKeys + result.verdict.verifiedBatches).toBe(result.acks);
      expect(result.acks).toBeGreaterThan(0);
    } finally {
      for (const server of servers) await server.destroy();
    }
  });
});
