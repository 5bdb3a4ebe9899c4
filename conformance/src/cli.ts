import { basename, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { describeError } from './assert.ts';
import { formatTable } from './report.ts';
import { runChecks } from './run.ts';
import { AREA_TITLES, AREAS, type AreaName, type ConformanceInit } from './types.ts';

const USAGE = `usage: engram-conformance <module> [--area <name>[,<name>…]] [--processes <n>]

Runs the engram conformance suite against the store a module creates and prints a
pass/fail/skip table by area. Exits 1 when any check fails, 2 on bad usage.

The module (TypeScript or JavaScript) exports:
  create()           required; returns a fresh MemoryStorage (the suite calls init())
  destroy(store)     optional; defaults to store.close()
  breakConnection(s) optional; lets the errors area break the backend
  withSecret(s)      optional; stores configured with secret s that must fail without showing it
  storedRows(s)      optional; every row the backend holds, as text (checks erasure leaves none)
  worker             optional; module for the cross-process races (defaults to the module itself)
  fresh()            optional; a new, empty store location for the concurrent-init race
  name               optional; shown in the table
  processes          optional; racing OS processes (default 4)
  skip               optional; a reason to skip everything (e.g. no server)

Areas: ${AREAS.join(', ')}`;

interface CliModule {
  create?: ConformanceInit['create'];
  destroy?: ConformanceInit['destroy'];
  breakConnection?: ConformanceInit['breakConnection'];
  withSecret?: ConformanceInit['withSecret'];
  storedRows?: ConformanceInit['storedRows'];
  worker?: ConformanceInit['worker'];
  fresh?: ConformanceInit['fresh'];
  name?: string;
  processes?: number;
  skip?: ConformanceInit['skip'];
}

/** Parses arguments, runs the suite, prints the table; resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseCli>;
  try {
    parsed = parseCli(argv);
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  let areas: AreaName[] | undefined;
  const listed = [...(values.area ?? []), ...(values.areas ?? [])];
  if (listed.length > 0) {
    const names = listed.flatMap((list) => list.split(',')).filter(Boolean);
    const unknown = names.filter((n) => !(AREAS as readonly string[]).includes(n));
    if (unknown.length || names.length === 0) return usage(`unknown area ${unknown.join(', ') || '(none)'}`);
    areas = names as AreaName[];
  }
  let processes: number | undefined;
  if (values.processes !== undefined) {
    processes = Number(values.processes);
    if (!Number.isInteger(processes) || processes < 2)
      return usage('--processes needs an integer of at least 2');
  }
  if (positionals.length > 1) return usage(`unexpected argument ${positionals[1]}`);
  const modulePath = positionals[0];
  if (!modulePath) return usage('missing the module to test');

  const href = pathToFileURL(isAbsolute(modulePath) ? modulePath : resolve(modulePath)).href;
  let mod: CliModule;
  try {
    mod = (await import(href)) as CliModule;
  } catch (error) {
    console.error(`engram-conformance: cannot import ${modulePath}: ${describeError(error)}`);
    return 2;
  }
  if (typeof mod.create !== 'function') return usage(`${modulePath} does not export a create() function`);

  const init: ConformanceInit = {
    name: mod.name ?? basename(modulePath),
    create: mod.create,
    destroy: mod.destroy,
    breakConnection: mod.breakConnection,
    withSecret: mod.withSecret,
    storedRows: mod.storedRows,
    worker: mod.worker ?? href,
    fresh: mod.fresh,
    processes: processes ?? mod.processes,
    skip: mod.skip,
  };
  const results = await runChecks(init, {
    areas,
    onLog: (line) => console.log(`  · ${line}`),
    onResult: (r) => {
      const mark = r.status === 'pass' ? '✓' : r.status === 'fail' ? '✗' : '↓';
      const note = r.status === 'skip' ? ` (skipped: ${r.reason})` : '';
      console.log(`${mark} [${AREA_TITLES[r.area]}] ${r.name}${note}`);
    },
  });
  console.log(`\n${formatTable(init.name, results)}`);
  return results.some((r) => r.status === 'fail') ? 1 : 0;
}

function parseCli(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      area: { type: 'string', multiple: true },
      areas: { type: 'string', multiple: true },
      processes: { type: 'string' },
    },
  });
}

function usage(problem: string): number {
  console.error(`engram-conformance: ${problem}\n\n${USAGE}`);
  return 2;
}

const invokedAs = process.argv[1] ? pathToFileURL(resolve(process.argv[1])).href : '';
if (invokedAs === import.meta.url) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`engram-conformance: ${describeError(error)}`);
      process.exit(2);
    },
  );
}
