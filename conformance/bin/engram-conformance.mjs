#!/usr/bin/env node
// Starts the conformance CLI under the tsx loader, so the module under test may be TypeScript,
// with the `source` export condition, so workspace packages resolve to their sources.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const source = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const built = fileURLToPath(new URL('../dist/cli.mjs', import.meta.url));
const entry = existsSync(source) ? source : built;
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

const child = spawn(
  process.execPath,
  ['--import', tsx, '--conditions=source', entry, ...process.argv.slice(2)],
  {
    stdio: 'inherit',
  },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
