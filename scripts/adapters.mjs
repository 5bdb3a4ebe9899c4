// Reads adapters.json (the one list of storage adapters) for shell scripts and CI:
//
//   node scripts/adapters.mjs services   service script names, in start order, one per line
//   node scripts/adapters.mjs missing    `name<TAB>envVar<TAB>reason` of adapters without a service script
//   node scripts/adapters.mjs ci         JSON array of the adapters with a server (CI's matrix)
import { readFileSync } from 'node:fs';

const { adapters } = JSON.parse(readFileSync(new URL('../adapters.json', import.meta.url), 'utf8'));
const command = process.argv[2];
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
