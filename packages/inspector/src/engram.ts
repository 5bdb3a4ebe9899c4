import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { isMemoryError, type OnConflict } from '@engram/core';
import { visibleControls } from './cli.ts';
import { type OpenedStore, openStore, type StoreSettings } from './open.ts';
import { copyStore } from './transfer/copy.ts';
import { writeDump } from './transfer/export.ts';
import { readDump } from './transfer/import.ts';
import { DEFAULT_EVERY, Progress, type ProgressOutput } from './transfer/progress.ts';

const USAGE = `usage:
  engram export --store <url> [--resource <id>] [store options] > dump.jsonl
  engram import --store <url> [--on-conflict skip|replace|fail] [store options] < dump.jsonl
  engram copy --from <url> --to <url> [--on-conflict skip|replace|fail]
              [--from-<store option> …] [--to-<store option> …]

Moves an engram memory between stores as JSON Lines, one versioned record per line. export
writes the whole store (or one resource) to stdout; import reads a dump from stdin line by line;
copy pipes one store into another in process. With the default --on-conflict skip, running
import or copy again after it stopped part-way completes it without duplicates. Progress and
the final counts go to stderr: one updating line on a terminal, else a line every
--progress-every records (default ${DEFAULT_EVERY}).

<url> is a store URL or module, as for engram-inspect:
  file:./memory.db                 libSQL (@engram/libsql)
  postgres://user@host/db          PostgreSQL (@engram/pg)
  mongodb://host/db                MongoDB (@engram/mongodb)
  https://…upstash.io              Upstash (@engram/upstash); token in ENGRAM_UPSTASH_TOKEN
                                   or UPSTASH_REDIS_REST_TOKEN
  oracle://user@host/service       Oracle (@engram/oracle)

store options:
  --prefix <p>                     key, table or collection prefix
  --pg-schema <name>               PostgreSQL schema (default public)
  --db <name>                      MongoDB database (default: the URL's path, else engram)

Vectors move when the source reads them back and the target has their embedding space (or
none); otherwise run memory.reindex() after an import. A whole-store export finds resources
through their threads, then those without a thread (every adapter of this repository lists
resources; with a store that does not, export such a resource with --resource <id>). A record
the target cannot hold (PostgreSQL keeps no NUL character inside JSON) stops the run naming it;
the records before it are written.`;

const STORE_OPTIONS = ['prefix', 'pg-schema', 'db'] as const;

const OPTIONS = {
  store: { type: 'string' },
  resource: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'on-conflict': { type: 'string' },
  'progress-every': { type: 'string' },
  ...Object.fromEntries(
    STORE_OPTIONS.flatMap((o) => [o, `from-${o}`, `to-${o}`]).map((o) => [o, { type: 'string' }]),
  ),
} as const;

type Values = Record<string, string | boolean | undefined>;

class UsageError extends Error {}

/** Streams and environment the CLI runs with (the process's by default). */
export interface EngramIo {
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable;
  stderr: ProgressOutput;
  env: NodeJS.ProcessEnv;
}

