// Starts one of the package's CLIs under the tsx loader, so a store module may be TypeScript. Run
// from its sources (the engram workspace), it also sets the `source` export condition so
// workspace packages resolve to their sources; published packages ship only built files.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Runs `src/<name>.ts` (in the workspace) or `dist/<name>.mjs` with this process's arguments. */
export function launch(name) {
  const source = fileURLToPath(new URL(`../src/${name}.ts`, import.meta.url));
  const built = fileURLToPath(new URL(`../dist/${name}.mjs`, import.meta.url));
  const fromSource = existsSync(source);
  const entry = fromSource ? source : built;
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

  const flags = fromSource ? ['--import', tsx, '--conditions=source'] : ['--import', tsx];
  const child = spawn(process.execPath, [...flags, entry, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
