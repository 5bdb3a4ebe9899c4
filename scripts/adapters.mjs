// Reads adapters.json (the one list of storage adapters) for shell scripts, CI, faults and bench.
//
//   node scripts/adapters.mjs services   service script names, in start order, one per line
//   node scripts/adapters.mjs missing    `name<TAB>envVar<TAB>reason` of adapters without a service script
//   node scripts/adapters.mjs ci         JSON array of the adapters with a server (CI's matrix)
//
// Imported (types in adapters.d.mts): `adapters`, `serviceHint` and `unavailable`.
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Every adapter of adapters.json, in its order. */
export const adapters = JSON.parse(
  readFileSync(new URL('../adapters.json', import.meta.url), 'utf8'),
).adapters;

/** How to get an adapter's service: the script that starts it, or why none can run here. */
export function serviceHint(adapter) {
  if (adapter.noServiceScript) return adapter.noServiceScript;
  // services.sh starts the adapter's scripts in order (Upstash's bridge needs Redis first).
  return adapter.serviceScripts?.length ? 'start it with `eval "$(bash scripts/services.sh)"`' : undefined;
}

/** Why an adapter cannot run in `env` (its service variable is unset, and how to set it), or null. */
export function unavailable(adapter, env = process.env) {
  if (!adapter.envVar || env[adapter.envVar]) return null;
  return `${adapter.envVar} is not set; ${serviceHint(adapter) ?? 'no way to start its service is listed'}`;
}

function main(command) {
  if (command === 'services') {
    const seen = new Set(adapters.flatMap((a) => a.serviceScripts ?? []));
    console.log([...seen].join('\n'));
  } else if (command === 'missing') {
    for (const a of adapters)
      if (a.noServiceScript) console.log(`${a.name}\t${a.envVar}\t${a.noServiceScript}`);
  } else if (command === 'ci') {
    console.log(JSON.stringify(adapters.filter((a) => !a.embedded).map((a) => a.name)));
  } else {
    console.error('usage: node scripts/adapters.mjs services|missing|ci');
    process.exit(2);
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url))
  main(process.argv[2]);