/** Runs `engram`; resolves to the exit code (0 ok, 1 failure, 2 bad usage). */
export async function main(argv: readonly string[], io: Partial<EngramIo> = {}): Promise<number> {
  const { stdin = process.stdin, stdout = process.stdout, stderr = process.stderr, env = process.env } = io;
  if (argv.includes('--help') || argv.includes('-h')) {
    stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [command, ...rest] = argv;
  let values: Values;
  try {
    if (command !== 'export' && command !== 'import' && command !== 'copy') {
      throw new UsageError(command === undefined ? 'no command' : `unknown command ${command}`);
    }
    values = parseArgs({ args: rest, options: OPTIONS, allowPositionals: false }).values as Values;
    checkFlags(command, values, Boolean(stdin.isTTY));
  } catch (error) {
    const problem = error instanceof Error ? error.message : String(error);
    stderr.write(`engram: ${problem}\n\n${USAGE}\n`);
    return 2;
  }
  const label = `engram ${command}`;
  const every = values['progress-every'] === undefined ? DEFAULT_EVERY : Number(values['progress-every']);
  const progress = new Progress(stderr, label, every);
  const onConflict = (values['on-conflict'] ?? 'skip') as OnConflict;
  const opened: OpenedStore[] = [];
  const open = async (spec: string, side: '' | 'from-' | 'to-') => {
    const store = await openStore(spec, settings(values, side, env));
    opened.push(store);
    return store.memory;
  };
  try {
    if (command === 'export') {
      const memory = await open(values.store as string, '');
      await writeDump(memory, stdout, progress, values.resource as string | undefined);
      progress.finish();
    } else if (command === 'import') {
      const memory = await open(values.store as string, '');
      progress.finish(await readDump(memory, stdin, onConflict, progress));
    } else {
      const from = await open(values.from as string, 'from-');
      const to = await open(values.to as string, 'to-');
      progress.finish(await copyStore(from, to, onConflict, progress));
    }
    return 0;
  } catch (error) {
    progress.abort();
    stderr.write(`${label}: ${describe(error)}\n`);
    return 1;
  } finally {
    for (const store of opened) await store.close().catch(() => undefined);
  }
}

function checkFlags(command: 'export' | 'import' | 'copy', values: Values, stdinIsTTY: boolean): void {
  const allowed = new Set<string>(['progress-every']);
  const need = (flag: string) => {
    allowed.add(flag);
    if (typeof values[flag] !== 'string') throw new UsageError(`${command} needs --${flag} <url>`);
  };
  if (command === 'copy') {
    need('from');
    need('to');
    for (const o of STORE_OPTIONS) allowed.add(`from-${o}`).add(`to-${o}`);
  } else {
    need('store');
    for (const o of STORE_OPTIONS) allowed.add(o);
  }
  if (command === 'export') allowed.add('resource');
  else allowed.add('on-conflict');
  for (const flag of Object.keys(values)) {
    if (!allowed.has(flag)) throw new UsageError(`${command} does not take --${flag}`);
  }
  const conflict = values['on-conflict'];
  if (conflict !== undefined && conflict !== 'skip' && conflict !== 'replace' && conflict !== 'fail') {
    throw new UsageError('--on-conflict is skip, replace or fail');
  }
  const every = values['progress-every'];
  if (every !== undefined && !(Number.isSafeInteger(Number(every)) && Number(every) >= 1)) {
    throw new UsageError('--progress-every needs an integer of at least 1');
  }
  if (command === 'import' && stdinIsTTY) {
    throw new UsageError('import reads the dump from stdin: engram import --store <url> < dump.jsonl');
  }
}

/** The store options given for one side (`--prefix`, or `--from-prefix` / `--to-prefix` of copy). */
function settings(values: Values, side: '' | 'from-' | 'to-', env: NodeJS.ProcessEnv): StoreSettings {
  const value = (o: (typeof STORE_OPTIONS)[number]) => values[`${side}${o}`] as string | undefined;
  const out: StoreSettings = { env };
  const prefix = value('prefix');
  const pgSchema = value('pg-schema');
  const dbName = value('db');
  if (prefix !== undefined) out.prefix = prefix;
  if (pgSchema !== undefined) out.pgSchema = pgSchema;
  if (dbName !== undefined) out.dbName = dbName;
  return out;
}

function describe(error: unknown): string {
  if (isMemoryError(error)) return visibleControls(`${error.code}: ${error.message}`);
  return visibleControls(error instanceof Error ? error.message : String(error));
}

const invokedAs = process.argv[1] ? pathToFileURL(resolve(process.argv[1])).href : '';
if (invokedAs === import.meta.url) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`engram: ${describe(error)}\n`);
      process.exitCode = 1;
    },
  );
}
